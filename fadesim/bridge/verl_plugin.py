"""Register fadesim advantages in verl's advantage-estimator registry (no fork of verl).

After ``register_verl()``, ``algorithm.adv_estimator=fadesim_<name>`` selects a fadesim advantage. Each
estimator has verl's outcome-reward signature (as ``compute_grpo_outcome_advantage`` in
``verl/trainer/ppo/core_algos.py``, read for this adapter):

    fn(token_level_rewards (bs, T), response_mask (bs, T), index (bs,) group ids, epsilon=1e-6, config=None,
       **kwargs) -> (advantages (bs, T), returns (bs, T))

The scalar reward of a response is the sum of its token-level rewards; responses sharing an ``index`` form a
group (groups may differ in size: they are padded and masked); the fadesim advantage of each response is
broadcast over its response tokens. Advantages that need per-rollout log-probs or training signals are not
registered (verl's estimator interface does not pass them).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np
import torch

import fadesim

PREFIX = "fadesim_"


def group_rewards(scores: torch.Tensor, index: Any) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    """(bs,) scores + group ids -> padded (n_groups, G_max) rewards, mask, and each response's (group, slot)."""
    ids = np.asarray(index)
    if ids.shape != (scores.shape[0],):
        raise ValueError(f"index has shape {ids.shape}; expected ({scores.shape[0]},), one group id per response")
    _, group = np.unique(ids, return_inverse=True)
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.empty_like(group)
    slot[order] = np.arange(len(group)) - np.repeat(starts, counts)
    rewards = torch.zeros((len(counts), counts.max()), dtype=scores.dtype, device=scores.device)
    mask = torch.zeros_like(rewards, dtype=torch.bool)
    rewards[group, slot] = scores
    mask[group, slot] = True
    return rewards, mask, group, slot


def verl_estimator(name: str, **params: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A verl-signature advantage estimator running fadesim's ``name`` (params bound)."""
    fn = fadesim.get(name, **params)

    def estimator(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any,
                  epsilon: float = 1e-6, config: Any = None, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if token_level_rewards.shape != response_mask.shape:
            raise ValueError(f"token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
                             f"{tuple(response_mask.shape)} differ in shape")
        with torch.no_grad():
            scores = token_level_rewards.sum(dim=-1)
            rewards, mask, group, slot = group_rewards(scores, index)
            adv = fn(rewards, mask=mask)
            per_response = adv[group, slot]
            out = per_response.unsqueeze(-1) * response_mask
        return out, out

    estimator.__name__ = f"{PREFIX}{name}"
    estimator.__doc__ = f"fadesim advantage '{name}' ({fadesim.info(name).paper}) in verl's estimator signature."
    return estimator


def register_verl(core_algos: Any = None, names: Iterable[str] | None = None) -> list[str]:
    """Register fadesim advantages into ``verl.trainer.ppo.core_algos`` (or a module with the same
    ``register_adv_est``); returns the registered estimator names."""
    if core_algos is None:
        try:
            from verl.trainer.ppo import core_algos
        except ImportError as err:
            raise ImportError("register_verl needs verl (pip install verl) or an explicit core_algos module") from err
    registered = []
    for name in names or fadesim.names():
        entry = fadesim.info(name)
        if entry.needs_logprobs or entry.needs_signals:
            continue
        core_algos.register_adv_est(f"{PREFIX}{name}")(verl_estimator(name))
        registered.append(f"{PREFIX}{name}")
    return registered
