"""Task regimes: named presets of answer space, prior and difficulty, so every verdict can name its regime.

- ``toy``: 32 answers, 3 correct, p ~ Beta(0.8, 0.8), lognormal shares (the original testbed; pass@256
  saturates near 1 for every method, so no accuracy-diversity trade-off can show).
- ``llm``: 2048 answers, 32 correct, a Zipf(1) prior inside the correct and inside the wrong sets (a few
  frequent answers, a long tail), and the difficulty distribution fitted by ``calibrate`` to Codex-12B's
  published APPS introductory pass@k (arXiv 2107.03374, Table 3: pass@1 = 0.0414, pass@5 = 0.0965,
  pass@1000 = 0.2502), sampled by stratified quantiles so the task's initial pass@k reproduces the curve.
  The chain task (sequences instead of answers) uses T = 4 tokens from V = 8 (4096 sequences), 3 correct.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fadesim.tasks.calibrate import Calibration, calibrate, load_pass_at_k
from fadesim.tasks.pass_rates import Stratified

REGIMES = ("toy", "llm")


@lru_cache(maxsize=1)
def llm_calibration() -> Calibration:
    """The llm regime's fit: loguniform + unsolved mass to the APPS introductory curve (exact at its 3 k)."""
    return calibrate(load_pass_at_k(split="introductory"), family="loguniform+unsolved")


def regime_kwargs(regime: str, task: str) -> dict[str, Any]:
    """The keyword arguments a regime gives ``make_task(task, ...)``."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")
    if task == "neural":
        raise ValueError("the neural task has no regime presets: its difficulty comes from its network and rule "
                         "(make_task('neural', ...) without regime)")
    if regime == "toy":
        answers = {"length": 3, "vocab": 4} if task == "chain" else {"n_answers": 32}
        return {**answers, "n_correct": 3, "difficulty": "mixed", "prior": "normal"}
    answers = {"length": 4, "vocab": 8, "n_correct": 3} if task == "chain" else {"n_answers": 2048, "n_correct": 32}
    return {**answers, "difficulty": Stratified(llm_calibration().distribution), "prior": "zipf",
            "zipf_exponent": 1.0}
