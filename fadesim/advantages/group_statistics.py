"""Masked per-group statistics over the last axis, written once for every array namespace.

All functions take ``(..., G)`` arrays plus a boolean mask of the same shape and return
``(..., 1)`` (keepdims) so results broadcast back onto the group. Masked entries never
influence a statistic. Groups with no valid rollout get count 0 and statistic 0.
"""

from __future__ import annotations

from typing import Any

import array_api_compat

from fadesim._validate import CORRECT_THRESHOLD, GroupBatch


def count(batch: GroupBatch) -> Any:
    """Number of valid rollouts per group, as floats, shape (..., 1)."""
    xp = batch.xp
    return xp.sum(xp.astype(batch.mask, batch.rewards.dtype), axis=-1, keepdims=True)


def mean(x: Any, batch: GroupBatch) -> Any:
    """Masked group mean, shape (..., 1)."""
    xp = batch.xp
    n = count(batch)
    total = xp.sum(xp.where(batch.mask, x, xp.zeros_like(x)), axis=-1, keepdims=True)
    return total / xp.maximum(n, xp.ones_like(n))


def std(x: Any, batch: GroupBatch, *, unbiased: bool = True) -> Any:
    """Masked group standard deviation (``ddof=1`` if unbiased, as torch.std), shape (..., 1).

    Computed as m * sqrt(sum((d / m)^2) / dof) with m = max |d|, so neither tiny spreads (whose
    squares would underflow to 0) nor huge ones (which would overflow) are lost.
    """
    xp = batch.xp
    n = count(batch)
    centred = xp.where(batch.mask, x - mean(x, batch), xp.zeros_like(x))
    dof = n - 1.0 if unbiased else n
    scale = xp.max(xp.abs(centred), axis=-1, keepdims=True)
    safe = xp.where(scale > 0, scale, xp.ones_like(scale))
    unit = centred / safe
    var = xp.sum(unit * unit, axis=-1, keepdims=True) / xp.maximum(dof, xp.ones_like(dof))
    return scale * xp.sqrt(var)


def maximum(x: Any, batch: GroupBatch) -> Any:
    xp = batch.xp
    low = xp.full_like(x, -float("inf"))
    return xp.max(xp.where(batch.mask, x, low), axis=-1, keepdims=True)


def minimum(x: Any, batch: GroupBatch) -> Any:
    xp = batch.xp
    high = xp.full_like(x, float("inf"))
    return xp.min(xp.where(batch.mask, x, high), axis=-1, keepdims=True)


def all_equal(x: Any, batch: GroupBatch) -> Any:
    """True for groups whose valid rewards are all equal (or that have < 2 valid rollouts)."""
    return (maximum(x, batch) == minimum(x, batch)) | (count(batch) < 2)


def median(x: Any, batch: GroupBatch) -> Any:
    """Masked group median (mean of the two middle values for an even count), shape (..., 1)."""
    xp = batch.xp
    high = xp.full_like(x, float("inf"))
    ordered = xp.sort(xp.where(batch.mask, x, high), axis=-1)
    n = xp.astype(count(batch), xp.int32)
    lo = xp.maximum((n - 1) // 2, xp.zeros_like(n))
    hi = n // 2
    pos = xp.arange(x.shape[-1], dtype=xp.int32, device=array_api_compat.device(x))
    zero = xp.zeros_like(ordered)
    lower = xp.sum(xp.where(pos == lo, ordered, zero), axis=-1, keepdims=True)
    upper = xp.sum(xp.where(pos == hi, ordered, zero), axis=-1, keepdims=True)
    return 0.5 * (lower + upper)


def correct(batch: GroupBatch, threshold: float = CORRECT_THRESHOLD) -> Any:
    """Boolean correctness of each valid rollout (reward > threshold), shape (..., G)."""
    return (batch.rewards > threshold) & batch.mask


def pass_rate(batch: GroupBatch, threshold: float = CORRECT_THRESHOLD) -> Any:
    """Empirical pass rate p_hat = k / n per group, shape (..., 1)."""
    xp = batch.xp
    k = xp.sum(xp.astype(correct(batch, threshold), batch.rewards.dtype), axis=-1, keepdims=True)
    n = count(batch)
    return k / xp.maximum(n, xp.ones_like(n))


def fail_rate(batch: GroupBatch, threshold: float = CORRECT_THRESHOLD) -> Any:
    """1 - p_hat computed as (n - k) / n, so that all-correct groups give exactly 0 on every backend
    (1 - k/n can come out as 1e-16 when a compiler turns k/n into k * (1/n)). Shape (..., 1)."""
    xp = batch.xp
    k = xp.sum(xp.astype(correct(batch, threshold), batch.rewards.dtype), axis=-1, keepdims=True)
    n = count(batch)
    return (n - k) / xp.maximum(n, xp.ones_like(n))


def centred(batch: GroupBatch) -> Any:
    """r - mean(r), exactly 0 on all-equal groups and on masked entries."""
    xp = batch.xp
    r = batch.rewards
    zero = xp.zeros_like(r)
    out = xp.where(all_equal(r, batch), zero, r - mean(r, batch))
    return xp.where(batch.mask, out, zero)


def safe_divide(numerator: Any, denominator: Any, batch: GroupBatch) -> Any:
    """numerator / denominator, 0 where the denominator is 0 (no 0/0 is ever evaluated)."""
    xp = batch.xp
    ok = denominator != 0
    one = xp.ones_like(denominator)
    return xp.where(ok, numerator / xp.where(ok, denominator, one), xp.zeros_like(numerator))


def finish(advantages: Any, batch: GroupBatch) -> Any:
    """Zero the masked entries: the contract's last step for every advantage."""
    xp = batch.xp
    return xp.where(batch.mask, advantages, xp.zeros_like(advantages))

