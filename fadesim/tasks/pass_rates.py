"""Difficulty distributions: where the prompts' initial pass rates come from.

Each distribution samples pass rates with an explicit seed or ``numpy.random.Generator`` (no hidden
randomness) and gives the exact pmf of k correct out of G (``binomial_weights``, ``beta_binomial_weights``), which
``theory`` uses for predictions.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy import special, stats

Seed = int | np.random.Generator


def _rng(seed: Seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be an int or numpy Generator; got {type(seed).__name__}")


def binomial_weights(p: Any, G: int) -> np.ndarray:
    """P(k | G, p) for k = 0..G; shape p.shape + (G + 1,)."""
    p = np.asarray(p, dtype=np.float64)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("pass rate p must lie in [0, 1]")
    return stats.binom.pmf(np.arange(G + 1), G, p[..., None])


def beta_binomial_weights(a: float, b: float, G: int) -> np.ndarray:
    """P(k | G) when p ~ Beta(a, b): C(G,k) B(k + a, G - k + b) / B(a, b)."""
    if a <= 0 or b <= 0:
        raise ValueError(f"Beta parameters must be positive; got a={a}, b={b}")
    k = np.arange(G + 1)
    log_pmf = (
        special.gammaln(G + 1) - special.gammaln(k + 1) - special.gammaln(G - k + 1)
        + special.betaln(k + a, G - k + b) - special.betaln(a, b)
    )
    return np.exp(log_pmf)


class DifficultyDistribution:
    """A distribution over a prompt's pass rate p in [0, 1]."""

    def sample(self, seed: Seed, n: int) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def k_weights(self, G: int) -> np.ndarray:  # pragma: no cover - interface
        """P(k correct of G) when p is drawn from this distribution, k = 0..G."""
        raise NotImplementedError

    def mean(self) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def cdf(self, p: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        """P(pass rate <= p)."""
        raise NotImplementedError

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        """The exact expected pass@k = 1 - E[(1 - p)^k] over prompts drawn from this distribution."""
        raise NotImplementedError


@dataclass(frozen=True)
class Beta(DifficultyDistribution):
    """p ~ Beta(a, b): a < b gives mostly hard prompts, a > b mostly easy ones."""

    a: float
    b: float

    def __post_init__(self) -> None:
        if not (self.a > 0 and self.b > 0 and np.isfinite(self.a) and np.isfinite(self.b)):
            raise ValueError(f"Beta parameters must be positive and finite; got a={self.a}, b={self.b}")

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        return _rng(seed).beta(self.a, self.b, size=int(n))

    def k_weights(self, G: int) -> np.ndarray:
        return beta_binomial_weights(self.a, self.b, G)

    def mean(self) -> float:
        return self.a / (self.a + self.b)

    def cdf(self, p: np.ndarray) -> np.ndarray:
        return stats.beta.cdf(p, self.a, self.b)

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        from scipy import special

        k = np.asarray(ks, dtype=float)  # E[(1 - p)^k] = B(a, b + k) / B(a, b)
        return 1.0 - np.exp(special.betaln(self.a, self.b + k) - special.betaln(self.a, self.b))


BETA_FIT_BOUNDS = (1e-3, 1e4)  # each of a, b; the edges are reached only by degenerate data (see fit_beta)


def fit_beta(k: Sequence[int] | np.ndarray, n: int | Sequence[int] | np.ndarray) -> Beta:
    """Maximum-likelihood Beta(a, b) for prompts' pass rates from k_i correct of n_i samples each
    (k_i ~ Beta-Binomial(n_i, a, b): the pass rate p_i ~ Beta(a, b), then k_i ~ Binomial(n_i, p_i)).

    This is how the bridge fits the simulator's difficulty distribution to a model's step-0 pass rates: the
    binomial sampling noise of each k_i / n_i is modelled, not mistaken for spread in difficulty.
    Degenerate data hit the bounds ``BETA_FIT_BOUNDS``: all k_i = 0 (or all = n_i) drives a (or b) to the
    lower bound; equal pass rates everywhere (no overdispersion) drive a + b up to the upper bound, a near
    point mass at the pooled rate. Raises on empty input, k outside [0, n], or n < 1."""
    from scipy import optimize

    k = np.asarray(k, dtype=float).reshape(-1)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape).copy() if k.size else np.asarray(n, dtype=float)
    if k.size == 0:
        raise ValueError("fit_beta needs at least one prompt's counts")
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise ValueError("fit_beta: counts must be finite")
    if np.any(n < 1) or np.any(n != np.round(n)) or np.any(k != np.round(k)):
        raise ValueError("fit_beta: n must be positive integers and k integers")
    if np.any((k < 0) | (k > n)):
        raise ValueError("fit_beta: every k must lie in [0, n]")
    lo, hi = np.log(BETA_FIT_BOUNDS[0]), np.log(BETA_FIT_BOUNDS[1])

    def nll(theta: np.ndarray) -> float:
        a, b = np.exp(theta)
        return -float(np.sum(stats.betabinom.logpmf(k, n, a, b)))

    # start from the method of moments on the observed rates (clipped into the bounds)
    rate = k / n
    m = float(np.clip(rate.mean(), 1e-3, 1 - 1e-3))
    v = float(rate.var())
    total = m * (1 - m) / v - 1 if v > 0 else BETA_FIT_BOUNDS[1]
    total = float(np.clip(total, 2 * BETA_FIT_BOUNDS[0], BETA_FIT_BOUNDS[1]))
    starts = [np.clip(np.log([m * total, (1 - m) * total]), lo, hi), np.log([m * 2, (1 - m) * 2])]
    best = None
    for x0 in starts:
        res = optimize.minimize(nll, x0, method="L-BFGS-B", bounds=[(lo, hi), (lo, hi)])
        if best is None or res.fun < best.fun:
            best = res
    a, b = np.exp(best.x)
    return Beta(float(a), float(b))


