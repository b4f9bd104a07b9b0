"""Composable weightings of a base advantage: the pieces FADE and F-GRPO are built from.

Each piece is a pure function of arrays that multiplies an advantage; a user's new
advantage can reuse them the same way (optax-style composition instead of flags).
"""

from __future__ import annotations

from typing import Any


def focal_weight(fail_rate: Any, gamma: Any, xp: Any) -> Any:
    """Focal difficulty weight w = (1 - p)^gamma, given the fail rate 1 - p: gamma = 0 is flat, large gamma
    focuses on hard prompts.

    Shapes: fail_rate (..., 1) in [0, 1] (use ``group_statistics.fail_rate``, exact at 0); gamma a scalar
    (Python or array, may be traced). (1 - p)^0 is 1 even at p = 1, so gamma = 0 leaves the base unchanged.
    """
    return xp.maximum(fail_rate, xp.zeros_like(fail_rate)) ** gamma


def sign_weight(advantages: Any, lam_pos: Any, lam_neg: Any, xp: Any) -> Any:
    """Scale positive entries by lam_pos and negative ones by lam_neg: lam_pos [A > 0] + lam_neg [A < 0].

    Shapes: advantages (..., G); lam_pos, lam_neg scalars. Zeros stay zero.
    """
    zero = xp.zeros_like(advantages)
    pos = xp.where(advantages > 0, advantages * lam_pos, zero)
    neg = xp.where(advantages < 0, advantages * lam_neg, zero)
    return pos + neg
