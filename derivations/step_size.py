"""Each advantage's step size in the trainer form against the simulator's (fadesim.theory.step_size), in closed form
for the sign-weighted advantages A+ = alpha, A- = -beta (PSR: 1, 0; NSR: 0, 1; REINFORCE +-1: 1, 1; W-REINFORCE:
lambda, 1; arXiv 2506.01347) on one prompt at pass rate p, k ~ Binomial(G, p) correct of G:

    w(p)    = E[(1/G) (k (1 - p) alpha + (G - k) p beta)]          = (alpha + beta) p (1 - p)
    Q(p)    = E[(1/G) (k alpha^2 + (G - k) beta^2)]                = alpha^2 p + beta^2 (1 - p)
    E[g^2]  = E[((1/G) (k (1 - p) alpha + (G - k) p beta))^2]
            = (alpha + beta)^2 p^2 (1 - p)^2 + ((1 - p) alpha - p beta)^2 p (1 - p) / G

w is the expected move of the correct logit (the signal), Q the advantage's power that a trainer's Adam on shared
weights normalises by, E[g^2] the logit's own second moment that per-entry Adam normalises by. So every
sign-weighted advantage has the same signal shape p (1 - p) and, for a trainer, speed (alpha + beta) / sqrt(alpha^2
E p + beta^2 E (1 - p)): on hard prompts (E p small) the negative side's beta costs speed, the positive side's alpha
does not. ``check`` compares each closed form with the exact enumeration of ``fadesim.theory.step_size`` at several
G and p.

    python derivations/step_size.py
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import sympy as sp

from derivations.common import G, binomial_moment_form, k, p

alpha, beta = sp.symbols("alpha beta", nonnegative=True)
#: (registry name, its parameters, alpha, beta)
SIGN_WEIGHTED = [("psr", {}, 1.0, 0.0), ("nsr", {}, 0.0, 1.0), ("reinforce", {"convention": "pm1"}, 1.0, 1.0),
                 ("w_reinforce", {"lam": 0.1}, 0.1, 1.0)]


def closed_forms() -> dict[str, sp.Expr]:
    """w(p), Q(p) and E[g^2](p) for A+ = alpha, A- = -beta, exactly (binomial factorial moments)."""
    g = (k * (1 - p) * alpha + (G - k) * p * beta) / G
    m2 = binomial_moment_form(sp.expand(g * g))
    readable = (alpha + beta)**2 * p**2 * (1 - p)**2 + ((1 - p) * alpha - p * beta)**2 * p * (1 - p) / G
    if sp.simplify(m2 - readable) != 0:  # the docstring's form: mean squared plus the binomial variance of k
        raise AssertionError(f"E[g^2] = {m2} is not {readable}")
    return {"w": sp.factor(binomial_moment_form(g)),
            "Q": sp.factor(binomial_moment_form((k * alpha**2 + (G - k) * beta**2) / G)), "m2": readable}


def trainer_ratio_nsr_over_psr() -> sp.Expr:
    """The trainer's speed of NSR over PSR on prompts of mean pass rate m (equal signals): sqrt(m / (1 - m))."""
    m = sp.symbols("m", positive=True)
    forms = closed_forms()
    q_psr = forms["Q"].subs({alpha: 1, beta: 0}).subs(p, m)
    q_nsr = forms["Q"].subs({alpha: 0, beta: 1}).subs(p, m)  # Q is linear in p: E over prompts is Q at the mean
    return sp.simplify(sp.sqrt(q_psr / q_nsr))


def check(Gs=(2, 5, 8), ps=(0.03, 0.3, 0.8)) -> float:
    """The largest relative difference between the closed forms and the exact enumeration of the registry's code."""
    from fadesim.theory.mass_profile import profile
    from fadesim.theory.signal import group_update
    from fadesim.theory.step_size import advantage_power

    forms = closed_forms()
    worst = 0.0
    for name, params, a, b in SIGN_WEIGHTED:
        prof = None
        for GG in Gs:
            prof = profile(name, GG, **params)
            for pp in ps:
                w, m2 = group_update(prof, np.array([pp]))
                q = advantage_power(prof, np.array([pp]))
                for key, got in (("w", w[0]), ("Q", q[0]), ("m2", m2[0])):
                    want = float(forms[key].subs({alpha: a, beta: b, G: GG, p: pp}))
                    worst = max(worst, abs(got - want) / max(abs(want), 1e-300))
    return worst


def main() -> None:
    for key, expr in closed_forms().items():
        print(f"{key}(p) = {expr}")
    print(f"trainer speed NSR / PSR at mean pass rate m: {trainer_ratio_nsr_over_psr()}")
    print(f"largest relative difference from exact enumeration: {check():.2e}")


if __name__ == "__main__":
    main()