@functools.lru_cache(maxsize=1)
def _legendre_512() -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(512)


@dataclass(frozen=True)
class LogUniform(DifficultyDistribution):
    """log p ~ Uniform(log low, log high), 0 < low < high < 1: pass rates spread over decades (e.g. 1e-4 to 0.3),
    the long tail of hard prompts an LLM's benchmark has and a Beta puts little mass on.

    Exact k-pmf: for k >= 1, P(k) = [I_high(k, G - k + 1) - I_low(k, G - k + 1)] / (k ln(high / low))
    (I the regularised incomplete beta; C(G, k) B(k, G - k + 1) = 1 / k), and P(0) = 1 - sum_{k >= 1} P(k).
    """

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.low) and np.isfinite(self.high) and 0.0 < self.low < self.high < 1.0):
            raise ValueError(f"LogUniform needs 0 < low < high < 1 (pass rates); got low={self.low}, high={self.high}")

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        return np.exp(_rng(seed).uniform(np.log(self.low), np.log(self.high), size=int(n)))

    def k_weights(self, G: int) -> np.ndarray:
        from scipy import special

        k = np.arange(1, G + 1)
        width = np.log(self.high / self.low)
        w = (special.betainc(k, G - k + 1, self.high) - special.betainc(k, G - k + 1, self.low)) / (k * width)
        return np.concatenate([[max(0.0, 1.0 - w.sum())], w])

    def mean(self) -> float:
        return float((self.high - self.low) / np.log(self.high / self.low))

    def cdf(self, p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            x = (np.log(np.asarray(p, dtype=float)) - np.log(self.low)) / np.log(self.high / self.low)
        return np.clip(x, 0.0, 1.0)

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        # E[(1 - p)^k] = mean over u = log p ~ U(log low, log high) of (1 - e^u)^k: Gauss-Legendre, 512 nodes
        # (the integrand is smooth in u; its one transition, near p ~ 1/k, is about one unit of u wide)
        x, w = _legendre_512()
        lo, hi = np.log(self.low), np.log(self.high)
        p = np.exp(lo + (x + 1.0) * (hi - lo) / 2.0)
        k = np.asarray(ks, dtype=float)
        return 1.0 - (np.exp(k[:, None] * np.log1p(-p[None, :])) @ w) / 2.0


@dataclass(frozen=True)
class PointMass(DifficultyDistribution):
    """Every prompt has the same pass rate p."""

    p: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"PointMass pass rate must lie in [0, 1]; got {self.p}")

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        _rng(seed)
        return np.full(int(n), float(self.p))

    def k_weights(self, G: int) -> np.ndarray:
        return stats.binom.pmf(np.arange(G + 1), G, self.p)

    def mean(self) -> float:
        return float(self.p)

    def cdf(self, p: np.ndarray) -> np.ndarray:
        return (np.asarray(p, dtype=float) >= self.p).astype(float)

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        return 1.0 - (1.0 - self.p) ** np.asarray(ks, dtype=float)


