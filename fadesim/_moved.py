"""Deprecation aliases for modules renamed because a function of the same name shadowed them.

``fadesim.decompose`` is the public function ``decompose``, so ``import fadesim.decompose as m`` bound the
function, not the module (likewise ``fadesim.theory.drift`` and ``fadesim.theory.profile``); and two modules
were called ``difficulty.py`` with different meanings. The modules now have their own names (``MOVED``).

The old paths still import (``from fadesim.decompose import MassDecomposition``), with a ``DeprecationWarning``
naming the new path. They are placed in ``sys.modules`` rather than shipped as files: importing a file at the old
path would bind the module over the public function of the same name on the parent package
(``fadesim.theory.profile`` would stop being callable).
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings

#: old module path -> new module path
MOVED = {
    "fadesim.decompose": "fadesim.decomposition",
    "fadesim.theory.drift": "fadesim.theory.second_order",
    "fadesim.theory.profile": "fadesim.theory.mass_profile",
    "fadesim.tasks.difficulty": "fadesim.tasks.pass_rates",
}


def _alias(old: str, new: str) -> types.ModuleType:
    module = types.ModuleType(old, f"Deprecated alias of {new}.")

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        warnings.warn(f"module {old} was renamed {new}; import {name} from {new} (the old path will be removed)",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new), name)

    module.__getattr__ = __getattr__  # PEP 562: called for every name the alias does not hold
    return module


def install() -> None:
    """Put the aliases in ``sys.modules`` (idempotent); ``fadesim/__init__`` calls it."""
    for old, new in MOVED.items():
        sys.modules.setdefault(old, _alias(old, new))
