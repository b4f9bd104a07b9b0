"""Group-relative advantages (GRPO, Dr.GRPO, RLOO, median-centred): closed forms for binary rewards.

With k correct of G, mean reward k/G and unbiased std s = sqrt(k (G - k) / (G (G - 1))):
    GRPO      A+ = (1 - k/G) / (s + eps),  A- = -(k/G) / (s + eps)            (arXiv 2402.03300)
    Dr.GRPO   A+ = 1 - k/G,                A- = -k/G                          (arXiv 2503.20783)
    RLOO      A+ = G/(G-1) (1 - k/G),      A- = -G/(G-1) k/G                  (arXiv 2402.14740)
    median    A+ = (1 - med)/(s + eps),    A- = -med/(s + eps), med = 0 if k < G/2, 1 if k > G/2, 1/2 if k = G/2
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

from derivations.common import Derivation, G, binomial_moment_form, deferred_limit, k, p

eps = sp.Symbol("epsilon", nonnegative=True)
std_unbiased = sp.sqrt(k * (G - k) / (G * (G - 1)))
median_value = sp.Piecewise((0, k < G / 2), (1, k > G / 2), (sp.Rational(1, 2), True))

DERIVATIONS = [
    Derivation("grpo", "group-relative", a_pos=(1 - k / G) / (std_unbiased + eps), a_neg=-(k / G) / (std_unbiased + eps),
               substitutions={eps: 1e-6},
               large_g_pos=deferred_limit((k / G) * (1 - k / G) / std_unbiased),
               large_g_neg=deferred_limit((1 - k / G) * (k / G) / std_unbiased),
               note="E[M+-] has no closed form (the std is a square root); exact finite sum. Limits at eps = 0."),
    Derivation("dr_grpo", "group-relative", a_pos=1 - k / G, a_neg=-k / G,
               large_g_pos=deferred_limit((k / G) * (1 - k / G)), large_g_neg=deferred_limit((1 - k / G) * (k / G))),
    Derivation("rloo", "group-relative", a_pos=G / (G - 1) * (1 - k / G), a_neg=-G / (G - 1) * k / G,
               large_g_pos=deferred_limit((k / G) * G / (G - 1) * (1 - k / G)),
               large_g_neg=deferred_limit((1 - k / G) * G / (G - 1) * k / G)),
    Derivation("median", "group-relative", a_pos=(1 - median_value) / (std_unbiased + eps),
               a_neg=-median_value / (std_unbiased + eps), substitutions={eps: 1e-6},
               large_g_pos=sp.Piecewise((sp.sqrt(p / (1 - p)), p < sp.Rational(1, 2)), (0, True)),
               large_g_neg=sp.Piecewise((sp.sqrt((1 - p) / p), p > sp.Rational(1, 2)), (0, True)),
               note="Not mean-centred: mass is all positive on hard prompts (p < 1/2), all negative on easy ones."),
]

#: exact closed forms of E[M+] (= E[M-]) where sympy finds them
CLOSED_FORMS = {
    "dr_grpo": binomial_moment_form(k * (1 - k / G)),
    "rloo": sp.factor(G / (G - 1) * binomial_moment_form(k * (1 - k / G))),
}


def main() -> None:
    for d in DERIVATIONS:
        print(f"{d.label}: A+ = {d.a_pos}, A- = {d.a_neg}")
        print(f"   G -> oo mass per rollout: positive {d.limit_pos}, negative {d.limit_neg}")
    for name, form in CLOSED_FORMS.items():
        print(f"{name}: E[M+] = E[M-] = {form}")


if __name__ == "__main__":
    main()
