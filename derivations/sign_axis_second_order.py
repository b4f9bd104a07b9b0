"""The second-order (noise-driven) drift of one SGD step on a tabular prompt, derived and checked in sympy.

For logits theta (K answers), pi = softmax(theta), correct set C (p = pi(C)), G on-policy rollouts and an
advantage table A+(k), A-(k) (k correct rollouts), the step is theta <- theta + lr g with
g = (1/G) sum_i A_i (e_{a_i} - pi). Then, with d = pi_C - pi_W and Sigma_q = diag(q) - q q^T,

    E[g]     = E_k[s] d,                       s(k) = (1/G) (k (1 - p) A+(k) - (G - k) p A-(k))
    E[g g^T] = E_k[s^2] d d^T + (1/G^2) (E_k[k A+^2] Sigma_C + E_k[(G - k) A-^2] Sigma_W)

and for any smooth f of the logits, E[f(theta + lr g)] - f(theta) = lr grad f . E[g]
+ (lr^2 / 2) tr(Hess f E[g g^T]) + O(lr^3). ``fadesim.theory.drift`` evaluates these in O(K) per prompt
through the structure of each Hessian (a sum of P_r^T diag(x) P_r and rank-one terms).

Checked here, symbolically (each residual simplifies to exactly 0):
1. the two moments against brute-force enumeration of all K^G ordered outcomes, for K = 3, G in {2, 3},
   symbolic probabilities and a symbolic advantage table, with |C| = 1 and |C| = 2;
2. each quantity's structured Hessian (the quadratic form and the trace against Sigma_q) against sympy's
   Hessian of the quantity in symbolic logits, K = 3 (effective_correct = exp(H_C) is the chain rule of
   correct_entropy's form, e^{H_C} (Hess H_C + grad H_C grad H_C^T); sympy cannot simplify its exponentials,
   so it is checked numerically, with the rest, in tests/test_drift.py);
and numerically: the package's ``theory.drift`` against the first and second lr-derivatives of the enumerated
expectation (40-digit arithmetic), for registered advantages at a fixed prompt.
"""

from __future__ import annotations

import itertools
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import sympy as sp

from fadesim.theory.second_order import DRIFT_QUANTITIES, drift

K = 3
CORRECT_SETS = {"C = {1}": (True, False, False), "C = {1, 2}": (True, True, False)}
GROUP_SIZES = (2, 3)


def _moment_residuals(G: int, correct: tuple[bool, ...]) -> tuple[sp.Expr, sp.Expr]:
    """(E[g] - closed form, E[g g^T] - closed form), each summed in absolute value over entries, simplified."""
    pi1, pi2 = sp.symbols("pi1 pi2", positive=True)
    pi = [pi1, pi2, 1 - pi1 - pi2]
    a_pos = [None] + list(sp.symbols(f"Aplus1:{G + 1}", real=True))  # A+(k), k = 1..G
    a_neg = list(sp.symbols(f"Aminus0:{G}", real=True)) + [None]  # A-(k), k = 0..G-1
    mean = sp.zeros(K, 1)
    second = sp.zeros(K, K)
    for seq in itertools.product(range(K), repeat=G):
        prob = sp.Mul(*[pi[a] for a in seq])
        k = sum(correct[a] for a in seq)
        g = sp.zeros(K, 1)
        for a in seq:
            adv = a_pos[k] if correct[a] else a_neg[k]
            g += adv * (sp.Matrix([int(b == a) for b in range(K)]) - sp.Matrix(pi)) / G
        mean += prob * g
        second += prob * g * g.T
    p = sum(q for q, c in zip(pi, correct) if c)
    pi_c = sp.Matrix([q / p if c else 0 for q, c in zip(pi, correct)])
    pi_w = sp.Matrix([0 if c else q / (1 - p) for q, c in zip(pi, correct)])
    d = pi_c - pi_w
    sigma = lambda q: sp.diag(*q) - q * q.T  # noqa: E731 - the formula as written
    P = [sp.binomial(G, k) * p**k * (1 - p) ** (G - k) for k in range(G + 1)]
    s = [(k * (1 - p) * (a_pos[k] if k > 0 else 0) - (G - k) * p * (a_neg[k] if k < G else 0)) / G
         for k in range(G + 1)]
    e_s = sum(Pk * sk for Pk, sk in zip(P, s))
    e_s2 = sum(Pk * sk**2 for Pk, sk in zip(P, s))
    n_c = sum(P[k] * k * a_pos[k] ** 2 for k in range(1, G + 1)) / G**2
    n_w = sum(P[k] * (G - k) * a_neg[k] ** 2 for k in range(G)) / G**2
    closed_second = e_s2 * d * d.T + n_c * sigma(pi_c) + n_w * sigma(pi_w)
    r1 = sum(sp.Abs(sp.factor(sp.together(x))) for x in (mean - e_s * d))
    r2 = sum(sp.Abs(sp.factor(sp.together(x))) for x in (second - closed_second))
    return r1, r2


