"""Group-relative advantages: GRPO, Dr.GRPO, RLOO, REINFORCE, median-centred (MC-GRPO).

Shapes: ``rewards`` and ``mask`` are ``(..., G)``; the last axis is the group of rollouts
of one prompt. Every function returns an array of the same shape and namespace, with
masked entries 0. Groups with fewer than 2 valid rollouts (possible only under a mask)
get advantage 0 from the baselined advantages: no baseline can be formed from one sample.
"""

from __future__ import annotations

from typing import Any, Literal

from fadesim._validate import GroupBatch, prepare_group_batch
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.domains import BOOL, NON_NEGATIVE, Choice
from fadesim.advantages.registry import register


@register(
    "grpo",
    paper="2402.03300",
    title="DeepSeekMath (Shao et al., 2024)",
    mean_centred=True,
    scale_invariant=True,
    min_group_size=2,
    domains={"eps": NON_NEGATIVE, "unbiased_std": BOOL, "scale": Choice(("group", "batch", "none"))},
    group_std=lambda p: p["scale"] == "group",
)
def grpo(
    rewards: Any,
    *,
    mask: Any = None,
    eps: float = 1e-6,
    unbiased_std: bool = True,
    scale: Literal["group", "batch", "none"] = "group",
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Group Relative Policy Optimization advantage: A = (r - mean r) / (std r + eps).

    Shapes: rewards, mask (..., G) -> advantages (..., G).

    Formula (arXiv 2402.03300, eq. for outcome supervision): A_i = (r_i - mean(r)) / (std(r) + eps).
    Binary rewards, k correct of G, p = k/G, s the group std: A+ = (1 - p)/(s + eps), A- = -p/(s + eps).

    Options: ``unbiased_std`` uses ddof=1 like ``torch.std`` (verl's default; verified against
    verl ``compute_grpo_outcome_advantage``: unbiased std, eps=1e-6 added to the std).
    ``scale="batch"`` divides by the std of every valid reward in the array instead of the
    group's (TRL's ``scale_rewards="batch"``; TRL's eps is 1e-4); ``scale="none"`` is Dr.GRPO.
    All-equal groups give exactly 0.
    """
    batch = prepare_group_batch(rewards, mask, name="grpo", min_group_size=2)
    return grpo_of_batch(batch, eps=eps, unbiased_std=unbiased_std, scale=scale)


def grpo_of_batch(batch: GroupBatch, *, eps: float = 1e-6, unbiased_std: bool = True,
                  scale: Literal["group", "batch", "none"] = "group") -> Any:
    """GRPO on an already-validated batch: the core shared by grpo, focal, fade and unlikeliness."""
    centred = gs.centred(batch)
    if scale == "group":
        spread = gs.std(batch.rewards, batch, unbiased=unbiased_std)
    elif scale == "batch":
        spread = _batch_std(batch, unbiased=unbiased_std)
    elif scale == "none":
        return centred
    else:
        raise ValueError(f"grpo: scale must be 'group', 'batch' or 'none'; got {scale!r}")
    return gs.finish(gs.safe_divide(centred, spread + eps, batch), batch)


def _batch_std(batch: Any, *, unbiased: bool) -> Any:
    xp = batch.xp
    r, m = batch.rewards, batch.mask
    n = xp.sum(xp.astype(m, r.dtype))
    mu = xp.sum(r) / xp.maximum(n, xp.ones_like(n))
    dev = xp.where(m, r - mu, xp.zeros_like(r))
    dof = n - 1.0 if unbiased else n
    return xp.sqrt(xp.sum(dev * dev) / xp.maximum(dof, xp.ones_like(dof)))


@register(
    "dr_grpo",
    paper="2503.20783",
    title="Understanding R1-Zero-like training (Liu et al., 2025)",
    mean_centred=True,
    min_group_size=2,
)
def dr_grpo(rewards: Any, *, mask: Any = None, signals: Any = None, logprobs: Any = None) -> Any:
    """Dr.GRPO ("GRPO done right") advantage: A = r - mean r, no std normalisation.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2503.20783): A_i = r_i - mean(r);
    binary rewards: A+ = 1 - p, A- = -p with p = k/G. The paper also removes the per-sequence
    length normalisation of the token loss; that belongs to the loss (the bridge's
    ``loss_aggregation="token_sum"``), not to the advantage.
    """
    batch = prepare_group_batch(rewards, mask, name="dr_grpo", min_group_size=2)
    return gs.centred(batch)


@register(
    "rloo",
    paper="2402.14740",
    title="Back to Basics: REINFORCE leave-one-out (Ahmadian et al., 2024)",
    mean_centred=True,
    min_group_size=2,
)
def rloo(rewards: Any, *, mask: Any = None, signals: Any = None, logprobs: Any = None) -> Any:
    """REINFORCE leave-one-out advantage: A_i = r_i - mean_{j != i} r_j = n/(n-1) (r_i - mean r).

    Shapes: (..., G) -> (..., G); n is the number of valid rollouts in the group.
    Formula (arXiv 2402.14740); the identity with the scaled centred reward is the form used
    by verl ``compute_rloo_outcome_advantage`` (verified). Binary: A+ = G/(G-1) (1 - p), A- = -G/(G-1) p.
    """
    batch = prepare_group_batch(rewards, mask, name="rloo", min_group_size=2)
    n = gs.count(batch)
    factor = gs.safe_divide(n, n - 1.0, batch)
    return gs.finish(factor * gs.centred(batch), batch)


@register(
    "reinforce",
    paper="2506.01347",
    title="REINFORCE without baseline (as in Zhu et al., 2025)",
    domains={"convention": Choice(("01", "pm1"))},
)
def reinforce(
    rewards: Any,
    *,
    mask: Any = None,
    convention: Literal["01", "pm1"] = "01",
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """REINFORCE without a baseline: A = r (``convention="01"``) or A = 2r - 1 (``"pm1"``).

    Shapes: (..., G) -> (..., G). With 0/1 rewards the ``"pm1"`` convention maps them to the
    +-1 rewards of arXiv 2506.01347 (correct +1, incorrect -1), for which REINFORCE = PSR + NSR.
    Not mean-centred: all-correct groups keep positive mass.
    """
    batch = prepare_group_batch(rewards, mask, name="reinforce")
    if convention == "01":
        out = batch.rewards
    elif convention == "pm1":
        out = 2.0 * batch.rewards - 1.0
    else:
        raise ValueError(f"reinforce: convention must be '01' or 'pm1'; got {convention!r}")
    return gs.finish(out, batch)


@register(
    "median",
    paper="2601.00000",
    title="MC-GRPO: median-centred group baseline",
    scale_invariant=True,
    min_group_size=2,
    domains={"eps": NON_NEGATIVE, "scale_by_std": BOOL},
    group_std=lambda p: bool(p["scale_by_std"]),
)
def median(
    rewards: Any,
    *,
    mask: Any = None,
    eps: float = 1e-6,
    scale_by_std: bool = True,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Median-centred GRPO (MC-GRPO): A = (r - median r) / (std r + eps).

    Shapes: (..., G) -> (..., G). The group median replaces the mean as baseline (DESIGN.md
    section 4, "MC-GRPO (2601.x)"; the exact arXiv number was not available to us, so the
    registry records the placeholder 2601.00000). For even n the median is the mean of the two
    middle values. Binary rewards: for k < G/2 the median is 0, so only correct rollouts carry
    mass (A+ = 1/s); for k > G/2 only incorrect ones do (A- = -1/s); k = G/2 gives +-1/(2s).
    Not mean-centred: the sign of the mass follows the prompt's difficulty.
    """
    batch = prepare_group_batch(rewards, mask, name="median", min_group_size=2)
    xp = batch.xp
    r = batch.rewards
    zero = xp.zeros_like(r)
    diff = xp.where(gs.all_equal(r, batch), zero, r - gs.median(r, batch))
    if scale_by_std:
        diff = gs.safe_divide(diff, gs.std(r, batch) + eps, batch)
    return gs.finish(diff, batch)
