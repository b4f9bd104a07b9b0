"""Planted advantages for the property checker: a sound one, a plain user function with and without
@fadesim.advantage, and functions each broken in one way (a bug trainers have shipped)."""

import array_api_compat
import numpy as np

import fadesim
from fadesim.advantages.domains import NON_NEGATIVE


def _centred(rewards, mask):
    xp = array_api_compat.array_namespace(rewards)
    if mask is None:
        mask = xp.ones(rewards.shape, dtype=xp.bool)
    m = xp.astype(mask, rewards.dtype)
    n = xp.maximum(xp.sum(m, axis=-1, keepdims=True), xp.ones_like(rewards[..., :1]))
    mean = xp.sum(rewards * m, axis=-1, keepdims=True) / n
    return xp, xp.where(mask, rewards - mean, xp.zeros_like(rewards)), mask


def sound(rewards, *, mask=None, signals=None, logprobs=None):
    """Dr.GRPO written by a user, correctly: centred, masked, finite; raises on bad input."""
    if getattr(rewards, "ndim", 0) == 0:
        raise ValueError("rewards must be (..., G)")
    if mask is not None and tuple(mask.shape) != tuple(rewards.shape):
        raise ValueError("mask shape does not match")
    xp = array_api_compat.array_namespace(rewards)
    if not (array_api_compat.is_jax_array(rewards) and "Tracer" in type(rewards).__name__):
        if not bool(xp.all(xp.isfinite(rewards))):
            raise ValueError("rewards contain NaN or inf")
    if array_api_compat.is_torch_array(rewards):
        rewards = rewards.detach()
    xp, c, mask = _centred(rewards, mask)
    r = xp.where(mask, rewards, xp.zeros_like(rewards))
    hi = xp.max(xp.where(mask, r, xp.full_like(r, -float("inf"))), axis=-1, keepdims=True)
    lo = xp.min(xp.where(mask, r, xp.full_like(r, float("inf"))), axis=-1, keepdims=True)
    return xp.where(hi == lo, xp.zeros_like(c), c)


sound.__fadesim__ = {"mean_centred": True}


def nan_on_ties(rewards, *, mask=None, signals=None, logprobs=None):
    """GRPO without eps or a degenerate-group guard: 0/0 on all-equal groups."""
    out = sound(rewards, mask=mask)
    xp = array_api_compat.array_namespace(out)
    return (rewards - xp.mean(rewards, axis=-1, keepdims=True)) / xp.std(rewards, axis=-1, keepdims=True) + 0 * out


def not_equivariant(rewards, *, mask=None, signals=None, logprobs=None):
    """Baseline is the group's first reward: depends on the order of the rollouts."""
    out = sound(rewards, mask=mask)
    return out + 0.5 * (rewards - rewards[..., :1]) * 0 + 0.1 * (rewards[..., :1] - rewards[..., -1:])