@lru_cache(maxsize=None)
def moment_residuals() -> dict[tuple[str, int], tuple[sp.Expr, sp.Expr]]:
    """(correct set, G) -> residuals of E[g] and E[g g^T]; every one must be exactly 0."""
    return {(name, G): _moment_residuals(G, correct) for name, correct in CORRECT_SETS.items() for G in GROUP_SIZES}


def _symbolic_quantities(theta: list[sp.Symbol], correct: tuple[bool, ...]) -> dict[str, sp.Expr]:
    z = [sp.exp(t) for t in theta]
    Z = sum(z)
    pi = [zi / Z for zi in z]
    zc = [zi for zi, c in zip(z, correct) if c]
    pi_c = [zi / sum(zc) for zi in zc]
    h = -sum(q * sp.log(q) for q in pi)
    h_c = -sum(q * sp.log(q) for q in pi_c)
    mean = sum(theta) / len(theta)
    n2 = sum((t - mean) ** 2 for t in theta)
    return {"entropy": h, "correct_entropy": h_c, "effective_correct": sp.exp(h_c), "logit_norm_sq": n2,
            "logit_norm": sp.sqrt(n2), "pass_rate": sum(q for q, c in zip(pi, correct) if c)}


def _structured_forms(theta: list[sp.Expr], correct: tuple[bool, ...]) -> dict[str, tuple[list, list]]:
    """quantity -> (centred terms [(r, x)], rank-one terms [(alpha, y)]) as written in the module docstring."""
    n = len(theta)
    z = [sp.exp(t) for t in theta]
    pi = [zi / sum(z) for zi in z]
    log_pi = [t - sp.log(sum(z)) for t in theta]
    H = -sum(q * lq for q, lq in zip(pi, log_pi))
    pc = sum(q for q, c in zip(pi, correct) if c)
    pi_c = [q / pc if c else 0 for q, c in zip(pi, correct)]
    log_pi_c = [lq - sp.log(pc) if c else 0 for lq, c in zip(log_pi, correct)]
    H_c = -sum(q * lq for q, lq in zip(pi_c, log_pi_c))
    grad_h_c = [-q * (lq + H_c) for q, lq in zip(pi_c, log_pi_c)]
    x_c = [-q * (lq + H_c + 1) for q, lq in zip(pi_c, log_pi_c)]
    cz = [t - sum(theta) / n for t in theta]
    norm = sp.sqrt(sum(t**2 for t in cz))
    uniform = [sp.Rational(1, n)] * n
    return {
        "entropy": ([(pi, [-q * (lq + H + 1) for q, lq in zip(pi, log_pi)])], []),
        "correct_entropy": ([(pi_c, x_c)], []),
        "effective_correct": ([(pi_c, [sp.exp(H_c) * x for x in x_c])], [(sp.exp(H_c), grad_h_c)]),
        "logit_norm_sq": ([(uniform, [2] * n)], []),
        "logit_norm": ([(uniform, [1 / norm] * n)], [(-1 / norm**3, cz)]),
        "pass_rate": ([(pi, [q * (int(c) - pc) for q, c in zip(pi, correct)])], []),
    }


