"""FADE (arXiv 2607.01490, our reconstruction) at a fixed entropy ratio eta = H/H0, with the registry defaults.

    gamma(eta) = gamma_exploit + (gamma_explore - gamma_exploit) eta,  lam_neg(eta) likewise,
    A+ = (1 - k/G)^gamma(eta) x GRPO's A+,  A- = lam_neg(eta) (1 - k/G)^gamma(eta) x GRPO's A-
With the refined defaults (gamma = 0, lam_neg 0.25 at eta = 1 -> 0.75 at eta = 0) the large-G sign balance is
(1 - lam_neg)/(1 + lam_neg): 0.6 while exploring, 1/7 when exploiting.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

from derivations.common import Derivation, G, deferred_limit, k
from derivations.group_relative import eps, std_unbiased

eta = sp.Symbol("eta", nonnegative=True)
import fadesim  # noqa: E402 - after the symbols this derivation shares with the others

_D = fadesim.info("fade").params  # the derivation follows the registry's defaults
GAMMA_EXPLORE, GAMMA_EXPLOIT = _D["gamma_explore"], _D["gamma_exploit"]
LAM_EXPLORE, LAM_EXPLOIT = _D["lam_neg_explore"], _D["lam_neg_exploit"]
gamma_t = GAMMA_EXPLOIT + (GAMMA_EXPLORE - GAMMA_EXPLOIT) * eta
lam_neg_t = LAM_EXPLOIT + (LAM_EXPLORE - LAM_EXPLOIT) * eta
weight = (1 - k / G) ** gamma_t


def build(eta_value: float) -> Derivation:
    a_pos = weight * (1 - k / G) / (std_unbiased + eps)
    a_neg = -lam_neg_t * weight * (k / G) / (std_unbiased + eps)
    return Derivation(
        "fade", "FADE", a_pos=a_pos, a_neg=a_neg, params={"eta": eta_value},
        substitutions={eps: 1e-6, eta: eta_value},
        signals={"entropy": eta_value, "initial_entropy": 1.0},
        large_g_pos=deferred_limit(((k / G) * weight * (1 - k / G) / std_unbiased).subs(eta, eta_value)),
        large_g_neg=deferred_limit(((1 - k / G) * lam_neg_t * weight * (k / G) / std_unbiased).subs(eta, eta_value)),
    )


DERIVATIONS = [build(1.0), build(0.5), build(0.0)]


def main() -> None:
    for d in DERIVATIONS:
        print(f"fade at eta = {d.params['eta']}: per rollout +{d.limit_pos}, -{d.limit_neg}")


if __name__ == "__main__":
    main()
