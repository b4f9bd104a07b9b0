"""Register fadesim advantages in verl's advantage-estimator registry (no fork of verl).

After registration, ``algorithm.adv_estimator=fadesim_<name>`` selects a fadesim advantage. Each estimator has
the signature verl's ``compute_advantage`` (``verl/trainer/ppo/ray_trainer.py``, verl 0.9.1, read for this
adapter) calls registered estimators with:

    fn(token_level_rewards=(bs, T), response_mask=(bs, T), config=AlgoConfig | None, index=(bs,) group ids,
       **optional extras such as reward_baselines) -> (advantages (bs, T), returns (bs, T))

The scalar reward of a response is the sum of its token-level rewards; responses sharing an ``index`` (verl's
``uid``) form a group (groups may differ in size: they are padded and masked); the fadesim advantage of each
response is broadcast over its response tokens and returned as both advantages and returns (as verl's GRPO
does). Extras verl passes to other estimators (``reward_baselines``) are not used. Two differences from
verl's own GRPO, both fadesim's documented behaviour: a group of one response gets advantage 0 (verl's GRPO
gives it its raw score), and the std is computed scale-robustly. Advantages that need per-rollout log-probs
or training signals (unlikeliness, FADE) are not registered: verl's estimator interface does not pass them.

Registration in every verl process (the Ray workers import verl too): fadesim declares the entry point
``fadesim = "fadesim.bridge.verl_autoload"`` in the group ``verl.plugins``, which ``import verl`` loads (verl's
``VERL_USE_EXTERNAL_PLUGINS`` policy, default "auto"). Explicitly: ``register_verl()``, or
``VERL_USE_EXTERNAL_MODULES=fadesim.bridge.verl_autoload``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch

import fadesim

PREFIX = "fadesim_"
_ESTIMATORS: dict[tuple[str, tuple[tuple[str, Any], ...]], Callable[..., Any]] = {}


def group_rewards(scores: torch.Tensor, index: Any) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    """(bs,) scores + group ids -> padded (n_groups, G_max) rewards, mask, and each response's (group, slot)."""
    ids = np.asarray(index)
    if ids.shape != (scores.shape[0],):
        raise ValueError(f"index has shape {ids.shape}; expected ({scores.shape[0]},), one group id per response")
    _, group = np.unique(ids, return_inverse=True)
    group = group.reshape(-1)
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.empty_like(group)
    slot[order] = np.arange(len(group)) - np.repeat(starts, counts)
    rewards = torch.zeros((len(counts), int(counts.max())), dtype=scores.dtype, device=scores.device)
    mask = torch.zeros_like(rewards, dtype=torch.bool)
    rewards[group, slot] = scores
    mask[group, slot] = True
    return rewards, mask, group, slot


def verl_estimator(name: str, **params: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A verl-signature advantage estimator running fadesim's ``name`` with ``params`` bound.

    The same (name, params) gives the same function object, so registering twice is harmless in verl."""
    key = (name, tuple(sorted(params.items())))
    if key in _ESTIMATORS:
        return _ESTIMATORS[key]
    entry = fadesim.info(name)
    fn = entry.bind(**params)

    def estimator(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None,
                  config: Any = None, **extras: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if token_level_rewards.shape != response_mask.shape:
            raise ValueError(f"{PREFIX}{name}: token_level_rewards {tuple(token_level_rewards.shape)} and "
                             f"response_mask {tuple(response_mask.shape)} differ in shape")
        if index is None:
            raise ValueError(f"{PREFIX}{name}: needs the group ids (verl's non_tensor_batch['uid'], passed as "
                             "index): a group-relative advantage cannot be formed without them")
        with torch.no_grad():
            scores = token_level_rewards.sum(dim=-1)
            rewards, mask, group, slot = group_rewards(scores, index)
            adv = fn(rewards, mask=mask)
            per_response = adv[torch.as_tensor(group), torch.as_tensor(slot)]
            out = per_response.unsqueeze(-1) * response_mask
        return out, out

    estimator.__name__ = f"{PREFIX}{name}"
    estimator.__doc__ = f"fadesim advantage '{name}' (arXiv {entry.paper}) in verl's estimator signature."
    _ESTIMATORS[key] = estimator
    return estimator


def registrable(names: Iterable[str] | None = None) -> list[str]:
    """The fadesim advantages verl's interface can serve (no log-probs or training signals needed)."""
    chosen = list(names) if names is not None else fadesim.names()
    out = []
    for name in chosen:
        entry = fadesim.info(name)
        if not (entry.needs_logprobs or entry.needs_signals):
            out.append(name)
    return out


def register_verl(core_algos: Any = None, names: Iterable[str] | None = None,
                  params: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Register fadesim advantages into ``verl.trainer.ppo.core_algos`` (or a module with the same
    ``register_adv_est``) as ``fadesim_<name>``; ``params`` maps a name to hyper-parameters to bind.
    Returns the registered estimator names. Idempotent for the same params."""
    if core_algos is None:
        try:
            from verl.trainer.ppo import core_algos
        except ImportError as err:
            raise ImportError("register_verl needs verl (pip install 'fadesim[verl]') or an explicit core_algos "
                              "module") from err
    params = dict(params or {})
    unknown = sorted(set(params) - set(fadesim.names()))
    if unknown:
        raise ValueError(f"register_verl: params for unknown advantage(s) {unknown}")
    registered = []
    for name in registrable(names):
        core_algos.register_adv_est(f"{PREFIX}{name}")(verl_estimator(name, **dict(params.get(name, {}))))
        registered.append(f"{PREFIX}{name}")
    return registered
