"""The published numbers fadesim ships, as package data (read through ``importlib.resources``, so an installed wheel
has them as an editable checkout does). Files only, no code above this one accessor: every layer may read them.

- ``pass_at_k_codex_apps.csv``: Codex-12B's APPS pass@k (arXiv 2107.03374, Table 3), the llm regime's calibration;
- ``literature/curves.csv`` and ``literature/methods.csv``: published RL outcomes (arXiv 2506.01347 Table 1,
  2504.13837 Table 2) and their fadesim advantages, the literature protocol's settings; the math regime is
  calibrated to the MATH base rows; ``literature/training.csv``: each setting's published batch (prompts a step x
  rollouts a prompt), what the noise-scale clock reads.

Each folder's README.md gives the sources.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CODEX_APPS = ("pass_at_k_codex_apps.csv",)
LITERATURE_CURVES = ("literature", "curves.csv")
LITERATURE_METHODS = ("literature", "methods.csv")
LITERATURE_TRAINING = ("literature", "training.csv")


def data_file(*parts: str) -> Path:
    """The path of a shipped data file, e.g. ``data_file(*LITERATURE_CURVES)``; a FileNotFoundError naming it where
    the installation lacks it."""
    path = Path(str(resources.files(__name__).joinpath(*parts)))
    if not path.is_file():
        raise FileNotFoundError(f"fadesim's data file {'/'.join(parts)} is missing from {path.parent} (a broken "
                                "installation: reinstall fadesim)")
    return path
