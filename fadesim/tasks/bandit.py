"""Bandit "reasoning" task: N prompts, each a tabular softmax over K answers, C of them correct.

The initial logits are set so that each prompt's pass rate equals a draw from the difficulty
distribution, and the correct mass is spread unevenly over the C correct answers (a dominant
solution and rarer ones), so that diversity can be gained or lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.pass_rates import DifficultyDistribution, _rng, as_distribution

#: pass rates are kept inside [P_MIN, 1 - P_MIN] so that initial logits are finite (the "normal" prior;
#: the "zipf" prior, built for pass rates down to 1e-4, uses P_MIN_ZIPF)
P_MIN = 1e-3
P_MIN_ZIPF = 1e-6

#: how an initial pass rate is split over the answers inside the correct and inside the wrong set
PRIORS = ("normal", "zipf")


def check_prior(prior: str, zipf_exponent: float, spread: float | None) -> float:
    """Validate a prior choice; returns the spread to use (1.0 by default for "normal")."""
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; known: {', '.join(PRIORS)}")
    if not (isinstance(zipf_exponent, (int, float)) and np.isfinite(zipf_exponent) and zipf_exponent > 0):
        raise ValueError(f"zipf_exponent must be a positive number; got {zipf_exponent!r}")
    if prior == "zipf" and spread is not None:
        raise ValueError("spread belongs to the 'normal' prior; the 'zipf' prior's shape is zipf_exponent")
    spread = 1.0 if spread is None else spread
    if spread < 0:
        raise ValueError(f"spread must be >= 0; got {spread}")
    return float(spread)


def zipf_shares(n: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """n shares proportional to rank^-exponent (rank 1..n), in a random order: a Zipf law over n items."""
    w = np.arange(1, n + 1, dtype=float) ** -float(exponent)
    return (w / w.sum())[rng.permutation(n)]


def spread_logits(pass_rates: np.ndarray, correct: np.ndarray, rng: np.random.Generator, spread: float,
                  prior: str = "normal", zipf_exponent: float = 1.0) -> np.ndarray:
    """Logits (N, K) whose softmax puts mass p_n on the correct answers of prompt n.

    prior "normal": within the correct and within the incorrect answers, mass is split by softmax(spread * z),
    z ~ N(0, 1): spread = 0 is even, larger spread makes some solutions rare. Pass rates clipped to
    [P_MIN, 1 - P_MIN].
    prior "zipf": within each set the answer of rank j (a random order) gets a share proportional to
    j^-zipf_exponent, the long tail of an LLM's answer distribution (a few frequent answers, many rare ones).
    Pass rates clipped to [P_MIN_ZIPF, 1 - P_MIN_ZIPF].
    """
    if prior == "zipf":
        p = np.clip(pass_rates, P_MIN_ZIPF, 1.0 - P_MIN_ZIPF)
        probs = np.zeros(correct.shape)
        for n in range(correct.shape[0]):
            good = np.flatnonzero(correct[n])
            bad = np.flatnonzero(~correct[n])
            probs[n, good] = p[n] * zipf_shares(good.size, zipf_exponent, rng)
            probs[n, bad] = (1.0 - p[n]) * zipf_shares(bad.size, zipf_exponent, rng)
    else:
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
    #: every training prompt trains at every step (a class constant: not a parameter of this family)
    prompts_per_step: ClassVar[int] = 0

    def evaluated(self) -> None:
        """No prompt is held out: every logged metric averages all of them."""
        return None

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
        actions = sp.sample_categorical(logp, u, xp)
        return {"actions": actions, "logprobs": sp.gather_last(logp, actions, xp),
                "rewards": sp.gather_last(xp.asarray(self.correct), actions, xp).astype(logp.dtype)}

    def logprob(self, params: dict[str, Any], actions: Any, xp: Any) -> Any:
        return sp.gather_last(sp.log_softmax(self.logits(params, xp), xp), actions, xp)

    def logit_gradient(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> Any:
        """d/dlogits of (1/N) sum_n (1/G) sum_i w_ni log pi(a_ni | n): (N, K)."""
        logp = sp.log_softmax(self.logits(params, xp), xp)
        N, G = actions.shape
        counts = sp.weighted_counts(actions, weights, logp.shape[-1], xp)
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
    spread: float | None = None,
    prior: str = "normal",
    zipf_exponent: float = 1.0,
    seed: int = 0,
) -> Bandit:
    """A bandit task; ``difficulty`` gives the initial pass-rate distribution, ``prior`` how each prompt's
    pass rate is split over its answers (see ``spread_logits``: "normal" with ``spread``, default 1.0, or
    "zipf" with ``zipf_exponent``)."""
    N = sp.check_positive_int(n_prompts, "n_prompts")
    K = sp.check_positive_int(n_answers, "n_answers (K)")
    C = sp.check_positive_int(n_correct, "n_correct (C)")
    if C >= K:
        raise ValueError(f"n_correct (C = {C}) must be smaller than n_answers (K = {K}): some answers must be wrong")
    spread = check_prior(prior, zipf_exponent, spread)
    rng = _rng(seed)
    p = as_distribution(difficulty).sample(rng, N)
    correct = np.zeros((N, K), dtype=bool)
    for n in range(N):
        correct[n, rng.choice(K, size=C, replace=False)] = True
    return Bandit(logits0=spread_logits(p, correct, rng, spread, prior, zipf_exponent), correct=correct)
