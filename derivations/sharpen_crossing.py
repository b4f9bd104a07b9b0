"""The pass@k crossover under shared sharpening, derived and checked in sympy (``fadesim.theory.crossing``).

Model (``fadesim.tasks.sharpen``): one prompt's logits z_a = (1 + c s) l0_a + theta_a, pi = softmax(z), correct set
C, p = pi(C). The simulator's step uses g_s = (1/G) sum_i A_i d log pi(a_i) / ds for G rollouts a_i ~ pi and an
advantage with values A+(k) on correct and A-(k) on wrong rollouts of a group with k correct.

Checked here, each residual simplifying to exactly 0:
1. d log pi(a) / ds = c (l0_a - E_pi[l0])  (symbolic l0, theta, c, s; K = 3);
2. dp / ds = c p (1 - p) (E_pi[l0 | C] - E_pi[l0 | W]);
3. E[g_s] = c w(p) (E_pi[l0 | C] - E_pi[l0 | W]),  w(p) = E_k[(1/G) (k (1 - p) A+(k) - (G - k) p A-(k))],
   by brute-force enumeration of all K^G ordered groups (G = 2, 3; |C| = 1 and 2; symbolic probabilities, l0, c
   and advantage table), which with 2. gives E[g_s] = omega(p) dp/ds, omega = w / (p (1 - p));
4. omega = alpha for every advantage alpha r + beta (PSR, NSR, W-REINFORCE, REINFORCE): the sign of the mass
   does not change the first-order drift of the shared sharpness.
5. The skill's misfire on an unreached prompt (``misfire`` m: d log pi(a) / dg = m ([a = sc] - pi_sc), the shortcut
   sc a wrong answer, q = pi_sc / (1 - p)): the group gradient on g has mean E_k[rho (k (1 - p) A+ - (G - k) p A-) / G]
   with rho = -m q, and second moment E_k[(G - k) A-^2 m^2 q (1 - q) / G^2 + mean_k^2]
   (``fadesim.theory.crossing._skill_rows``), by enumerating all K^G groups (K = 3: one correct answer, the
   shortcut, one other wrong answer; G = 2, 3).
"""

from __future__ import annotations

import itertools
import sys
from functools import lru_cache
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

K = 3
CORRECT_SETS = {"C = {1}": (True, False, False), "C = {1, 2}": (True, True, False)}
GROUP_SIZES = (2, 3)


@lru_cache(maxsize=1)
def score_residuals() -> tuple[sp.Expr, sp.Expr]:
    """(max residual of 1. over answers, residual of 2. with C = {1, 2})."""
    c, s = sp.symbols("c s", real=True)
    l0 = sp.symbols("l0_1:4", real=True)
    theta = sp.symbols("theta_1:4", real=True)
    z = [(1 + c * s) * l0[a] + theta[a] for a in range(K)]
    total = sum(sp.exp(v) for v in z)
    pi = [sp.exp(v) / total for v in z]
    mean = sum(pi[a] * l0[a] for a in range(K))
    r1 = [sp.simplify(sp.diff(sp.log(pi[a]), s) - c * (l0[a] - mean)) for a in range(K)]
    correct = CORRECT_SETS["C = {1, 2}"]
    p = sum(pi[a] for a in range(K) if correct[a])
    mean_c = sum(pi[a] * l0[a] for a in range(K) if correct[a]) / p
    mean_w = sum(pi[a] * l0[a] for a in range(K) if not correct[a]) / (1 - p)
    r2 = sp.simplify(sp.diff(p, s) - c * p * (1 - p) * (mean_c - mean_w))
    return sp.Max(*[sp.Abs(r) for r in r1]) if any(r1) else sp.Integer(0), r2


