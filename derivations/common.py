"""Shared machinery of the derivations: symbols, the Derivation record, exact expected masses and limits.

For binary rewards, k correct of G, a group-symmetric advantage is the pair of closed forms A+(k, G)
(every correct rollout) and A-(k, G) (every incorrect one). Everything else follows:
    M+_k = k max(A+, 0) + (G - k) max(A-, 0),    M-_k = k max(-A+, 0) + (G - k) max(-A-, 0),
    E[M+-](p, G) = sum_k C(G, k) p^k (1 - p)^(G - k) M+-_k,
and the large-G mass per rollout is the limit of (k/G) A+(pG, G) and (1 - k/G) |A-(pG, G)| (law of large
numbers, k/G -> p).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Mapping, Union

import numpy as np
import sympy as sp
from scipy import stats

k, G, p = sp.symbols("k G p", positive=True)

#: a G -> oo limit: the expression, or a function that computes it on first use (``deferred_limit``)
Limit = Union[sp.Expr, Callable[[], sp.Expr]]


@dataclass(frozen=True)
class Derivation:
    """Closed forms of one registered advantage (at the given hyper-parameter values)."""

    name: str  # registry name
    family: str
    a_pos: sp.Expr  # advantage of a correct rollout, in k and G (and parameter symbols)
    a_neg: sp.Expr  # advantage of an incorrect rollout
    params: Mapping[str, float] = field(default_factory=dict)  # registry parameter values used
    substitutions: Mapping[sp.Symbol, float] = field(default_factory=dict)  # numeric values of symbols
    informative: Callable[[np.ndarray, int], np.ndarray] = lambda kk, GG: (kk > 0) & (kk < GG)
    large_g_pos: Limit | None = None  # G -> oo positive mass per rollout, in p (read it as ``limit_pos``)
    large_g_neg: Limit | None = None  # the negative mass, read as ``limit_neg``
    signals: Mapping[str, float] | None = None  # FADE's signals at which the forms hold
    note: str = ""

    @functools.cached_property
    def limit_pos(self) -> sp.Expr | None:
        """G -> oo positive mass per rollout, in p (computed on first read where it was deferred)."""
        return _resolve(self.large_g_pos)

    @functools.cached_property
    def limit_neg(self) -> sp.Expr | None:
        return _resolve(self.large_g_neg)

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(f'{a}={b}' for a, b in self.params.items())})"

    def tables(self, group_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Numeric A+(k), A-(k) for k = 0..G (0 on uninformative groups, NaN where undefined)."""
        kk = np.arange(group_size + 1, dtype=float)
        out = []
        for expr in (self.a_pos, self.a_neg):
            f = sp.lambdify((k, G), expr.subs(dict(self.substitutions)), modules=["numpy", "scipy"])
            with np.errstate(all="ignore"):
                vals = np.broadcast_to(np.asarray(f(kk, float(group_size)), dtype=float), kk.shape).copy()
            vals[~self.informative(kk, group_size)] = 0.0
            out.append(vals)
        a_pos, a_neg = out
        a_pos[0], a_neg[group_size] = np.nan, np.nan  # no correct / no incorrect rollout exists
        return a_pos, a_neg

    def masses(self, group_size: int) -> tuple[np.ndarray, np.ndarray]:
        """M+_k and M-_k for k = 0..G."""
        a_pos, a_neg = (np.nan_to_num(t) for t in self.tables(group_size))
        kk = np.arange(group_size + 1)
        pos = kk * np.maximum(a_pos, 0) + (group_size - kk) * np.maximum(a_neg, 0)
        neg = kk * np.maximum(-a_pos, 0) + (group_size - kk) * np.maximum(-a_neg, 0)
        return pos, neg

    def expected(self, pass_rate: np.ndarray | float, group_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact E[M+](p), E[M-](p) under k ~ Binomial(G, p)."""
        w = stats.binom.pmf(np.arange(group_size + 1), group_size, np.asarray(pass_rate, dtype=float)[..., None])
        pos, neg = self.masses(group_size)
        return w @ pos, w @ neg

    def peak(self, group_size: int, grid: int = 2001) -> float:
        ps = np.linspace(0, 1, grid)
        pos, neg = self.expected(ps, group_size)
        return float(ps[int(np.argmax(pos + neg))])


def _resolve(limit: Limit | None) -> sp.Expr | None:
    # not callable(): a sympy Symbol is callable (it makes an undefined function)
    return limit if limit is None or isinstance(limit, sp.Basic) else limit()


@functools.lru_cache(maxsize=None)
def large_group_limit(per_rollout: sp.Expr) -> sp.Expr:
    """lim_{G -> oo} of an expression in (k, G) with k = p G substituted, simplified."""
    return sp.simplify(sp.limit(per_rollout.subs(k, p * G), G, sp.oo))


def deferred_limit(per_rollout: sp.Expr) -> Callable[[], sp.Expr]:
    """``large_group_limit``, computed when first read: sympy takes seconds for the limits, and importing the
    derivations (every test worker's collection does) should not pay for them."""
    return functools.partial(large_group_limit, per_rollout)


def symbolic_expected_mass(a_expr: sp.Expr, count: sp.Expr) -> sp.Expr:
    """sum_k C(G, k) p^k (1-p)^(G-k) count(k) a(k), simplified by sympy where it can (polynomial a)."""
    j = sp.Symbol("j", integer=True, nonnegative=True)
    term = sp.binomial(G, j) * p**j * (1 - p) ** (G - j) * (count * a_expr).subs(k, j)
    total = sp.Sum(term, (j, 0, G)).doit()
    return sp.factor(sp.simplify(total))


def binomial_moment_form(poly: sp.Expr) -> sp.Expr:
    """E[poly(k)] under k ~ Binomial(G, p) for a polynomial in k, via factorial moments (exact)."""
    poly = sp.expand(poly)
    deg = sp.degree(poly, k) if poly.has(k) else 0
    # k^n = sum_m S(n, m) k_(m) (falling factorial), E[k_(m)] = G_(m) p^m
    out = 0
    for n in range(deg + 1):
        coeff = poly.coeff(k, n) if n > 0 else poly.subs(k, 0)
        out += coeff * sum(sp.functions.combinatorial.numbers.stirling(n, m) * sp.ff(G, m) * p**m
                           for m in range(n + 1))
    return sp.factor(sp.simplify(out))
