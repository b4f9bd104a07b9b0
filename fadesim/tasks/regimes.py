"""Task regimes: named presets of answer space, prior and difficulty, so every verdict can name its regime.

- ``toy``: 32 answers, 3 correct, p ~ Beta(0.8, 0.8), lognormal shares (the original testbed; pass@256
  saturates near 1 for every method, so no accuracy-diversity trade-off can show).
- ``llm``: 2048 answers, 32 correct, a Zipf(1) prior inside the correct and inside the wrong sets (a few
  frequent answers, a long tail), and the difficulty distribution fitted by ``calibrate`` to Codex-12B's
  published APPS introductory pass@k (arXiv 2107.03374, Table 3: pass@1 = 0.0414, pass@5 = 0.0965,
  pass@1000 = 0.2502), sampled by stratified quantiles so the task's initial pass@k reproduces the curve.
  The chain task (sequences instead of answers) uses T = 4 tokens from V = 8 (4096 sequences), 3 correct.
- ``math``: the family the literature protocol chose on published runs on 2026-12-05
  (``fadesim.lab.literature.CHOSEN_2026_12_05``; the protocol's default has since added the skill's reach, its
  misfire and the noise-scale clock, which this regime and the experiments committed with it do not have; measured in
  ``paper_figures/README.md``, "The stratified split": 85.1% of published signs on the shipped settings, 82.9% on
  two settings never designed on), its difficulty calibrated to Qwen2.5-Math-7B's base pass@k on MATH (arXiv
  2506.01347, Table 1: pass@1 0.632 ... pass@256 0.969; a Beta fit to the shipped ``base`` rows,
  ``fadesim/data/literature/curves.csv``). Its task is ``sharpen``: 256 prompts of 64 answers, 4 correct, a
  Zipf(1) prior, a shared sharpening (c = 1) and a shared skill (d = 0.3), one prompt drawn a step, and every
  metric measured on 128 prompts held out of training (stratified by initial pass rate, so they keep the
  calibrated base curve). This is the regime whose pass@k can cross below the base, as published runs' does;
  its ``bandit``, ``linear_softmax`` (width 16) and ``chain`` (T = 2, V = 8: the same 64 outcomes, as sequences)
  are controls with the same prompts, answer space and difficulty, full batch, no prompt held out, whose prompts
  share nothing (bandit, chain) or only a feature map (linear_softmax). The sizes are the calibrated design's: an experiment's own
  ``n_prompts`` etc. do not apply in this regime.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fadesim.data import LITERATURE_CURVES, data_file
from fadesim.tasks.calibrate import Calibration, calibrate, load_pass_at_k
from fadesim.tasks.pass_rates import Stratified

REGIMES = ("toy", "llm", "math")

#: the math regime's published base curve: the shipped literature setting it is calibrated to
MATH_SETTING = "Qwen2.5-Math-7B / MATH"
#: the math regime's sizes and its sharpen design (``fadesim.lab.literature.CHOSEN_2026_12_05``, checked equal in the
#: tests)
MATH_SIZES: dict[str, Any] = {"n_prompts": 256, "n_answers": 64, "n_correct": 4, "prior": "zipf", "zipf_exponent": 1.0}
MATH_SHARPEN: dict[str, Any] = {"sharpen_scale": 1.0, "skill_scale": 0.3, "prompts_per_step": 1, "eval_prompts": 128,
                                "eval_split": "stratified"}


@lru_cache(maxsize=1)
def llm_calibration() -> Calibration:
    """The llm regime's fit: loguniform + unsolved mass to the APPS introductory curve (exact at its 3 k)."""
    return calibrate(load_pass_at_k(split="introductory"), family="loguniform+unsolved")


@lru_cache(maxsize=1)
def math_calibration() -> Calibration:
    """The math regime's fit: a Beta to the shipped MATH base curve (``MATH_SETTING``'s ``base`` rows), as the
    literature protocol calibrates it (``fadesim.lab.literature.calibrated_task``)."""
    curve = load_pass_at_k(data_file(*LITERATURE_CURVES), setting=MATH_SETTING, method="base")
    return calibrate({k: min(max(v, 1e-6), 1 - 1e-6) for k, v in curve.items()}, family="beta")


def regime_kwargs(regime: str, task: str) -> dict[str, Any]:
    """The keyword arguments a regime gives ``make_task(task, ...)``."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")
    if task == "neural":
        raise ValueError("the neural task has no regime presets: its difficulty comes from its network and rule "
                         "(make_task('neural', ...) without regime)")
    if regime == "math":
        difficulty = Stratified(math_calibration().distribution)
        if task == "chain":
            return {"length": 2, "vocab": 8, "n_prompts": MATH_SIZES["n_prompts"],
                    "n_correct": MATH_SIZES["n_correct"], "difficulty": difficulty}
        kw = {**MATH_SIZES, "difficulty": difficulty}
        if task == "linear_softmax":
            kw["width"] = 16
        if task == "sharpen":
            kw.update(MATH_SHARPEN)
        return kw
    if regime == "toy":
        answers = {"length": 3, "vocab": 4} if task == "chain" else {"n_answers": 32}
        return {**answers, "n_correct": 3, "difficulty": "mixed", "prior": "normal"}
    answers = {"length": 4, "vocab": 8, "n_correct": 3} if task == "chain" else {"n_answers": 2048, "n_correct": 32}
    return {**answers, "difficulty": Stratified(llm_calibration().distribution), "prior": "zipf",
            "zipf_exponent": 1.0}
