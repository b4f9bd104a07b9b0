"""The applications: the ``fadesim`` command (``cli``), the analysis of a trainer's logged run (``analysis``) and the
property suite any advantage is checked against (``check``). They use the core and the lab; nothing imports them
but each other (and the LLM bridge, ``fadesim.bridge``, is an application beside them)."""
