"""Softmax-policy math shared by the tasks, written for a numpy-like namespace (numpy or jax.numpy).

Sampling is by inverse CDF from given uniforms, so the numpy reference and the jax simulator draw
identical rollouts when fed identical uniforms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: pass@k orders logged by the simulator: k = 1, 2, 4, ..., 1024 (their mean is ``pass_at_k_auc``)
PASS_AT_K = tuple(2**j for j in range(11))

#: up to this many answers, sampling compares u with the whole cdf (O(G K), fastest at small K on CPU); above it,
#: the answers are searched in blocks of this many (``sample_categorical``).
SMALL_K = 64

#: a prompt whose pass rate is below this is "unsolved" (the simulator's ``unsolved`` metric)
UNSOLVED_PASS_RATE = 1e-3


def log_softmax(logits: Any, xp: Any) -> Any:
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


def entropy(log_probs: Any, xp: Any) -> Any:
    """H = -sum_a pi(a) log pi(a) over the last axis."""
    return -xp.sum(xp.exp(log_probs) * log_probs, axis=-1)


def effective_rank(singular_values: Any, xp: Any) -> Any:
    """exp(entropy of the normalised singular values): the effective rank of a matrix (Roy & Vetterli, 2007)."""
    q = singular_values / xp.sum(singular_values)
    return xp.exp(-xp.sum(xp.where(q > 0, q * xp.log(xp.where(q > 0, q, 1.0)), 0.0)))


def restricted_entropy(probs: Any, keep: Any, xp: Any) -> Any:
    """Entropy of ``probs`` (..., K) restricted to the boolean set ``keep`` and renormalised (e.g. the correct
    answers: the diversity of what the policy gets right). A set of zero probability gives 0."""
    kept = xp.where(keep, probs, 0.0)
    total = xp.sum(kept, axis=-1, keepdims=True)
    q = kept / xp.where(total > 0, total, 1.0)
    return -xp.sum(xp.where(q > 0, q * xp.log(xp.where(q > 0, q, 1.0)), 0.0), axis=-1)


def sample_categorical(log_probs: Any, u: Any, xp: Any) -> Any:
    """Index a with cdf(a-1) <= u total < cdf(a); log_probs (..., K), u (..., G) -> (..., G) int32.

    ``log_probs``' leading axes are those of ``u`` without its last: one distribution serves the G draws of a
    prompt. u is scaled by the total probability (the cdf's last entry), so rounding can never leave it above the
    total. Up to SMALL_K answers the index is the direct count of cdf entries <= u total (O(G K), which vectorises
    best there). Above it, in two levels: the answers are cut into blocks of SMALL_K, u total is located among the
    blocks' cumulative sums (O(K / SMALL_K) per draw), and then inside the G chosen blocks alone (O(SMALL_K) per
    draw): O(K + G (K / SMALL_K + SMALL_K)) per prompt, and no cumulative sum over all K answers (XLA's CPU cumsum
    over K = 4096 answers cost 150 ms of the 190 ms the previous binary-search sampler took for 8 x 512 prompts;
    the two levels take 95 ms, measured on 2 cores). The two levels sum in another order than one cumsum, so a
    draw can differ from the direct count's where u total lies within rounding of a cdf boundary; numpy and jax
    run this same code.
    """
    K = log_probs.shape[-1]
    probs = xp.exp(log_probs)
    if K <= SMALL_K:  # a few comparisons per draw vectorise better than two levels
        cdf = xp.cumsum(probs, axis=-1)
        target = u * cdf[..., -1:]
        index = xp.sum((target[..., None] >= cdf[..., None, :]).astype(xp.int32), axis=-1)
        return xp.minimum(index, K - 1)
    S = SMALL_K
    B = -(-K // S)
    if B * S != K:  # pad with zero-probability answers, never drawn (clamped below)
        probs = xp.concatenate([probs, xp.zeros((*probs.shape[:-1], B * S - K), dtype=probs.dtype)], axis=-1)
    blocks = xp.reshape(probs, (*probs.shape[:-1], B, S))
    block_cdf = xp.cumsum(xp.sum(blocks, axis=-1), axis=-1)  # (..., B)
    target = u * block_cdf[..., -1:]  # (..., G)
    b = xp.minimum(xp.sum((target[..., None] >= block_cdf[..., None, :]).astype(xp.int32), axis=-1), B - 1)
    before = xp.take_along_axis(block_cdf, xp.maximum(b - 1, 0), axis=-1)
    start = xp.where(b > 0, before, xp.zeros_like(before))
    chosen = xp.take_along_axis(blocks, b[..., None], axis=-2)  # (..., G, S): the drawn blocks only
    within = xp.cumsum(chosen, axis=-1) + start[..., None]
    inner = xp.minimum(xp.sum((target[..., None] >= within).astype(xp.int32), axis=-1), S - 1)
    return xp.minimum(b * S + inner, K - 1)


def weighted_counts(index: Any, weights: Any, depth: int, xp: Any) -> Any:
    """sum_g weights[..., g] [index[..., g] == a] for a < depth: (..., G) -> (..., depth), by scatter-add.

    The same sums as ``sum(weights[..., None] * one_hot(index, depth), axis=-2)``, in O(G + depth) per row
    instead of O(G depth): numpy's ``add.at`` or jax's ``.at[].add``, both adding in rollout order. On XLA's CPU
    the scatter-add is 3x faster than the one-hot sums at K = 32 (``benchmarks/simulator.py --breakdown``).
    """
    lead = index.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    flat_index = xp.reshape(index, (rows, index.shape[-1]))
    flat_w = xp.reshape(weights, (rows, index.shape[-1]))
    row = xp.broadcast_to(xp.arange(rows)[:, None], flat_index.shape)
    if xp is np:
        out = np.zeros((rows, depth), dtype=flat_w.dtype)
        np.add.at(out, (row, flat_index), flat_w)
    else:
        out = xp.zeros((rows, depth), dtype=flat_w.dtype).at[row, flat_index].add(flat_w)
    return xp.reshape(out, (*lead, depth))


def gather_last(values: Any, index: Any, xp: Any) -> Any:
    """values (..., K), index (..., G) -> (..., G)."""
    return xp.take_along_axis(values, index, axis=-1)


def one_hot(index: Any, depth: int, dtype: Any, xp: Any) -> Any:
    return (index[..., None] == xp.arange(depth)).astype(dtype)


def prompt_mean(xp: Any, mask: Any = None) -> Any:
    """x -> its mean over all entries (``xp.mean`` itself), or over those where ``mask`` (x's shape, bool) is True:
    the prompts a metric is measured on, the rollouts of the groups a step drew."""
    if mask is None:
        return xp.mean
    return lambda x: xp.sum(xp.where(mask, x, 0.0)) / xp.sum(mask.astype(x.dtype))


def exact_pass_at_k(pass_rate: Any, xp: Any, ks: tuple[int, ...] = PASS_AT_K, mask: Any = None) -> dict[str, Any]:
    """pass@k = 1 - (1 - p)^k per prompt, averaged over prompts (those of ``mask`` where given): {'pass@k': scalar};
    with the default ks also ``pass_at_k_auc``, the mean of pass@k over log2 k = 0, 1, ..., 10 (k = 1 to 1024,
    equally spaced in log k: the accuracy-diversity summary), and ``unsolved``, the fraction of prompts with
    p < UNSOLVED_PASS_RATE."""
    mean = prompt_mean(xp, mask)
    fail = xp.clip(1.0 - pass_rate, 0.0, 1.0)
    out = {f"pass@{k}": mean(1.0 - fail**k) for k in ks}
    if tuple(ks) == PASS_AT_K:
        out["pass_at_k_auc"] = sum(out[f"pass@{k}"] for k in ks) / len(ks)
        out["unsolved"] = mean((pass_rate < UNSOLVED_PASS_RATE).astype(pass_rate.dtype))
    return out


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)
