"""Difficulty-weighted advantages: focal (F-GRPO) and risk-sensitive (RS-GRPO).

    focal (arXiv 2602.06717):          A+- = (1 - k/G)^gamma x GRPO's A+-
    risk_sensitive (arXiv 2509.24261): with m = (k e^beta + G - k)/G,
        A+ = (e^beta / m - 1)/beta,  A- = (1/m - 1)/beta
Focal mass per rollout tends to (1 - p)^gamma sqrt(p (1 - p)), which peaks at p* = 1/(2 gamma + 2): gamma = 0
is GRPO's medium focus (p* = 1/2), large gamma moves the peak to hard prompts.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python derivations/<script>.py` from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sympy as sp

from derivations.common import Derivation, G, deferred_limit, k, p
from derivations.group_relative import eps, std_unbiased

gamma, beta = sp.symbols("gamma beta", positive=True)
grpo_pos = (1 - k / G) / (std_unbiased + eps)
grpo_neg = -(k / G) / (std_unbiased + eps)
mean_exp = (k * sp.exp(beta) + G - k) / G

focal_limit = deferred_limit((k / G) * (1 - k / G) ** gamma * (1 - k / G) / std_unbiased)
focal_peak = sp.solve(sp.diff(sp.log((1 - p) ** gamma * sp.sqrt(p * (1 - p))), p), p)[0]


def build(gamma_value: float = 1.0, beta_value: float = 2.0) -> list[Derivation]:
    return [
        Derivation("focal", "difficulty", a_pos=(1 - k / G) ** gamma * grpo_pos, a_neg=(1 - k / G) ** gamma * grpo_neg,
                   params={"gamma": gamma_value}, substitutions={eps: 1e-6, gamma: gamma_value},
                   large_g_pos=focal_limit, large_g_neg=focal_limit,
                   note=f"Large-G peak of the mass at p* = {focal_peak}."),
        Derivation("risk_sensitive", "difficulty", a_pos=(sp.exp(beta) / mean_exp - 1) / beta,
                   a_neg=(1 / mean_exp - 1) / beta, params={"beta": beta_value}, substitutions={beta: beta_value},
                   large_g_pos=deferred_limit((k / G) * (sp.exp(beta) / mean_exp - 1) / beta),
                   large_g_neg=deferred_limit((1 - k / G) * (1 - 1 / mean_exp) / beta)),
    ]


DERIVATIONS = build()


def main() -> None:
    for d in DERIVATIONS:
        print(f"{d.label}: A+ = {d.a_pos}, A- = {d.a_neg}; per rollout: +{d.limit_pos}, -{d.limit_neg}")
    print(f"focal peak of the large-G mass: p* = {focal_peak}")


if __name__ == "__main__":
    main()
