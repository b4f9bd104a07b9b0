"""The advantage library: one pure, array-API function per advantage, registered by name."""

from fadesim.advantages import difficulty, fade, group, likelihood, sign  # noqa: F401  (registers)
from fadesim.advantages.registry import Advantage, entries, get, info, names, register, unregister

__all__ = ["Advantage", "entries", "get", "info", "names", "register", "unregister"]