def _quadratic(v, centred, rank_one):
    out = 0
    for r, x in centred:
        rv = sum(a * b for a, b in zip(r, v))
        out += sum(xb * (vb - rv) ** 2 for xb, vb in zip(x, v))
    for alpha, y in rank_one:
        out += alpha * sum(a * b for a, b in zip(y, v)) ** 2
    return out


def _trace_cov(q, centred, rank_one):
    out = 0
    for r, x in centred:
        qr = sum(a * b for a, b in zip(q, r))
        var_r = sum(a * b**2 for a, b in zip(q, r)) - qr**2
        out += sum(xb * (qb * (1 - qb) - 2 * qb * (rb - qr) + var_r) for xb, qb, rb in zip(x, q, r))
    for alpha, y in rank_one:
        qy = sum(a * b for a, b in zip(q, y))
        out += alpha * (sum(a * b**2 for a, b in zip(q, y)) - qy**2)
    return out


def _zero(expr: sp.Expr) -> sp.Expr:
    return sp.simplify(sp.expand(sp.together(sp.expand_log(expr, force=True))))


@lru_cache(maxsize=None)
def hessian_residuals() -> dict[str, tuple[sp.Expr, sp.Expr]]:
    """quantity -> (v^T H v - structured form, tr(H Sigma_q) - structured form) against sympy's Hessian, K = 3,
    C = {1, 2}, symbolic logits (theta_3 = 0 after differentiating: softmax is shift invariant), symbolic v
    and distribution q."""
    correct = CORRECT_SETS["C = {1, 2}"]
    theta = list(sp.symbols("theta1:4", real=True))
    at = {theta[2]: 0}
    v = sp.symbols("v1:4", real=True)
    q1, q2 = sp.symbols("q1 q2", positive=True)
    q = [q1, q2, 1 - q1 - q2]
    Q = sp.Matrix(q)
    sigma = sp.diag(*q) - Q * Q.T
    forms = _structured_forms(theta, correct)
    out = {}
    for name, f in _symbolic_quantities(theta, correct).items():
        if name == "effective_correct":
            continue  # exp(H_C): the chain rule of correct_entropy's form; sympy cannot simplify the exponentials
        H = sp.hessian(f, theta)
        centred, rank_one = forms[name]
        quad = (sp.Matrix(v).T * H * sp.Matrix(v))[0] - _quadratic(v, centred, rank_one)
        trace = (H * sigma).trace() - _trace_cov(q, centred, rank_one)
        out[name] = (_zero(quad.subs(at)), _zero(trace.subs(at)))
    return out


#: a fixed prompt and advantages for the numeric check of the package's code (K = 3, G = 3, C = {1, 2})
CHECK_LOGITS = (0.5, -1 / 3, 0.2)
CHECK_CORRECT = CORRECT_SETS["C = {1, 2}"]
CHECK_ADVANTAGES = [("grpo", {}), ("psr", {}), ("nsr", {}), ("sign_balanced", {"balance": 0.5}), ("rloo", {}),
                    ("focal", {"gamma": 1.0})]


def _mp_quantities(theta: list, correct: tuple[bool, ...]) -> dict[str, Any]:
    """The drift quantities in mpmath arithmetic, straight from their definitions."""
    import mpmath

    z = [mpmath.exp(t) for t in theta]
    pi = [zi / mpmath.fsum(z) for zi in z]
    pc = mpmath.fsum(q for q, c in zip(pi, correct) if c)
    pi_c = [q / pc for q, c in zip(pi, correct) if c]
    h = -mpmath.fsum(q * mpmath.log(q) for q in pi)
    h_c = -mpmath.fsum(q * mpmath.log(q) for q in pi_c)
    mean = mpmath.fsum(theta) / len(theta)
    n2 = mpmath.fsum((t - mean) ** 2 for t in theta)
    return {"entropy": h, "correct_entropy": h_c, "effective_correct": mpmath.exp(h_c), "logit_norm_sq": n2,
            "logit_norm": mpmath.sqrt(n2), "pass_rate": pc}