def numpy_only(rewards, *, mask=None, signals=None, logprobs=None):
    """Uses numpy calls: converts jax/torch inputs to numpy (or fails under jit)."""
    r = np.asarray(rewards)
    if np.any(~np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf")
    return r - r.mean(axis=-1, keepdims=True)


def ignores_mask(rewards, *, mask=None, signals=None, logprobs=None):
    """Accepts a mask but averages over every entry, padding included."""
    sound(rewards, mask=None)
    xp = array_api_compat.array_namespace(rewards)
    r = rewards.detach() if array_api_compat.is_torch_array(rewards) else rewards
    return r - xp.mean(r, axis=-1, keepdims=True)


def claims_centred(rewards, *, mask=None, signals=None, logprobs=None):
    """Declares mean-centred but adds a constant (an asymmetric baseline in disguise)."""
    out = sound(rewards, mask=mask)
    xp = array_api_compat.array_namespace(out)
    return xp.where(mask if mask is not None else xp.ones(out.shape, dtype=xp.bool), out + 0.1, out)


claims_centred.__fadesim__ = {"mean_centred": True}


def wrong_signature(x, y):
    return x - y


NOT_A_FUNCTION = 3


def plain_centred(rewards, *, mask=None, signals=None, logprobs=None):
    """Mean-centring as a user writes it: correct mathematics (masks included), no validation, no detaching."""
    xp = array_api_compat.array_namespace(rewards)
    m = xp.ones_like(rewards) if mask is None else xp.astype(mask, rewards.dtype)
    n = xp.maximum(xp.sum(m, axis=-1, keepdims=True), xp.ones_like(rewards[..., :1]))
    return (rewards - xp.sum(rewards * m, axis=-1, keepdims=True) / n) * m


def _validated(rewards, mask):
    """sound()'s input checks, so that a planted bug below is the only thing wrong with its function."""
    return sound(rewards, mask=mask)


def rloo_zero_singletons(rewards, *, mask=None, signals=None, logprobs=None):
    """RLOO whose leave-one-out mean is guarded against G - 1 = 0: groups of one silently get 0."""
    c = _validated(rewards, mask)
    xp = array_api_compat.array_namespace(c)
    m = xp.ones_like(c) if mask is None else xp.astype(mask, c.dtype)
    n = xp.sum(m, axis=-1, keepdims=True)
    return c * n / xp.maximum(n - 1.0, xp.ones_like(n))


def grpo_float32_residue(rewards, *, mask=None, signals=None, logprobs=None):
    """GRPO that divides by std + 1e-6 with no guard for ties: float32 rounding of the mean becomes O(1)."""
    _validated(rewards, mask)
    xp = array_api_compat.array_namespace(rewards)
    r = rewards.detach() if array_api_compat.is_torch_array(rewards) else rewards
    c = r - xp.mean(r, axis=-1, keepdims=True)
    return c / (xp.sqrt(xp.mean(c * c, axis=-1, keepdims=True)) + 1e-6)


def relative_to_mean(rewards, *, mask=None, signals=None, logprobs=None):
    """A 'relative' advantage (r - mean) / |mean| written as (r - mean) / mean: a negative mean flips every sign."""
    c = _validated(rewards, mask)
    xp = array_api_compat.array_namespace(c)
    r = rewards.detach() if array_api_compat.is_torch_array(rewards) else rewards
    mean = r - c[..., :1] * 0 - (r - xp.mean(r, axis=-1, keepdims=True))  # the group mean, broadcast
    return xp.where(mean == 0, c, c / xp.where(mean == 0, xp.ones_like(mean), mean))


def masked_in_baseline(rewards, *, mask=None, signals=None, logprobs=None):
    """Zeroes padded rollouts' advantages but keeps their rewards in the group mean (the baseline)."""
    _validated(rewards, mask)
    xp = array_api_compat.array_namespace(rewards)
    r = rewards.detach() if array_api_compat.is_torch_array(rewards) else rewards
    out = r - xp.mean(r, axis=-1, keepdims=True)
    return out if mask is None else xp.where(mask, out, xp.zeros_like(out))


def through_numpy(rewards, *, mask=None, signals=None, logprobs=None):
    """Correct, validated mean-centring computed in numpy and handed back as a CPU tensor: on CUDA rewards the
    advantages land on the CPU (the device_preserved contract item; only a GPU machine can run it)."""
    c = np.asarray(_validated(np.asarray(rewards.detach().cpu() if hasattr(rewards, "detach") else rewards),
                              None if mask is None else np.asarray(mask.cpu() if hasattr(mask, "cpu") else mask)))
    if array_api_compat.is_torch_array(rewards):
        import torch

        return torch.asarray(c, dtype=rewards.dtype)
    return array_api_compat.array_namespace(rewards).asarray(c, dtype=rewards.dtype)


through_numpy.__fadesim__ = {"mean_centred": True}

#: the same function, decorated: it now meets the contract (validation, groups of one refused, constants)
decorated_centred = fadesim.advantage(plain_centred)
#: decorated, the numpy detour's result is copied back to the rewards' device
decorated_through_numpy = fadesim.advantage(through_numpy, mean_centred=True)


def unchecked_domain(rewards, *, mask=None, signals=None, logprobs=None, scale=1.0):
    """Declares scale >= 0 but never checks it: scale = -1 silently flips every advantage's sign."""
    return scale * sound(rewards, mask=mask)


unchecked_domain.__fadesim__ = {"mean_centred": True, "domains": {"scale": NON_NEGATIVE}}
