"""Bandit "reasoning" task: N prompts, each a tabular softmax over K answers, C of them correct.

The initial logits are set so that each prompt's pass rate equals a draw from the difficulty
distribution, and the correct mass is spread unevenly over the C correct answers (a dominant
solution and rarer ones), so that diversity can be gained or lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.difficulty import DifficultyDistribution, _rng, as_distribution

#: pass rates are kept inside [P_MIN, 1 - P_MIN] so that initial logits are finite
P_MIN = 1e-3


def spread_logits(pass_rates: np.ndarray, correct: np.ndarray, rng: np.random.Generator, spread: float) -> np.ndarray:
    """Logits (N, K) whose softmax puts mass p_n on the correct answers of prompt n.

    Within the correct and within the incorrect answers, mass is split by softmax(spread * z),
    z ~ N(0, 1): spread = 0 is even, larger spread makes some solutions rare.
    """
    p = np.clip(pass_rates, P_MIN, 1.0 - P_MIN)[:, None]
    z = spread * rng.standard_normal(correct.shape)

    def share(sel: np.ndarray) -> np.ndarray:
        e = np.where(sel, np.exp(z - z.max(axis=1, keepdims=True)), 0.0)
        return e / e.sum(axis=1, keepdims=True)

    probs = p * share(correct) + (1.0 - p) * share(~correct)
    logits = np.log(probs)
    return logits - logits.mean(axis=1, keepdims=True)


@dataclass(frozen=True, eq=False)
class Bandit:
    """Task data (numpy); the simulator's parameters are the logits themselves: {'theta': (N, K)}."""

    logits0: np.ndarray  # (N, K) initial logits
    correct: np.ndarray  # (N, K) bool
    name: str = "bandit"

    @property
    def n_prompts(self) -> int:
        return self.logits0.shape[0]

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        return {"theta": xp.asarray(self.logits0, dtype=dtype)}

    def uniform_shape(self, G: int) -> tuple[int, ...]:
        return (self.n_prompts, G)

    def logits(self, params: dict[str, Any], xp: Any) -> Any:
        return params["theta"]

    # --- rollouts ---
    def rollout(self, params: dict[str, Any], u: Any, xp: Any) -> dict[str, Any]:
        logp = sp.log_softmax(self.logits(params, xp), xp)
        actions = sp.sample_categorical(logp[:, None, :], u, xp)
        return {"actions": actions, "logprobs": sp.gather_last(logp, actions, xp),
                "rewards": sp.gather_last(xp.asarray(self.correct), actions, xp).astype(logp.dtype)}

    def logprob(self, params: dict[str, Any], actions: Any, xp: Any) -> Any:
        return sp.gather_last(sp.log_softmax(self.logits(params, xp), xp), actions, xp)

    def logit_gradient(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> Any:
        """d/dlogits of (1/N) sum_n (1/G) sum_i w_ni log pi(a_ni | n): (N, K)."""
        logp = sp.log_softmax(self.logits(params, xp), xp)
        N, G = actions.shape
        counts = xp.sum(weights[..., None] * sp.one_hot(actions, logp.shape[-1], logp.dtype, xp), axis=1)
        return (counts - xp.sum(weights, axis=1, keepdims=True) * xp.exp(logp)) / (G * N)

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        return {"theta": self.logit_gradient(params, actions, weights, xp)}

    # --- exact quantities ---
    def exact(self, params: dict[str, Any], xp: Any, floor: float = 0.01) -> dict[str, Any]:
        logits = self.logits(params, xp)
        logp = sp.log_softmax(logits, xp)
        probs = xp.exp(logp)
        correct = xp.asarray(self.correct)
        centred = logits - xp.mean(logits, axis=-1, keepdims=True)
        return {
            "pass_rate": xp.sum(xp.where(correct, probs, 0.0), axis=-1),
            "entropy": sp.entropy(logp, xp),
            "distinct_correct": xp.sum((correct & (probs > floor)).astype(probs.dtype), axis=-1),
            "correct_entropy": sp.restricted_entropy(probs, correct, xp),
            "logit_norm": xp.sqrt(xp.sum(centred * centred, axis=-1)),
        }

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        return {}


def make_bandit(
    n_prompts: int = 128,
    n_answers: int = 16,
    n_correct: int = 3,
    difficulty: DifficultyDistribution | str = "mixed",
    *,
    spread: float = 1.0,
    seed: int = 0,
) -> Bandit:
    """A bandit task; ``difficulty`` gives the initial pass-rate distribution."""
    N = sp.check_positive_int(n_prompts, "n_prompts")
    K = sp.check_positive_int(n_answers, "n_answers (K)")
    C = sp.check_positive_int(n_correct, "n_correct (C)")
    if C >= K:
        raise ValueError(f"n_correct (C = {C}) must be smaller than n_answers (K = {K}): some answers must be wrong")
    if spread < 0:
        raise ValueError(f"spread must be >= 0; got {spread}")
    rng = _rng(seed)
    p = as_distribution(difficulty).sample(rng, N)
    correct = np.zeros((N, K), dtype=bool)
    for n in range(N):
        correct[n, rng.choice(K, size=C, replace=False)] = True
    return Bandit(logits0=spread_logits(p, correct, rng, spread), correct=correct)
