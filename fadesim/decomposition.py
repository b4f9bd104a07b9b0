"""Sign x difficulty decomposition of an advantage batch into positive and negative gradient mass.

The framework of arXiv 2607.01490 (DESIGN.md section 3), computed exactly on any backend:
per group g, positive mass M+_g = sum of A_i over A_i > 0 and negative mass M-_g = sum of |A_i|
over A_i < 0; in total, the sign balance b = (M+ - M-)/(M+ + M-); along the difficulty axis, the
mass binned by the group's pass rate p_hat = k/n, its mass-weighted hardness E_m[1 - p_hat], and
the effective sample size ESS = (sum_g m_g)^2 / sum_g m_g^2 of the per-group masses m_g = M+_g + M-_g.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import array_api_compat

from fadesim._validate import CORRECT_THRESHOLD, prepare_companion, prepare_group_batch
from fadesim.advantages import group_statistics as gs


class MassDecomposition(NamedTuple):
    """Result of :func:`decompose` (a NamedTuple, so a jax pytree: it can leave ``jax.jit``).

    Per-group fields have the batch's leading shape ``(...)``; totals are 0-d; binned fields are
    ``(bins,)`` over equal-width pass-rate bins [0, 1/B), ..., [(B-1)/B, 1] (p_hat = 1 in the last).
    With no mass at all, balance, hardness and ESS are 0 (finite, documented), never NaN.
    """

    positive_mass: Any  # (...,) M+ per group
    negative_mass: Any  # (...,) M- per group
    pass_rate: Any  # (...,) p_hat per group
    total_positive: Any  # () sum of M+
    total_negative: Any  # () sum of M-
    balance: Any  # () (M+ - M-) / (M+ + M-), in [-1, 1]
    binned_positive: Any  # (bins,) M+ by pass-rate bin
    binned_negative: Any  # (bins,) M- by pass-rate bin
    hardness: Any  # () mass-weighted mean of 1 - p_hat
    ess: Any  # () effective number of groups carrying the mass


def decompose(
    advantages: Any,
    rewards: Any,
    *,
    mask: Any = None,
    bins: int = 10,
    threshold: float = CORRECT_THRESHOLD,
) -> MassDecomposition:
    """Decompose ``advantages`` (..., G) of groups with ``rewards`` (..., G) into signed, binned mass.

    A rollout is correct when its reward exceeds ``threshold``; masked rollouts are ignored.
    Works on numpy, jax (also under jit/vmap) and torch; returns arrays of the input's namespace.
    """
    if int(bins) < 1:
        raise ValueError(f"decompose: bins must be a positive integer; got {bins}")
    batch = prepare_group_batch(rewards, mask, name="decompose")
    adv = prepare_companion(advantages, batch, name="decompose", what="advantages")
    xp = batch.xp
    zero = xp.zeros_like(adv)
    m_pos = xp.sum(xp.where(adv > 0, adv, zero), axis=-1)
    m_neg = xp.sum(xp.where(adv < 0, -adv, zero), axis=-1)
    p_hat = gs.pass_rate(batch, threshold)[..., 0]
    total_pos, total_neg = xp.sum(m_pos), xp.sum(m_neg)
    total = total_pos + total_neg
    mass = m_pos + m_neg

    def ratio(num: Any, den: Any) -> Any:
        ok = den > 0
        return xp.where(ok, num / xp.where(ok, den, xp.ones_like(den)), xp.zeros_like(num))

    index = xp.astype(xp.floor(p_hat * bins), xp.int32)
    index = xp.minimum(index, xp.full_like(index, bins - 1))
    flat_index = xp.reshape(index, (-1,))
    one_hot = flat_index[:, None] == xp.arange(bins, dtype=xp.int32, device=array_api_compat.device(adv))[None, :]
    zeros_b = xp.zeros(one_hot.shape, dtype=adv.dtype, device=array_api_compat.device(adv))
    binned_pos = xp.sum(xp.where(one_hot, xp.reshape(m_pos, (-1,))[:, None], zeros_b), axis=0)
    binned_neg = xp.sum(xp.where(one_hot, xp.reshape(m_neg, (-1,))[:, None], zeros_b), axis=0)
    return MassDecomposition(
        positive_mass=m_pos,
        negative_mass=m_neg,
        pass_rate=p_hat,
        total_positive=total_pos,
        total_negative=total_neg,
        balance=ratio(total_pos - total_neg, total),
        binned_positive=binned_pos,
        binned_negative=binned_neg,
        hardness=ratio(xp.sum(mass * (1.0 - p_hat)), total),
        ess=ratio(total * total, xp.sum(mass * mass)),
    )

