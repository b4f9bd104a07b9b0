"""Likelihood-aware advantages: the unlikeliness reward (needs per-rollout log-probs)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fadesim._validate import prepare_companion, prepare_group_batch
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.group import grpo_of_batch
from fadesim.advantages.domains import NON_NEGATIVE, UNIT
from fadesim.advantages.registry import register


def likelihood_rank(logprobs: Any, batch: Any) -> Any:
    """Rank of each rollout by sequence log-prob within its group: 0 = most likely.

    rank_i = number of valid rollouts j with logprob_j > logprob_i. Ties share a rank, which keeps
    the advantage permutation-equivariant. Shapes: (..., G) -> (..., G) floats.
    """
    xp = batch.xp
    higher = (logprobs[..., None, :] > logprobs[..., :, None]) & batch.mask[..., None, :]
    return xp.sum(xp.astype(higher, batch.rewards.dtype), axis=-1)


@register(
    "unlikeliness",
    paper="2506.02355",
    title="Rewarding the unlikely: lifting GRPO beyond distribution sharpening (He et al., 2025)",
    mean_centred=True,
    needs_logprobs=True,
    min_group_size=2,
    domains={"beta_rank": UNIT, "eps": NON_NEGATIVE},
    group_std=True,
)
def unlikeliness(
    rewards: Any,
    *,
    mask: Any = None,
    logprobs: Any = None,
    beta_rank: float = 0.25,
    eps: float = 1e-6,
    signals: Any = None,
) -> Any:
    """Unlikeliness reward: correct rollouts the policy already finds likely get reduced reward.

    Shapes: rewards, logprobs (sequence log-probabilities), mask (..., G) -> (..., G).
    Formula (arXiv 2506.02355): r'_i = r_i (1 - beta_rank (n - rank_i) / n), rank_i the rank of
    rollout i by log-prob within the group (0 = most likely, so the most likely correct rollout gets
    the largest cut, beta_rank), then the GRPO advantage of r'. beta_rank = 0 is GRPO; the paper
    uses beta_rank = 0.25. With all log-probs equal every rollout has rank 0 and r' = (1 - beta_rank) r,
    which GRPO's scale invariance maps back to GRPO (up to eps).
    """
    batch = prepare_group_batch(rewards, mask, name="unlikeliness", min_group_size=2)
    lp = prepare_companion(logprobs, batch, name="unlikeliness", what="logprobs")
    n = gs.count(batch)
    rank = likelihood_rank(lp, batch)
    shaped = batch.rewards * (1.0 - beta_rank * (n - rank) / batch.xp.maximum(n, batch.xp.ones_like(n)))
    return grpo_of_batch(dataclasses.replace(batch, rewards=shaped), eps=eps)