@dataclass(frozen=True)
class Mixture(DifficultyDistribution):
    """A weighted mixture of difficulty distributions (e.g. a bimodal easy/hard prompt set)."""

    components: tuple[DifficultyDistribution, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.components) == 0 or len(self.components) != len(self.weights):
            raise ValueError("Mixture needs as many weights as components (at least one)")
        w = np.asarray(self.weights, dtype=float)
        if np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"Mixture weights must be non-negative and sum to 1; got {self.weights}")

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        rng = _rng(seed)
        which = rng.choice(len(self.components), size=int(n), p=np.asarray(self.weights))
        out = np.empty(int(n))
        for i, comp in enumerate(self.components):
            idx = np.flatnonzero(which == i)
            out[idx] = comp.sample(rng, idx.size)
        return out

    def k_weights(self, G: int) -> np.ndarray:
        return sum(w * c.k_weights(G) for c, w in zip(self.components, self.weights))

    def mean(self) -> float:
        return float(sum(w * c.mean() for c, w in zip(self.components, self.weights)))

    def cdf(self, p: np.ndarray) -> np.ndarray:
        return sum(w * c.cdf(p) for c, w in zip(self.components, self.weights))

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        return sum(w * c.pass_at_k(ks) for c, w in zip(self.components, self.weights))


@dataclass(frozen=True)
class Empirical(DifficultyDistribution):
    """Resample a measured list of pass rates (e.g. a model's per-prompt pass rates from the bridge)."""

    pass_rates: tuple[float, ...]

    def __post_init__(self) -> None:
        p = np.asarray(self.pass_rates, dtype=float)
        if p.size == 0 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
            raise ValueError("Empirical pass rates must be a non-empty list of numbers in [0, 1]")

    @classmethod
    def from_csv(cls, path: str | Path, column: str = "pass_rate") -> "Empirical":
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or column not in reader.fieldnames:
                raise ValueError(f"{path}: no column '{column}' (columns: {reader.fieldnames})")
            return cls(tuple(float(row[column]) for row in reader))

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        return _rng(seed).choice(np.asarray(self.pass_rates), size=int(n), replace=True)

    def k_weights(self, G: int) -> np.ndarray:
        p = np.asarray(self.pass_rates)
        return stats.binom.pmf(np.arange(G + 1)[None, :], G, p[:, None]).mean(axis=0)

    def mean(self) -> float:
        return float(np.mean(self.pass_rates))

    def cdf(self, p: np.ndarray) -> np.ndarray:
        rates = np.sort(np.asarray(self.pass_rates))
        return np.searchsorted(rates, np.asarray(p, dtype=float), side="right") / rates.size

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        p = np.asarray(self.pass_rates)
        return 1.0 - ((1.0 - p[None, :]) ** np.asarray(ks, dtype=float)[:, None]).mean(axis=1)


@dataclass(frozen=True)
class Stratified(DifficultyDistribution):
    """``base``, sampled by stratified quantiles: n draws are base's quantiles at (i + u_i) / n, i = 0..n-1,
    u_i ~ U(0, 1), in a random order. Every draw has base's law, and n prompts reproduce base's pass@k curve
    with far less sampling noise than n independent draws (used by calibrated task presets)."""

    base: DifficultyDistribution

    def quantile(self, q: np.ndarray) -> np.ndarray:
        """The smallest p with cdf(p) >= q, by bisection (60 halvings of [0, 1]: exact to double rounding)."""
        q = np.asarray(q, dtype=float)
        lo, hi = np.zeros_like(q), np.ones_like(q)
        for _ in range(60):
            mid = (lo + hi) / 2.0
            above = self.base.cdf(mid) >= q
            hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
        return hi

    def sample(self, seed: Seed, n: int) -> np.ndarray:
        rng = _rng(seed)
        n = int(n)
        q = (np.arange(n) + rng.uniform(size=n)) / n
        return self.quantile(q)[rng.permutation(n)]

    def k_weights(self, G: int) -> np.ndarray:
        return self.base.k_weights(G)

    def mean(self) -> float:
        return self.base.mean()

    def cdf(self, p: np.ndarray) -> np.ndarray:
        return self.base.cdf(p)

    def pass_at_k(self, ks: Sequence[int] | np.ndarray) -> np.ndarray:
        return self.base.pass_at_k(ks)


def as_distribution(spec: DifficultyDistribution | Sequence[float] | str) -> DifficultyDistribution:
    """Accept a distribution, a list of pass rates, or a short name: 'easy', 'mixed', 'hard', 'uniform'."""
    if isinstance(spec, DifficultyDistribution):
        return spec
    if isinstance(spec, str):
        named = {
            "easy": Beta(4.0, 1.5),
            "mixed": Beta(0.8, 0.8),
            "hard": Beta(1.0, 5.0),
            "uniform": Beta(1.0, 1.0),
        }
        if spec not in named:
            raise ValueError(f"unknown difficulty '{spec}'; known: {', '.join(named)}")
        return named[spec]
    return Empirical(tuple(float(x) for x in spec))
