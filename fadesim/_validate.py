"""Input checks shared by every advantage: shapes, finiteness, masks, group sizes.

Every advantage calls :func:`prepare_group_batch` first. Shape checks are static and
always run; value checks (NaN/inf) run whenever the values are concrete, which is
every call except inside ``jax.jit``/``jax.vmap`` tracing, where Python cannot look at
values. The simulator only feeds finite rewards, so nothing is lost there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

#: Rewards above this count as "correct" wherever an advantage needs correctness
#: (PSR/NSR, pass@k, focal pass rate). Binary verifiable rewards are 0/1.
CORRECT_THRESHOLD = 0.5


@dataclass(frozen=True)
class GroupBatch:
    """Validated inputs: rewards as floats, a boolean mask, and their namespace."""

    rewards: Any  # (..., G) float, masked entries set to 0
    mask: Any  # (..., G) bool
    xp: Any
    group_size: int  # static G (last axis length)


def is_traced(x: Any) -> bool:
    """True for a jax tracer (inside jit/vmap/grad), whose values cannot be inspected."""
    if not array_api_compat.is_jax_array(x):
        return False
    import jax

    return isinstance(x, jax.core.Tracer)


def _as_array(x: Any, name: str) -> Any:
    if isinstance(x, (list, tuple, int, float, bool)):
        x = np.asarray(x)
    try:
        array_api_compat.array_namespace(x)
    except TypeError as err:
        raise TypeError(f"{name} must be an array (numpy, jax or torch); got {type(x).__name__}") from err
    return x


def _constant(x: Any, xp: Any) -> Any:
    """Cut autograd: advantages are constants, no gradient flows through them."""
    if array_api_compat.is_torch_array(x):
        return x.detach()
    if array_api_compat.is_jax_array(x):
        import jax

        return jax.lax.stop_gradient(x)
    return x


def float_dtype(x: Any, xp: Any) -> Any:
    """x's dtype if it is real floating, else the namespace's default float."""
    if xp.isdtype(x.dtype, "real floating"):
        return x.dtype
    return xp.asarray(0.0).dtype


def prepare_group_batch(
    rewards: Any,
    mask: Any = None,
    *,
    name: str,
    min_group_size: int = 1,
) -> GroupBatch:
    """Check and normalise the ``(rewards, mask)`` pair of an advantage call.

    Raises ``ValueError`` naming the problem for: a 0-d array, an empty group axis,
    a group smaller than ``min_group_size``, a mask of another shape or non-boolean
    dtype, and NaN/inf among the valid (unmasked) rewards.
    """
    rewards = _as_array(rewards, "rewards")
    xp = array_api_compat.array_namespace(rewards)
    if rewards.ndim == 0:
        raise ValueError(f"{name}: rewards must have shape (..., G) with at least 1 dimension; got a 0-d array")
    group_size = int(rewards.shape[-1])
    if group_size == 0:
        raise ValueError(f"{name}: rewards has an empty group axis (G = 0)")
    if group_size < min_group_size:
        raise ValueError(
            f"{name}: group size G = {group_size} is too small; this advantage needs at least "
            f"{min_group_size} rollouts per group"
        )
    rewards = xp.astype(_constant(rewards, xp), float_dtype(rewards, xp))
    device = array_api_compat.device(rewards)
    if mask is None:
        mask = xp.ones(rewards.shape, dtype=xp.bool, device=device)
    else:
        mask = _as_array(mask, "mask")
        if tuple(mask.shape) != tuple(rewards.shape):
            raise ValueError(
                f"{name}: mask shape {tuple(mask.shape)} does not match rewards shape {tuple(rewards.shape)}"
            )
        if not xp.isdtype(mask.dtype, "bool"):
            raise ValueError(f"{name}: mask must be boolean; got dtype {mask.dtype}")
        mask = _constant(xp.asarray(mask, device=device), xp)
    if not is_traced(rewards) and not is_traced(mask):
        finite = xp.isfinite(rewards) | ~mask
        if not bool(xp.all(finite)):
            bad = int(xp.sum(xp.astype(~finite, xp.int32)))
            raise ValueError(f"{name}: rewards contain {bad} NaN or inf value(s) among valid rollouts")
    rewards = xp.where(mask, rewards, xp.zeros_like(rewards))
    return GroupBatch(rewards=rewards, mask=mask, xp=xp, group_size=group_size)


def prepare_companion(x: Any, batch: GroupBatch, *, name: str, what: str) -> Any:
    """Check an array that rides along with the rewards (e.g. per-rollout log-probs)."""
    if x is None:
        raise ValueError(f"{name}: this advantage needs {what} (an array shaped like rewards); got None")
    x = _as_array(x, what)
    xp = batch.xp
    if tuple(x.shape) != tuple(batch.rewards.shape):
        raise ValueError(f"{name}: {what} shape {tuple(x.shape)} does not match rewards shape {tuple(batch.rewards.shape)}")
    x = xp.astype(_constant(x, xp), batch.rewards.dtype)
    if not is_traced(x):
        if not bool(xp.all(xp.isfinite(x) | ~batch.mask)):
            raise ValueError(f"{name}: {what} contain NaN or inf among valid rollouts")
    return xp.where(batch.mask, x, xp.zeros_like(x))


def require_signal(signals: Any, key: str, *, name: str) -> Any:
    """Read one training signal (entropy, initial entropy, step, ...) or fail clearly."""
    if signals is None:
        raise KeyError(f"{name}: this advantage reads training signals; pass signals={{'{key}': ...}}")
    if key not in signals:
        raise KeyError(f"{name}: signals is missing '{key}' (got keys {sorted(signals)})")
    return signals[key]
