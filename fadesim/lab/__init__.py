"""The lab: what the experiments share, above the core (advantages, decomposition, theory, tasks, sim), which never
imports it, and below the applications (``fadesim.apps``, ``fadesim.bridge``, ``experiments/``).

- ``settings``: an experiment's Settings from the command line (``parse_settings``) and the shared checks;
- ``units``: resumable unit loops, locally or on Ray (``run_units``, ``Executor``);
- ``results``: atomic, resumable storage (``ResultStore``, ``write_atomic``);
- ``stats``: 95% intervals, matched-pass@1 readings, tuning and held-out seeds, verdicts;
- ``regime_tasks``: each regime's task at an experiment's sizes;
- ``plots``: one function per figure kind;
- ``literature``: the literature protocol (published curves, the protocol, its engines, scoring, comparison,
  prediction for a user's model).
"""
