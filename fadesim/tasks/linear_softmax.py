"""Linear-softmax task: logits(n, a) = phi_n^T W psi_{n,a} + b_{n,a}, with one W shared by every prompt.

Updates on one prompt move the others through W, and W's geometry (Frobenius norm, effective rank,
condition number) is observable. The fixed offsets b (the "pretrained prior") are chosen so the initial
policy is exactly a bandit's with the requested difficulty distribution; only W is trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.bandit import Bandit, make_bandit
from fadesim.tasks.pass_rates import DifficultyDistribution


@dataclass(frozen=True, eq=False)
class LinearSoftmax(Bandit):
    """Bandit data plus features; parameters {'W': (D, D)}."""

    prompt_features: np.ndarray = None  # (N, D)
    answer_features: np.ndarray = None  # (N, K, D)
    offsets: np.ndarray = None  # (N, K)
    W0: np.ndarray = None  # (D, D)
    name: str = "linear_softmax"

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        return {"W": xp.asarray(self.W0, dtype=dtype)}

    def logits(self, params: dict[str, Any], xp: Any) -> Any:
        W = params["W"]
        phi = xp.asarray(self.prompt_features, dtype=W.dtype)
        psi = xp.asarray(self.answer_features, dtype=W.dtype)
        return xp.einsum("nd,de,nke->nk", phi, W, psi) + xp.asarray(self.offsets, dtype=W.dtype)

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        dlogits = self.logit_gradient(params, actions, weights, xp)
        W = params["W"]
        phi = xp.asarray(self.prompt_features, dtype=W.dtype)
        psi = xp.asarray(self.answer_features, dtype=W.dtype)
        return {"W": xp.einsum("nd,nk,nke->de", phi, dlogits, psi)}

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        s = xp.linalg.svd(params["W"], compute_uv=False)
        return {
            "weight_norm": xp.sqrt(xp.sum(params["W"] ** 2)),
            "effective_rank": sp.effective_rank(s, xp),
            "condition_number": s[0] / xp.maximum(s[-1], 1e-30),
        }


def make_linear_softmax(
    n_prompts: int = 128,
    n_answers: int = 16,
    n_correct: int = 3,
    difficulty: DifficultyDistribution | str = "mixed",
    *,
    width: int = 16,
    init_scale: float = 1.0,
    spread: float | None = None,
    prior: str = "normal",
    zipf_exponent: float = 1.0,
    seed: int = 0,
) -> LinearSoftmax:
    """A linear-softmax task of feature width ``width``; the initial policy equals ``make_bandit``'s (same
    ``prior``, ``zipf_exponent`` and ``spread``)."""
    D = sp.check_positive_int(width, "width")
    base = make_bandit(n_prompts, n_answers, n_correct, difficulty, spread=spread, prior=prior,
                       zipf_exponent=zipf_exponent, seed=seed)
    rng = np.random.default_rng([seed, 1])
    N, K = base.logits0.shape
    phi = rng.standard_normal((N, D)) / np.sqrt(D)
    psi = rng.standard_normal((N, K, D)) / np.sqrt(D)
    W0 = init_scale * rng.standard_normal((D, D)) / np.sqrt(D)
    offsets = base.logits0 - np.einsum("nd,de,nke->nk", phi, W0, psi)
    return LinearSoftmax(logits0=base.logits0, correct=base.correct, prompt_features=phi,
                         answer_features=psi, offsets=offsets, W0=W0)
