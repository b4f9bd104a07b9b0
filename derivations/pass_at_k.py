"""Pass@K advantages: the analytic Pass@k-training advantage and PKPO, closed forms in binomials.

With n = G rollouts of which k are correct:
    pass_at_k (arXiv 2508.10751): R = 1 - C(G-k, K)/C(G, K), s = sqrt(R (1 - R)),
        A+ = (1 - R)/s,  A- = (1 - R - C(G-k-1, K-1)/C(G-1, K-1))/s
    pkpo (arXiv 2505.15201, with a leave-one-out baseline):
        A+ = K (1 - rho(G-1, k-1, K)),  A- = K (rho(G-1, k, K-1) - rho(G-1, k, K)),  rho(m, c, j) = 1 - C(m-c, j)/C(m, j)
As G -> oo (K fixed), C(G-k, K)/C(G, K) -> (1-p)^K, so R -> 1 - (1-p)^K (the prompt's pass@K).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

from derivations.common import Derivation, G, Limit, deferred_limit, k

K_DEFAULT = 4


def ratio(a: sp.Expr, b: sp.Expr, m: int) -> sp.Expr:
    """C(a, m)/C(b, m) as the product of m factors (a - j)/(b - j): exact and limit-friendly."""
    out = sp.Integer(1)
    for j in range(m):
        out *= (a - j) / (b - j)
    return out


def rho(m: sp.Expr, c: sp.Expr, j: int) -> sp.Expr:
    return 1 - ratio(m - c, m, j)


def pass_at_k_forms(K: int) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    R = 1 - ratio(G - k, G, K)
    s = sp.sqrt(R * (1 - R))
    return (1 - R) / s, (1 - R - ratio(G - k - 1, G - 1, K - 1)) / s, R


def pkpo_forms(K: int) -> tuple[sp.Expr, sp.Expr]:
    return K * (1 - rho(G - 1, k - 1, K)), K * (rho(G - 1, k, K - 1) - rho(G - 1, k, K))


def _limits(a_pos: sp.Expr, a_neg: sp.Expr) -> tuple[Limit, Limit]:
    """The G -> oo masses per rollout, each computed when first read (seconds of sympy)."""
    return deferred_limit((k / G) * a_pos), deferred_limit((1 - k / G) * -a_neg)


def build(K: int = K_DEFAULT) -> list[Derivation]:
    pk_pos, pk_neg, _ = pass_at_k_forms(K)
    pp_pos, pp_neg = pkpo_forms(K)
    pk_lim, pp_lim = _limits(pk_pos, pk_neg), _limits(pp_pos, pp_neg)
    return [
        Derivation("pass_at_k", "pass@k", a_pos=pk_pos, a_neg=pk_neg, params={"K": K},
                   informative=lambda kk, GG, K=K: (kk > 0) & (GG - kk >= K),
                   large_g_pos=pk_lim[0], large_g_neg=pk_lim[1],
                   note=f"Groups with fewer than K = {K} wrong rollouts have R = 1 and carry no mass."),
        Derivation("pkpo", "pass@k", a_pos=pp_pos, a_neg=pp_neg, params={"K": K},
                   informative=lambda kk, GG: (kk > 0) & (kk < GG),
                   large_g_pos=pp_lim[0], large_g_neg=pp_lim[1]),
    ]


DERIVATIONS = build()


def main() -> None:
    for d in DERIVATIONS:
        # factor, not simplify: the same factored form here, in 0.1 s instead of 4 s for pass@k's square roots
        print(f"{d.label}: A+ = {sp.factor(d.a_pos)}\n    A- = {sp.factor(d.a_neg)}")
        print(f"    per rollout as G -> oo: +{d.limit_pos}, -{d.limit_neg}")


if __name__ == "__main__":
    main()