@lru_cache(maxsize=None)
def package_residuals(G: int = 3) -> dict[tuple[str, str], tuple[float, float]]:
    """(advantage, quantity) -> relative error of the package's (first, second) against d/dlr and
    (1/2) d^2/dlr^2 at lr = 0 of the enumerated E[f(theta + lr g)] (all K^G outcomes, 40-digit mpmath)."""
    import mpmath

    import fadesim

    mpmath.mp.dps = 40
    theta = [mpmath.mpf(t) for t in CHECK_LOGITS]
    z = [mpmath.exp(t) for t in theta]
    pi = [zi / mpmath.fsum(z) for zi in z]
    out = {}
    for name, params in CHECK_ADVANTAGES:
        fn = fadesim.get(name, **params)
        outcomes = []  # (probability, g) for every ordered outcome
        for seq in itertools.product(range(K), repeat=G):
            rewards = np.array([[float(CHECK_CORRECT[a]) for a in seq]])
            A = [mpmath.mpf(float(x)) for x in np.asarray(fn(rewards), dtype=float)[0]]
            g = [mpmath.fsum(A[i] * (int(b == a) - pi[b]) for i, a in enumerate(seq)) / G for b in range(K)]
            outcomes.append((mpmath.fprod(pi[a] for a in seq), g))
        d = drift(name, np.array([float(t) for t in CHECK_LOGITS]), np.array(CHECK_CORRECT), G, 1.0, **params)
        for f in DRIFT_QUANTITIES:
            def expected(lr, f=f):
                return mpmath.fsum(P * _mp_quantities([t + lr * gb for t, gb in zip(theta, g)], CHECK_CORRECT)[f]
                                   for P, g in outcomes)
            first, second = float(mpmath.diff(expected, 0, 1)), float(mpmath.diff(expected, 0, 2) / 2)
            t = d[f]
            out[(name, f)] = (abs(float(t.first) - first) / max(1.0, abs(first)),
                              abs(float(t.second) - second) / max(1.0, abs(second)))
    return out


def sign_axis_table(G: int = 8) -> list[tuple[str, float, dict[str, tuple[float, float, float]]]]:
    """(label, b, {quantity: (first, second_mean, second_noise)}) for sign_balanced at b = -1, 0, +1 on the
    example prompt of the entropy law (pi = (0.45, 0.15 | 0.15, 0.1, 0.1, 0.05), first two correct)."""
    from fadesim.theory.entropy import EXAMPLE_CORRECT, EXAMPLE_LOGITS

    rows = []
    for b in (-1.0, 0.0, 1.0):
        d = drift("sign_balanced", EXAMPLE_LOGITS, EXAMPLE_CORRECT, G, 1.0, balance=b)
        rows.append((f"sign_balanced(b={b:+g})", b, {f: (float(d[f].first), float(d[f].second_mean),
                                                          float(d[f].second_noise)) for f in DRIFT_QUANTITIES}))
    return rows


def main() -> None:
    for (name, G), (r1, r2) in moment_residuals().items():
        print(f"moments, {name}, G = {G}: E[g] residual {r1}, E[g g^T] residual {r2}")
    for name, (quad, trace) in hessian_residuals().items():
        print(f"structured Hessian of {name}: quadratic-form residual {quad}, trace residual {trace}")
    worst = max(max(v) for v in package_residuals().values())
    print(f"theory.drift vs exact lr-derivatives of the enumerated expectation: max relative error {worst:.2e}")
    for label, _, terms in sign_axis_table():
        print(label, {f: tuple(round(x, 5) for x in v) for f, v in terms.items()})


if __name__ == "__main__":
    main()
