"""The entropy law of a softmax policy under a logit-space policy-gradient step (arXiv 2505.22617).

Derived in sympy for a K-answer softmax (K = 3 symbolically):
    dH/deta |_0 of H(theta + eta g) = -Cov_{a~pi}(log pi(a), g(a))                        (any direction g)
    vanilla PG, expected step g = pi (A - E_pi A):   dH = -eta Cov(log pi, pi (A - E_pi A))
    natural PG, g = A - E_pi A:                       dH = -eta Cov(log pi, A)
and for the sampled step of G rollouts, g = (1/G) sum_i A_i (e_{a_i} - pi):
    dH = -(eta/G) sum_i A_i (h(a_i) - c),  h(a) = pi(a)(log pi(a) + H),  c = E_pi h.
h is convex in pi(a), largest at the mode, so positive advantage on the mode lowers entropy and negative
advantage on the mode raises it. Split by sign per advantage: ``fadesim.theory.expected_entropy_drift``.
Caveat (shown in RESULTS.md): negative mass on *unlikely* wrong answers (h(a) < c) lowers entropy too, as it
moves probability to the already-likely answers.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

import fadesim
from fadesim.theory.entropy import EXAMPLE_CORRECT, EXAMPLE_LOGITS, expected_entropy_drift

K = 3
theta = sp.symbols(f"theta1:{K + 1}", real=True)
g_sym = sp.symbols(f"g1:{K + 1}", real=True)
A_sym = sp.symbols(f"A1:{K + 1}", real=True)
eta = sp.Symbol("eta", real=True)


def softmax(th):
    z = [sp.exp(t) for t in th]
    s = sum(z)
    return [zi / s for zi in z]


def entropy(th):
    pi = softmax(th)
    return -sum(q * sp.log(q) for q in pi)


def cov(x, y, pi):
    ex = sum(q * xi for q, xi in zip(pi, x))
    ey = sum(q * yi for q, yi in zip(pi, y))
    return sum(q * (xi - ex) * (yi - ey) for q, xi, yi in zip(pi, x, y))


def directional_derivative(direction) -> sp.Expr:
    moved = [t + eta * d for t, d in zip(theta, direction)]
    return sp.diff(entropy(moved), eta).subs(eta, 0)


@lru_cache(maxsize=None)  # pure and slow (seconds of sympy); RESULTS.md, main() and the tests all read it
def check_identities() -> dict[str, sp.Expr]:
    """Symbolic differences that must simplify to 0; returns them (tests assert each is 0)."""
    pi = softmax(theta)
    logpi = [sp.log(q) for q in pi]
    mean_A = sum(q * a for q, a in zip(pi, A_sym))
    vanilla = [q * (a - mean_A) for q, a in zip(pi, A_sym)]
    natural = [a - mean_A for a in A_sym]
    H = entropy(theta)
    h = [q * (lq + H) for q, lq in zip(pi, logpi)]
    c = sum(q * hi for q, hi in zip(pi, h))
    # one sampled rollout of each answer with advantages A (G = K): g = (1/K) sum_a A_a (e_a - pi)
    sampled = [sum(A_sym[j] * ((1 if i == j else 0) - pi[i]) for j in range(K)) / K for i in range(K)]
    diffs = {
        "general": directional_derivative(g_sym) + cov(logpi, g_sym, pi),
        "vanilla": directional_derivative(vanilla) + cov(logpi, vanilla, pi),
        "natural": directional_derivative(natural) + cov(logpi, natural, pi),
        "sampled": directional_derivative(sampled) + sum(A_sym[j] * (h[j] - c) for j in range(K)) / K,
    }
    # log pi_a = theta_a - log sum_b exp(theta_b) (expand_log), then one common denominator: exact zero test
    return {name: sp.expand(sp.together(sp.expand_log(d, force=True))) for name, d in diffs.items()}


def drift_table(G: int = 8) -> list[tuple[str, float, float, float]]:
    """E[dH] per unit step on one bandit prompt (K = 6, correct mode with p = 0.6), split by sign."""
    logits, correct = EXAMPLE_LOGITS, EXAMPLE_CORRECT
    rows = []
    for name, params in [("grpo", {}), ("dr_grpo", {}), ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1}),
                         ("sign_balanced", {"balance": -0.5}), ("sign_balanced", {"balance": 0.5}),
                         ("focal", {"gamma": 2.0}), ("pass_at_k", {"K": 4}), ("risk_sensitive", {"beta": 2.0})]:
        d = expected_entropy_drift(fadesim.profile(name, G, **params), logits, correct)
        label = name + (f"({', '.join(f'{a}={b}' for a, b in params.items())})" if params else "")
        rows.append((label, d.total, d.from_positive, d.from_negative))
    return rows


def main() -> None:
    for name, diff in check_identities().items():
        print(f"{name}: dH/deta + Cov(...) simplifies to {diff}")
    print("E[dH] per unit step, bandit prompt pi = (0.45, 0.15 | 0.15, 0.1, 0.1, 0.05), first two correct, G = 8:")
    for label, total, pos, neg in drift_table():
        print(f"  {label:28s} total {total:+.5f}  from positive {pos:+.5f}  from negative {neg:+.5f}")


if __name__ == "__main__":
    main()
