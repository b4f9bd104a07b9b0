"""Sign-weighted advantages (REINFORCE, PSR, NSR, W-REINFORCE, sign_balanced, asymmetric baseline).

    REINFORCE (+-1)    A+ = 1,        A- = -1                  (arXiv 2506.01347)
    PSR / NSR          A+ = 1, A- = 0 / A+ = 0, A- = -1       (arXiv 2506.01347)
    W-REINFORCE        A+ = lam,      A- = -1                  (arXiv 2506.01347)
    sign_balanced      A+ = 1 + b,    A- = -(1 - b)            (the sign axis at fixed mass, arXiv 2607.01490)
    asymmetric         A+ = 1 - k/G + delta, A- = -k/G + delta (arXiv 2506.20520)
Their expected masses are polynomials in p: E[M+] = G p A+, E[M-] = G (1 - p) |A-| for the constant ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

from derivations.common import Derivation, G, k, large_group_limit, p

lam, b, delta = sp.symbols("lambda b delta", real=True)
always = lambda kk, GG: kk == kk  # noqa: E731 - not centred: all-equal groups keep their mass

DERIVATIONS = [
    Derivation("reinforce", "sign-weighted", a_pos=sp.Integer(1), a_neg=sp.Integer(0), informative=always,
               large_g_pos=p, large_g_neg=sp.Integer(0), note="0/1 rewards: A = r."),
    Derivation("reinforce", "sign-weighted", a_pos=sp.Integer(1), a_neg=sp.Integer(-1), informative=always,
               params={"convention": "pm1"}, large_g_pos=p, large_g_neg=1 - p),
    Derivation("psr", "sign-weighted", a_pos=sp.Integer(1), a_neg=sp.Integer(0), informative=always,
               large_g_pos=p, large_g_neg=sp.Integer(0)),
    Derivation("nsr", "sign-weighted", a_pos=sp.Integer(0), a_neg=sp.Integer(-1), informative=always,
               large_g_pos=sp.Integer(0), large_g_neg=1 - p),
    Derivation("w_reinforce", "sign-weighted", a_pos=lam, a_neg=sp.Integer(-1), informative=always,
               params={"lam": 0.1}, substitutions={lam: 0.1}, large_g_pos=lam * p, large_g_neg=1 - p),
    Derivation("sign_balanced", "sign-weighted", a_pos=1 + b, a_neg=-(1 - b), informative=always,
               params={"balance": 0.5}, substitutions={b: 0.5}, large_g_pos=(1 + b) * p, large_g_neg=(1 - b) * (1 - p)),
    Derivation("asymmetric", "sign-weighted", a_pos=1 - k / G + delta, a_neg=-k / G + delta,
               params={"delta": 0.1}, substitutions={delta: 0.1},
               informative=lambda kk, GG: kk == kk,
               large_g_pos=lambda: large_group_limit((k / G) * (1 - k / G)) + delta * p,
               large_g_neg=lambda: large_group_limit((1 - k / G) * (k / G)) - delta * (1 - p),
               note="All-equal groups give A = delta on every rollout. Limits valid while delta < p (no sign flip)."),
]


def main() -> None:
    for d in DERIVATIONS:
        print(f"{d.label}: A+ = {d.a_pos}, A- = {d.a_neg}; per rollout: +{d.limit_pos}, -{d.limit_neg}")


if __name__ == "__main__":
    main()
