"""Register fadesim advantages in verl's advantage-estimator registry (no fork of verl).

After registration, ``algorithm.adv_estimator=fadesim_<name>`` selects a fadesim advantage. Each estimator has
the signature verl's ``compute_advantage`` (``verl/trainer/ppo/ray_trainer.py``, verl 0.9.1, read for this
adapter) calls registered estimators with:

    fn(token_level_rewards=(bs, T), response_mask=(bs, T), config=AlgoConfig | None, index=(bs,) group ids,
       **optional extras such as reward_baselines) -> (advantages (bs, T), returns (bs, T))

The scalar reward of a response is the sum of its token-level rewards; responses sharing an ``index`` (verl's
``uid``) form a group (groups may differ in size: they are padded and masked); the fadesim advantage of each
response is broadcast over its response tokens and returned as both advantages and returns (as verl's GRPO
does). Extras verl passes to other estimators (``reward_baselines``) are data for other estimators and are not
used. Advantages that need per-rollout log-probs or training signals (unlikeliness, FADE) are not registered:
verl's estimator interface does not pass them.

verl's own settings are honoured or refused, never dropped:
- ``norm_adv_by_std_in_grpo`` (an argument, or ``config.norm_adv_by_std_in_grpo`` of verl's AlgoConfig): for
  ``fadesim_grpo`` False is Dr.GRPO (r - mean r), exactly verl's switch; ``fadesim_dr_grpo`` is that already; every
  other estimator refuses False with a ValueError (the setting has no meaning for it).
- ``epsilon`` (an argument of verl's GRPO): ``fadesim_grpo``'s eps; other estimators refuse it.
- Groups of one response (``rollout.n=1``, or a prompt whose other responses were filtered): by default
  (``singletons="host"``) ``fadesim_grpo``, ``fadesim_dr_grpo`` and ``fadesim_rloo`` do what verl's grpo / grpo
  with ``norm_adv_by_std_in_grpo=False`` / rloo do: the raw score (divided by 1 + epsilon for normalised GRPO,
  verl's mean 0 and std 1). ``singletons="fadesim"`` keeps fadesim's convention: advantage 0 for a group of one in a
  mixed batch, and an error for a batch of singletons only. Advantages with no verl counterpart (focal, pass_at_k,
  ...) always use fadesim's convention; those defined on groups of one (psr, nsr, w_reinforce, reinforce,
  sign_balanced) compute them as usual.
- The std is computed scale-robustly; on an all-equal non-binary group fadesim gives exactly 0 where verl leaves a
  float32 residue (e.g. -0.00739 on every row), so the two differ there by that residue.

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
_ESTIMATORS: dict[tuple[str, tuple[tuple[str, Any], ...], str], Callable[..., Any]] = {}

#: verl's built-in estimator of the same family and what it gives a group of one (score s, verl's epsilon e)
HOST_SINGLETONS: dict[str, Callable[[torch.Tensor, bool, float], torch.Tensor]] = {
    "grpo": lambda s, normalise, eps: s / (1.0 + eps) if normalise else s,  # verl grpo: mean 0, std 1
    "dr_grpo": lambda s, normalise, eps: s,  # verl grpo with norm_adv_by_std_in_grpo=False
    "rloo": lambda s, normalise, eps: s,  # verl rloo: the raw score
}
VERL_GRPO_EPSILON = 1e-6  # the default epsilon of verl 0.9.1's compute_grpo_outcome_advantage


def _host_setting(extras: dict[str, Any], config: Any, key: str, default: Any) -> Any:
    """A verl setting passed as an argument, else read from verl's AlgoConfig, else verl's default."""
    if key in extras:
        return extras.pop(key)
    value = getattr(config, key, None) if config is not None else None
    if value is None and isinstance(config, Mapping):
        value = config.get(key)
    return default if value is None else value


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


def verl_estimator(name: str, singletons: str = "host", **params: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A verl-signature advantage estimator running fadesim's ``name`` with ``params`` bound.

    ``singletons``: "host" (groups of one as verl's built-in of the same family, where there is one) or "fadesim".
    The same (name, params, singletons) gives the same function object, so registering twice is harmless."""
    if singletons not in ("host", "fadesim"):
        raise ValueError(f"{PREFIX}{name}: singletons must be 'host' or 'fadesim'; got {singletons!r}")
    key = (name, tuple(sorted(params.items())), singletons)
    if key in _ESTIMATORS:
        return _ESTIMATORS[key]
    entry = fadesim.info(name)
    entry.bind(**params)  # unknown parameters fail here, at registration

    def estimator(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None,
                  config: Any = None, **extras: Any) -> tuple[torch.Tensor, torch.Tensor]:
        normalise = bool(_host_setting(extras, config, "norm_adv_by_std_in_grpo", True))
        epsilon = extras.pop("epsilon", None)  # an argument of verl's GRPO only, not an AlgoConfig field
        if not normalise and name not in ("grpo", "dr_grpo"):
            raise ValueError(f"{PREFIX}{name}: norm_adv_by_std_in_grpo=False is verl's Dr.GRPO switch and has no "
                             f"meaning for '{name}'; use {PREFIX}dr_grpo, or leave it True")
        if epsilon is not None and name != "grpo":
            raise ValueError(f"{PREFIX}{name}: epsilon is verl's GRPO std regulariser and has no meaning for "
                             f"'{name}' (its own parameters: {sorted(entry.params) or 'none'})")
        call_params = dict(params)
        if name == "grpo":
            if not normalise:
                call_params = {}  # Dr.GRPO: r - mean r
            elif epsilon is not None:
                call_params["eps"] = float(epsilon)
        fn = fadesim.get("dr_grpo" if (name == "grpo" and not normalise) else name, **call_params)
        if token_level_rewards.shape != response_mask.shape:
            raise ValueError(f"{PREFIX}{name}: token_level_rewards {tuple(token_level_rewards.shape)} and "
                             f"response_mask {tuple(response_mask.shape)} differ in shape")
        if index is None:
            raise ValueError(f"{PREFIX}{name}: needs the group ids (verl's non_tensor_batch['uid'], passed as "
                             "index): a group-relative advantage cannot be formed without them")
        with torch.no_grad():
            scores = token_level_rewards.sum(dim=-1)
            rewards, mask, group, slot = group_rewards(scores, index)
            host = HOST_SINGLETONS.get(name) if singletons == "host" else None
            alone = torch.as_tensor(mask.sum(dim=-1)[group] == 1)
            if host is not None and bool(alone.all()):
                per_response = torch.zeros_like(scores)  # no group to form: every response is its own group
            else:
                adv = fn(rewards, mask=mask)
                per_response = adv[torch.as_tensor(group), torch.as_tensor(slot)]
            if host is not None:
                eps = VERL_GRPO_EPSILON if epsilon is None else float(epsilon)
                per_response = torch.where(alone, host(scores, normalise, eps).to(per_response.dtype), per_response)
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
                  params: Mapping[str, Mapping[str, Any]] | None = None, singletons: str = "host") -> list[str]:
    """Register fadesim advantages into ``verl.trainer.ppo.core_algos`` (or a module with the same
    ``register_adv_est``) as ``fadesim_<name>``; ``params`` maps a name to hyper-parameters to bind; ``singletons``
    chooses verl's ("host") or fadesim's convention for groups of one. Returns the registered estimator names.
    Idempotent for the same arguments."""
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
        core_algos.register_adv_est(f"{PREFIX}{name}")(verl_estimator(name, singletons, **dict(params.get(name, {}))))
        registered.append(f"{PREFIX}{name}")
    return registered
