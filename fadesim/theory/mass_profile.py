"""Exact gradient-mass profiles of an advantage under k ~ Binomial(G, p) (DESIGN.md section 3).

For binary rewards a group is determined, up to order, by its number of correct rollouts k, so
an advantage is fixed by its values on the G + 1 canonical groups (k ones, then G - k zeros).
:func:`profile` evaluates the advantage's *own code* on those groups (numpy, float64) and turns
them into exact expectations, e.g. E[M+](p) = sum_k C(G,k) p^k (1-p)^(G-k) M+_k.
M+_k / M-_k are the positive / negative mass of canonical group k exactly as :func:`fadesim.decompose`
defines them (sum of positive / minus negative entries), so the profile is what decompose measures
on average, whatever the advantage's sign pattern.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
from scipy import stats

from fadesim.advantages.registry import info
from fadesim.tasks.pass_rates import beta_binomial_weights, binomial_weights


def canonical_groups(G: int) -> np.ndarray:
    """(G + 1, G) float64 rewards: row k has k ones followed by G - k zeros."""
    return (np.arange(G)[None, :] < np.arange(G + 1)[:, None]).astype(np.float64)


@dataclass(frozen=True)
class MassSummary:
    """Expected masses of one group under a distribution over k."""

    positive_mass: float
    negative_mass: float
    balance: float  # (E M+ - E M-) / (E M+ + E M-)
    ess_fraction: float  # (E m)^2 / E m^2: ESS per group of a large batch
    hardness: float  # E[m (1 - k/G)] / E[m]


@dataclass(frozen=True)
class Profile:
    """Exact tables of one advantage at group size G."""

    name: str
    G: int
    params: Mapping[str, Any]
    advantages: np.ndarray  # (G+1, G): advantages of canonical group k
    a_pos: np.ndarray  # (G+1,): advantage of a correct rollout in group k (NaN at k = 0)
    a_neg: np.ndarray  # (G+1,): advantage of an incorrect rollout in group k (NaN at k = G)
    pos_mass: np.ndarray  # (G+1,): M+_k
    neg_mass: np.ndarray  # (G+1,): M-_k
    symmetric: bool = field(default=True)  # equal values within the correct and incorrect parts

    # --- expectations at a fixed pass rate p (vectorised over p) ---
    def expected_positive_mass(self, p: Any) -> np.ndarray:
        return binomial_weights(p, self.G) @ self.pos_mass

    def expected_negative_mass(self, p: Any) -> np.ndarray:
        return binomial_weights(p, self.G) @ self.neg_mass

    def expected_mass(self, p: Any) -> np.ndarray:
        return binomial_weights(p, self.G) @ (self.pos_mass + self.neg_mass)

    def balance(self, p: Any) -> np.ndarray:
        pos, neg = self.expected_positive_mass(p), self.expected_negative_mass(p)
        tot = pos + neg
        return np.divide(pos - neg, tot, out=np.zeros_like(tot), where=tot > 0)

    def ess_fraction(self, p: Any) -> np.ndarray:
        w = binomial_weights(p, self.G)
        m = self.pos_mass + self.neg_mass
        first, second = w @ m, w @ (m * m)
        return np.divide(first**2, second, out=np.zeros_like(first), where=second > 0)

    # --- expectations under a distribution over k ---
    def under(self, k_weights: Any) -> MassSummary:
        """Summary under an explicit pmf over k = 0..G (e.g. a difficulty distribution's)."""
        w = np.asarray(k_weights, dtype=np.float64)
        if w.shape != (self.G + 1,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"k_weights must be a pmf over k = 0..{self.G}")
        m = self.pos_mass + self.neg_mass
        pos, neg, first, second = w @ self.pos_mass, w @ self.neg_mass, w @ m, w @ (m * m)
        hard = w @ (m * (1.0 - np.arange(self.G + 1) / self.G))
        safe = lambda a, b: float(a / b) if b > 0 else 0.0  # noqa: E731 - a one-line local helper
        return MassSummary(
            positive_mass=float(pos),
            negative_mass=float(neg),
            balance=safe(pos - neg, pos + neg),
            ess_fraction=safe(first**2, second),
            hardness=safe(hard, first),
        )

    def under_beta(self, a: float, b: float) -> MassSummary:
        """Summary when the prompt pass rate p ~ Beta(a, b) (so k ~ BetaBinomial(G, a, b))."""
        return self.under(beta_binomial_weights(a, b, self.G))

    def mass_density(self, p: Any, a: float, b: float) -> np.ndarray:
        """Where the mass sits along the difficulty axis: E[m | p] times the Beta(a, b) density."""
        return self.expected_mass(p) * stats.beta.pdf(np.asarray(p, dtype=np.float64), a, b)

    def peak(self, grid: int = 2001) -> float:
        """Pass rate p at which a group's expected mass E[M+ + M-](p) is largest (hard focus: small p)."""
        p = np.linspace(0.0, 1.0, grid)
        return float(p[int(np.argmax(self.expected_mass(p)))])


def profile(
    adv: str | Callable[..., Any],
    G: int,
    *,
    signals: Mapping[str, Any] | None = None,
    logprobs: Any = None,
    **params: Any,
) -> Profile:
    """Exact profile of advantage ``adv`` (a registry name or a contract function) at group size G.

    ``params`` are the advantage's hyper-parameters. Advantages that read log-probs get equal
    log-probs for every rollout unless ``logprobs`` (a (G+1, G) array) is given; ``signals`` is passed
    through (FADE needs it).
    """
    G = int(G)
    if G < 1:
        raise ValueError(f"profile: G must be a positive integer; got {G}")
    if isinstance(adv, str):
        entry = info(adv)
        fn, name = entry.bind(**params), adv
        if entry.needs_logprobs and logprobs is None:
            logprobs = np.zeros((G + 1, G))
    else:
        fn, name = (lambda r, **kw: adv(r, **kw, **params)), getattr(adv, "__name__", "advantage")
    rewards = canonical_groups(G)
    kwargs: dict[str, Any] = {}
    if signals is not None:
        kwargs["signals"] = signals
    if logprobs is not None:
        kwargs["logprobs"] = logprobs
    A = np.asarray(fn(rewards, **kwargs), dtype=np.float64)
    if A.shape != rewards.shape:
        raise ValueError(f"profile: {name} returned shape {A.shape} for rewards of shape {rewards.shape}")
    a_pos = np.full(G + 1, np.nan)
    a_neg = np.full(G + 1, np.nan)
    symmetric = True
    for k in range(G + 1):
        if k > 0:
            a_pos[k] = A[k, :k].mean()
            symmetric &= bool(np.allclose(A[k, :k], a_pos[k], rtol=1e-12, atol=1e-12))
        if k < G:
            a_neg[k] = A[k, k:].mean()
            symmetric &= bool(np.allclose(A[k, k:], a_neg[k], rtol=1e-12, atol=1e-12))
    return Profile(
        name=name,
        G=G,
        params=dict(params),
        advantages=A,
        a_pos=a_pos,
        a_neg=a_neg,
        pos_mass=np.where(A > 0, A, 0.0).sum(axis=1),
        neg_mass=np.where(A < 0, -A, 0.0).sum(axis=1),
        symmetric=symmetric,
    )
