"""Difficulty-axis advantages: focal (F-GRPO), pass@k (analytic and PKPO), risk-sensitive (RS-GRPO).

They decide which prompts, by pass rate p, carry the gradient mass (the difficulty axis of
arXiv 2607.01490). Shapes: ``(..., G)`` in, same shape out, masked entries 0.
"""

from __future__ import annotations

import operator
from typing import Any

from fadesim._validate import CORRECT_THRESHOLD, GroupBatch, prepare_group_batch
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.group import grpo_of_batch
from fadesim.advantages.domains import NON_NEGATIVE, REAL, Interval
from fadesim.advantages.registry import register
from fadesim.advantages.weighting import focal_weight


@register(
    "focal",
    paper="2602.06717",
    title="F-GRPO: Don't let your policy learn the obvious and forget the rare (Plyusov et al., 2026)",
    mean_centred=True,
    min_group_size=2,
    domains={"gamma": NON_NEGATIVE, "eps": NON_NEGATIVE, "threshold": REAL},
    group_std=True,
)
def focal(
    rewards: Any,
    *,
    mask: Any = None,
    gamma: float = 1.0,
    eps: float = 1e-6,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """F-GRPO: the GRPO advantage scaled by the focal difficulty weight (1 - p_hat)^gamma.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2602.06717): g(x) = (1 - mu_pos(x))^gamma with
    mu_pos the group's empirical success rate, multiplying the group-relative advantage:
    A_i = (1 - p_hat)^gamma (r_i - mean r)/(std r + eps). gamma = 0 is GRPO; larger gamma moves mass
    to hard (low p) prompts. Mean-centred, since the weight is constant within a group.
    """
    batch = prepare_group_batch(rewards, mask, name="focal", min_group_size=2)
    weight = focal_weight(gs.fail_rate(batch, threshold), gamma, batch.xp)
    return gs.finish(weight * grpo_of_batch(batch, eps=eps), batch)


def _check_order(K: Any, group_size: int, *, name: str, at_most: int) -> int:
    try:
        K = operator.index(K)
    except TypeError:
        raise ValueError(f"{name}: K must be a positive integer; got {K!r}") from None
    if K < 1:
        raise ValueError(f"{name}: K must be a positive integer; got {K}")
    if K > at_most:
        raise ValueError(f"{name}: K = {K} is too large for groups of G = {group_size} (needs K <= {at_most})")
    return K


def comb_ratio(a: Any, b: Any, m: int, xp: Any) -> Any:
    """C(a, m) / C(b, m) for integer-valued float arrays a <= b, as a product of m factors.

    prod_{j<m} (a - j) / (b - j); a factor hits exactly 0 once j reaches a, so C(a, m) = 0 for
    a < m comes out exactly. Requires b >= m (callers mask the groups where it is not).
    """
    out = xp.ones_like(a)
    zero = xp.zeros_like(a)
    for j in range(m):
        out = out * xp.maximum(a - j, zero) / xp.maximum(b - j, xp.ones_like(b))
    return out


def _group_counts(batch: GroupBatch, threshold: float) -> tuple[Any, Any, Any]:
    xp = batch.xp
    good = gs.correct(batch, threshold)
    n = gs.count(batch)
    k = xp.sum(xp.astype(good, batch.rewards.dtype), axis=-1, keepdims=True)
    return good, n, k


@register(
    "pass_at_k",
    paper="2508.10751",
    title="Pass@k Training for adaptively balancing exploration and exploitation (Chen et al., 2025)",
    mean_centred=True,
    min_group_size=2,
    binary_only=True,
    domains={"K": Interval(low=1, integer=True), "threshold": REAL},
)
def pass_at_k(
    rewards: Any,
    *,
    mask: Any = None,
    K: int = 4,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Analytic pass@K advantage of Pass@k Training.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2508.10751, analytical derivation): with n valid
    rollouts of which k are correct, the mean group pass@K reward R = 1 - C(n-k, K)/C(n, K),
    s = sqrt(R (1 - R)), and
        A+ = (1 - R)/s,    A- = (1 - R - C(n-k-1, K-1)/C(n-1, K-1))/s.
    Verified: these are the group-normalised (biased-std) advantages of the K-subset pass@K reward
    averaged over the subsets containing each rollout, and they sum to 0 per group (tests check
    both by brute force over all K-subsets). K = 1 gives GRPO with the biased std. Groups with s = 0
    (all correct, all wrong, or fewer than K wrong) and masked groups with n < K give 0.
    """
    batch = prepare_group_batch(rewards, mask, name="pass_at_k", min_group_size=2)
    K = _check_order(K, batch.group_size, name="pass_at_k", at_most=batch.group_size)
    xp = batch.xp
    good, n, k = _group_counts(batch, threshold)
    wrong = n - k
    R = 1.0 - comb_ratio(wrong, n, K, xp)
    s = xp.sqrt(xp.maximum(R * (1.0 - R), xp.zeros_like(R)))
    # 0 < R < 1 exactly when k >= 1 and at least K are wrong; decide it on the integer counts so
    # rounding (e.g. XLA's reciprocal rewrite) can never turn a degenerate group into 1e-16 / 1e-8.
    informative = (k > 0) & (wrong >= K) & (n >= K)
    s = xp.where(informative, s, xp.zeros_like(s))
    a_pos = gs.safe_divide(1.0 - R, s, batch)
    a_neg = gs.safe_divide(1.0 - R - comb_ratio(wrong - 1.0, n - 1.0, K - 1, xp), s, batch)
    return gs.finish(xp.where(good, a_pos, a_neg), batch)


@register(
    "pkpo",
    paper="2505.15201",
    title="Pass@K Policy Optimization (Walder & Karkhanis, 2025)",
    min_group_size=2,
    binary_only=True,
    domains={"K": Interval(low=1, integer=True), "threshold": REAL},
)
def pkpo(
    rewards: Any,
    *,
    mask: Any = None,
    K: int = 4,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """PKPO: unbiased pass@K policy-gradient weights for binary rewards, with a leave-one-out baseline.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2505.15201, binary-reward estimator): averaging the
    pass@K score-function estimator over all K-subsets S of the n rollouts gives rollout i the weight
    K * E[max_S r | i in S], i.e. K if i is correct and K * rho(n-1, c, K-1) if not, where
    rho(m, c, j) = 1 - C(m-c, j)/C(m, j) is the unbiased pass@j estimate from m samples with c correct.
    The baseline subtracted from rollout i is K * rho(n-1, c_{-i}, K), the pass@K estimate of the other
    n-1 rollouts; it does not depend on rollout i, so the estimator stays unbiased for the gradient of
    pass@K (in the (1/n) sum_i A_i grad log pi_i convention used by every advantage here). K = 1 is RLOO.
    Needs K <= G - 1; masked groups with n <= K give 0. Not mean-centred for K > 1.
    """
    batch = prepare_group_batch(rewards, mask, name="pkpo", min_group_size=2)
    K = _check_order(K, batch.group_size, name="pkpo", at_most=batch.group_size - 1)
    xp = batch.xp
    good, n, c = _group_counts(batch, threshold)
    others = n - 1.0
    rho_wrong = 1.0 - comb_ratio(others - c, others, K - 1, xp)
    weight = xp.where(good, xp.ones_like(batch.rewards), rho_wrong)
    c_others = c - xp.astype(good, batch.rewards.dtype)
    baseline = 1.0 - comb_ratio(others - c_others, others, K, xp)
    out = K * (weight - baseline)
    # all-correct / all-wrong groups are exactly 0 (decided on counts, not on rounded ratios)
    informative = (n > K) & (c > 0) & (c < n)
    return gs.finish(xp.where(informative, out, xp.zeros_like(out)), batch)


@register(
    "risk_sensitive",
    paper="2509.24261",
    title="Risk-sensitive RL for alleviating exploration dilemmas in LLMs (Jiang et al., 2025)",
    mean_centred=True,
    min_group_size=2,
    domains={"beta": Interval(nonzero=True)},
)
def risk_sensitive(
    rewards: Any,
    *,
    mask: Any = None,
    beta: float = 2.0,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """RS-GRPO: exponential-utility advantage A_i = (exp(beta r_i) / mean_j exp(beta r_j) - 1) / beta.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2509.24261): the gradient of the risk-sensitive
    objective (1/beta) log E[exp(beta r)] with the constant 1/beta subtracted as baseline. beta > 0
    is risk-seeking (more mass on hard prompts' rare successes), beta < 0 risk-averse, beta -> 0
    recovers r - mean r (Dr.GRPO). Sums to 0 per group. Computed stably as (d_i - mean d) /
    (beta mean e) with e_i = exp(beta r_i - max_j beta r_j) and d_i = expm1(same) = e_i - 1, so it is finite
    for any finite rewards, accurate for small |beta|, and free of cancellation in the denominator. beta = 0 exactly is rejected (use dr_grpo).
    """
    batch = prepare_group_batch(rewards, mask, name="risk_sensitive", min_group_size=2)
    xp = batch.xp
    scaled = beta * batch.rewards
    top = gs.maximum(scaled, batch)
    top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))  # fully masked groups: any finite shift
    shifted = xp.where(batch.mask, scaled - top, xp.zeros_like(scaled))
    d = xp.expm1(shifted)  # numerator d_i - mean d is accurate for small |beta|
    # denominator mean(exp(.)) taken directly, not as 1 + mean(d): that sum cancels (d near -1 for
    # rewards far below the maximum) and would amplify its rounding several-fold in float32
    out = gs.safe_divide(d - gs.mean(d, batch), beta * gs.mean(xp.exp(shifted), batch), batch)
    out = xp.where(gs.all_equal(batch.rewards, batch), xp.zeros_like(out), out)
    return gs.finish(out, batch)
