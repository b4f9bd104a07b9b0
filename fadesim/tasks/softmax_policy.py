"""Softmax-policy math shared by the tasks, written for a numpy-like namespace (numpy or jax.numpy).

Sampling is by inverse CDF from given uniforms, so the numpy reference and the jax simulator draw
identical rollouts when fed identical uniforms.
"""

from __future__ import annotations

from typing import Any

#: pass@k orders logged by the simulator
PASS_AT_K = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def log_softmax(logits: Any, xp: Any) -> Any:
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


def entropy(log_probs: Any, xp: Any) -> Any:
    """H = -sum_a pi(a) log pi(a) over the last axis."""
    return -xp.sum(xp.exp(log_probs) * log_probs, axis=-1)


def restricted_entropy(probs: Any, keep: Any, xp: Any) -> Any:
    """Entropy of ``probs`` (..., K) restricted to the boolean set ``keep`` and renormalised (e.g. the correct
    answers: the diversity of what the policy gets right). A set of zero probability gives 0."""
    kept = xp.where(keep, probs, 0.0)
    total = xp.sum(kept, axis=-1, keepdims=True)
    q = kept / xp.where(total > 0, total, 1.0)
    return -xp.sum(xp.where(q > 0, q * xp.log(xp.where(q > 0, q, 1.0)), 0.0), axis=-1)


def sample_categorical(log_probs: Any, u: Any, xp: Any) -> Any:
    """Index a with cdf(a-1) <= u < cdf(a); log_probs (..., K), u (...,) -> (...,) int32.

    The cdf is normalised by its last entry so rounding can never leave u above the total.
    """
    cdf = xp.cumsum(xp.exp(log_probs), axis=-1)
    cdf = cdf / cdf[..., -1:]
    index = xp.sum((u[..., None] >= cdf).astype(xp.int32), axis=-1)
    return xp.minimum(index, log_probs.shape[-1] - 1)


def gather_last(values: Any, index: Any, xp: Any) -> Any:
    """values (..., K), index (..., G) -> (..., G)."""
    return xp.take_along_axis(values, index, axis=-1)


def one_hot(index: Any, depth: int, dtype: Any, xp: Any) -> Any:
    return (index[..., None] == xp.arange(depth)).astype(dtype)


def exact_pass_at_k(pass_rate: Any, xp: Any, ks: tuple[int, ...] = PASS_AT_K) -> dict[str, Any]:
    """pass@k = 1 - (1 - p)^k per prompt, averaged over prompts: {'pass@k': scalar}."""
    fail = xp.clip(1.0 - pass_rate, 0.0, 1.0)
    return {f"pass@{k}": xp.mean(1.0 - fail**k) for k in ks}


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)
