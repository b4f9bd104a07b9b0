"""Sympy derivations of every advantage's gradient masses (importable; each module also runs as a script)."""