@lru_cache(maxsize=None)
def drift_residual(G: int, correct: tuple[bool, ...]) -> sp.Expr:
    """E[g_s] (enumerated) - c w(p) (E[l0|C] - E[l0|W]), with d log pi(a)/ds = c (l0_a - E l0) from 1."""
    pi1, pi2 = sp.symbols("pi1 pi2", positive=True)
    pi = [pi1, pi2, 1 - pi1 - pi2]
    c = sp.Symbol("c", real=True)
    l0 = sp.symbols("l0_1:4", real=True)
    a_pos = [None] + list(sp.symbols(f"Aplus1:{G + 1}", real=True))
    a_neg = list(sp.symbols(f"Aminus0:{G}", real=True)) + [None]
    mean = sum(pi[a] * l0[a] for a in range(K))
    expected = sp.Integer(0)
    for seq in itertools.product(range(K), repeat=G):
        prob = sp.Mul(*[pi[a] for a in seq])
        k = sum(correct[a] for a in seq)
        g = sum((a_pos[k] if correct[a] else a_neg[k]) * c * (l0[a] - mean) for a in seq) / G
        expected += prob * g
    p = sum(pi[a] for a in range(K) if correct[a])
    mean_c = sum(pi[a] * l0[a] for a in range(K) if correct[a]) / p
    mean_w = sum(pi[a] * l0[a] for a in range(K) if not correct[a]) / (1 - p)
    w = sum(sp.binomial(G, k) * p**k * (1 - p) ** (G - k)
            * (k * (1 - p) * (a_pos[k] if k > 0 else 0) - (G - k) * p * (a_neg[k] if k < G else 0)) / G
            for k in range(G + 1))
    return sp.simplify(sp.expand(expected - c * w * (mean_c - mean_w)))


def drift_residuals() -> dict[tuple[str, int], sp.Expr]:
    return {(name, G): drift_residual(G, correct) for name, correct in CORRECT_SETS.items() for G in GROUP_SIZES}


@lru_cache(maxsize=1)
def affine_weight_residual() -> sp.Expr:
    """omega(p) - alpha for A = alpha r + beta, any G (symbolic): w(p) = alpha p (1 - p)."""
    alpha, beta, p = sp.symbols("alpha beta p", real=True)
    G, k = sp.symbols("G k", positive=True, integer=True)
    # (1/G) E_k[k (1 - p) (alpha + beta) - (G - k) p beta] with E[k] = G p
    w = ((1 - p) * (alpha + beta) * G * p - p * beta * (G - G * p)) / G
    return sp.simplify(w / (p * (1 - p)) - alpha)


@lru_cache(maxsize=None)
def misfire_residuals(G: int) -> tuple[sp.Expr, sp.Expr]:
    """(mean, second moment) of the misfire's group gradient on g, enumerated, less the closed forms of 5."""
    pi1, pi2 = sp.symbols("pi1 pi2", positive=True)
    pi = [pi1, pi2, 1 - pi1 - pi2]  # answer 0 correct, answer 1 the shortcut, answer 2 another wrong answer
    m = sp.Symbol("m", positive=True)
    a_pos = [None] + list(sp.symbols(f"Aplus1:{G + 1}", real=True))
    a_neg = list(sp.symbols(f"Aminus0:{G}", real=True)) + [None]
    first = second = sp.Integer(0)
    for seq in itertools.product(range(K), repeat=G):
        prob = sp.Mul(*[pi[a] for a in seq])
        k = sum(a == 0 for a in seq)
        g = sum((a_pos[k] if a == 0 else a_neg[k]) * m * ((1 if a == 1 else 0) - pi[1]) for a in seq) / G
        first += prob * g
        second += prob * g**2
    p, q = pi[0], pi[1] / (1 - pi[0])
    mean_k = {k: -m * q * ((k * (1 - p) * a_pos[k] if k > 0 else 0) - ((G - k) * p * a_neg[k] if k < G else 0)) / G
              for k in range(G + 1)}
    var_k = {k: ((G - k) * a_neg[k] ** 2 * m**2 * q * (1 - q) / G**2 if k < G else 0) for k in range(G + 1)}
    weight = {k: sp.binomial(G, k) * p**k * (1 - p) ** (G - k) for k in range(G + 1)}
    return (sp.simplify(sp.expand(first - sum(weight[k] * mean_k[k] for k in weight))),
            sp.simplify(sp.expand(second - sum(weight[k] * (var_k[k] + mean_k[k] ** 2) for k in weight))))


def main() -> None:
    r1, r2 = score_residuals()
    print(f"d log pi / ds = c (l0 - E l0): residual {r1}; dp/ds = c p (1 - p) (E[l0|C] - E[l0|W]): residual {r2}")
    for (name, G), r in drift_residuals().items():
        print(f"E[g_s] = c w(p) (E[l0|C] - E[l0|W]), {name}, G = {G}: residual {r}")
    print(f"omega(p) = alpha for A = alpha r + beta (PSR, NSR, W-REINFORCE): residual {affine_weight_residual()}")
    for G in GROUP_SIZES:
        mean, second = misfire_residuals(G)
        print(f"the misfire's gradient on g, G = {G}: mean residual {mean}, second-moment residual {second}")


if __name__ == "__main__":
    main()
