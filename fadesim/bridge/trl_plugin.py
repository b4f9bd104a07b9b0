"""TRL plug-in: ``FadesimGRPOTrainer``, TRL's ``GRPOTrainer`` with a fadesim advantage swapped in.

TRL (read for this adapter: ``trl/trainer/grpo_trainer.py`` of trl 1.16) computes GRPO advantages inline in
``GRPOTrainer._generate_and_score_completions`` from the rewards that ``_calculate_rewards`` returns (gathered
over processes, one row per completion, one column per reward function). There is no advantage hook, so the
subclass overrides both methods and nothing else:

1. ``_calculate_rewards`` keeps the gathered ``(N, n_funcs)`` rewards it returns;
2. after TRL's own ``_generate_and_score_completions``, the weighted sum of the reward functions
   (TRL's ``sum_then_normalize`` reward) is grouped into ``(N / G, G)`` (TRL's sampler repeats each prompt G
   times consecutively), completions for which every reward function returned None are masked, the fadesim
   advantage (the registry's function object, on torch tensors) is applied, masked completions get 0 (as in
   TRL), and this process's slice replaces ``output["advantages"]``. TRL's loss, clipping, KL and
   aggregation (``loss_type``) are untouched.

TRL's own settings are honoured or refused, never dropped (``scale_rewards``, TRL's std regulariser 1e-4,
reward functions and ``reward_weights``, None rewards):
- ``advantage="grpo"`` takes ``scale`` from ``GRPOConfig.scale_rewards`` (group / batch / none) and TRL's eps 1e-4,
  so with a default ``GRPOConfig`` it reproduces TRL's own advantages; an ``advantage_params`` value that
  contradicts ``scale_rewards`` is an error, and an explicit ``eps`` is the user's choice.
- advantages that divide by the group's std (focal, fade, unlikeliness, median) take ``scale_rewards="group"``
  and refuse "batch" / "none"; ``dr_grpo`` is ``scale_rewards="none"`` by definition;
- the others have no std scaling: TRL's default ``scale_rewards="group"`` gives one warning that it does not apply,
  and a non-default value is an error.
- on an all-equal non-binary group fadesim's GRPO is exactly 0 where TRL's float32 arithmetic leaves a residue
  (e.g. -7.45e-5 on every row): the two differ there by that residue;
- the weighted sum of the reward functions is TRL's; a completion whose every reward function returned None is
  masked (advantage 0, as in TRL); a batch in which every reward is None is an error, before any update.

The trainer also logs fadesim's mass decomposition (``fadesim/positive_mass`` etc., per prompt) through TRL's
metrics. Advantages that need training signals (FADE: the token entropy ratio H_t / H_0) or per-rollout
log-probs (unlikeliness) get them from one extra no-grad forward pass over the batch's completions, with
dropout off (with TRL's ``disable_dropout=True`` the signal equals the entropy TRL logs for the same batch).

    from fadesim.bridge.trl_plugin import FadesimGRPOTrainer
    trainer = FadesimGRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(...), train_dataset=...,
                                 processing_class=..., advantage="w_reinforce", advantage_params={"lam": 0.1})
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import torch

import fadesim
from fadesim.advantages.calling import AdvantageCall, mass_metrics, smoothed_entropy

try:
    from trl import GRPOTrainer
except ImportError as err:  # pragma: no cover - exercised only without TRL
    raise ImportError("fadesim.bridge.trl_plugin needs TRL (pip install trl)") from err


#: TRL 1.16's std regulariser (grpo_trainer.py: advantages / (std_rewards + 1e-4)); not a TRL setting
TRL_EPS = 1e-4


def host_params(advantage: str, params: Mapping[str, Any], scale_rewards: str) -> dict[str, Any]:
    """``advantage_params`` with TRL's ``scale_rewards`` (and eps) mapped on, or a clear error where it cannot be."""
    params = dict(params)
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"FadesimGRPOTrainer: unknown scale_rewards {scale_rewards!r}")
    if advantage == "grpo":
        if "scale" in params and params["scale"] != scale_rewards:
            raise ValueError(f"FadesimGRPOTrainer: advantage_params['scale']={params['scale']!r} contradicts "
                             f"GRPOConfig.scale_rewards={scale_rewards!r}; set one of them")
        params["scale"] = scale_rewards
        params.setdefault("eps", TRL_EPS)
        return params
    if fadesim.info(advantage).divides_by_group_std(**params):  # the registry's metadata, with these parameters
        if scale_rewards != "group":
            raise ValueError(f"FadesimGRPOTrainer: '{advantage}' scales by the group's std; "
                             f"GRPOConfig.scale_rewards={scale_rewards!r} cannot be honoured (use 'group')")
        return params
    if advantage == "dr_grpo" and scale_rewards == "none":
        return params
    if scale_rewards != "group":
        raise ValueError(f"FadesimGRPOTrainer: '{advantage}' has no reward scaling; GRPOConfig.scale_rewards="
                         f"{scale_rewards!r} cannot be honoured (leave TRL's default, or use advantage='grpo')")
    warnings.warn(f"FadesimGRPOTrainer: GRPOConfig.scale_rewards='group' (TRL's default) does not apply to "
                  f"'{advantage}', which has no reward scaling; the advantages are fadesim's '{advantage}'",
                  UserWarning, stacklevel=3)
    return params


class FadesimGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` whose advantages come from fadesim's ``advantage`` (with ``advantage_params``).

    Extra keyword arguments (all others go to ``GRPOTrainer``):
    advantage: a registered fadesim name (``fadesim.names()``); advantage_params: its hyper-parameters;
    entropy_decay: EMA factor of the entropy signal given to advantages that read ``signals``.

    After each generation batch, ``fadesim_last`` holds the grouped rewards, mask, fadesim advantages and TRL's
    own advantages on the same batch (all processes), and ``fadesim_history`` one row of metrics per batch.
    """

    def __init__(self, *args: Any, advantage: str = "grpo", advantage_params: Mapping[str, Any] | None = None,
                 entropy_decay: float = 0.9, **kwargs: Any) -> None:
        params = dict(advantage_params or {})
        self.fadesim_entry = fadesim.info(advantage)  # unknown names fail here, before TRL builds anything
        self.fadesim_entry.bind(**params)  # unknown or invalid hyper-parameters too
        if not 0.0 <= entropy_decay < 1.0:
            raise ValueError(f"entropy_decay must be in [0, 1); got {entropy_decay}")
        self.fadesim_advantage = fadesim.get(advantage)  # the registry's function object itself
        self.fadesim_params = params
        self.fadesim_entropy_decay = float(entropy_decay)
        self.fadesim_initial_entropy: float | None = None
        self.fadesim_entropy_ema: float | None = None
        self.fadesim_last: dict[str, Any] = {}
        self.fadesim_history: list[dict[str, float]] = []
        self._fadesim_rewards_per_func: torch.Tensor | None = None
        super().__init__(*args, **kwargs)
        self.fadesim_params = host_params(advantage, params, self.scale_rewards)
        # the registry's function with the host-mapped params bound (the rule every trainer calls it by)
        self.fadesim_call = AdvantageCall(advantage, self.fadesim_params)
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError("FadesimGRPOTrainer needs multi_objective_aggregation='sum_then_normalize': the fadesim "
                             f"advantage does its own normalisation (got {self.multi_objective_aggregation!r})")
        if self.num_generations < self.fadesim_entry.min_group_size:
            raise ValueError(f"fadesim advantage {advantage!r} needs num_generations >= "
                             f"{self.fadesim_entry.min_group_size}; got {self.num_generations}")

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._fadesim_rewards_per_func = rewards_per_func
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        self._fadesim_rewards_per_func = None
        output = super()._generate_and_score_completions(inputs)
        per_func = self._fadesim_rewards_per_func
        if per_func is None:
            raise RuntimeError("TRL's _generate_and_score_completions did not call _calculate_rewards: this TRL "
                               "version is not supported by FadesimGRPOTrainer (written against trl 1.16)")
        mode = "train" if self.model.training else "eval"
        G = self.num_generations if mode == "train" else self.num_generations_eval
        n_total = per_func.shape[0]
        if n_total % G:
            raise ValueError(f"{n_total} completions cannot be split into groups of G = {G}")
        unscorable = torch.isnan(per_func).all(dim=1)
        if bool(unscorable.all()):
            raise ValueError("FadesimGRPOTrainer: every reward function returned None for every completion of this "
                             "batch: there is nothing to train on (no update was made)")
        weights = self.reward_weights.to(per_func.device)
        rewards = torch.nan_to_num(per_func * weights, nan=0.0).sum(dim=1).view(-1, G)
        mask = (~unscorable).view(-1, G)
        n_local = output["completion_ids"].shape[0]
        start = self.accelerator.process_index * n_local
        kw: dict[str, Any] = {}
        if self.fadesim_entry.needs_signals or self.fadesim_entry.needs_logprobs:
            seq_logprobs, entropy = self._fadesim_policy_statistics(output)
            if self.fadesim_entry.needs_logprobs:
                kw["logprobs"] = seq_logprobs.view(-1, G)
            if self.fadesim_entry.needs_signals:
                if self.fadesim_initial_entropy is None:
                    self.fadesim_initial_entropy = entropy
                self.fadesim_entropy_ema = smoothed_entropy(self.fadesim_entropy_ema, entropy,
                                                            self.fadesim_entropy_decay)
                kw["signals"] = {"entropy": self.fadesim_entropy_ema, "initial_entropy": self.fadesim_initial_entropy,
                                 "step": self.state.global_step}
        with torch.no_grad():
            adv = self.fadesim_call(rewards, mask=mask, **kw)
        if not torch.isfinite(adv).all():
            raise ValueError(f"fadesim advantage {self.fadesim_entry.name!r} returned non-finite values")
        adv = torch.where(mask, adv, torch.zeros_like(adv)).reshape(-1)
        trl_local = output["advantages"]
        output["advantages"] = adv[start:start + n_local].to(trl_local.dtype)
        self._fadesim_log(mode, rewards, mask, adv.view(-1, G), trl_local, start)
        return output

    def _fadesim_policy_statistics(self, output: Mapping[str, Any]) -> tuple[torch.Tensor, float]:
        """Sequence log-probs (all processes, (N,)) and the mean token entropy of this batch's completions."""
        if any(k in output for k in ("pixel_values", "image_grid_thw")):
            raise NotImplementedError("FadesimGRPOTrainer computes signals/log-probs for text-only models")
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        was_training = self.model.training
        self.model.eval()  # dropout off: the signal must not depend on a dropout draw
        try:
            with torch.no_grad():
                logps, entropies, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, attention, output["completion_ids"].shape[1], compute_entropy=True)
        finally:
            self.model.train(was_training)
        cmask = output["completion_mask"].to(logps.dtype)
        seq = self.accelerator.gather((logps * cmask).sum(dim=1))
        totals = self.accelerator.gather(torch.stack([(entropies * cmask).sum(), cmask.sum()])[None]).sum(dim=0)
        return seq, float(totals[0] / totals[1].clamp(min=1.0))

    def _fadesim_log(self, mode: str, rewards: torch.Tensor, mask: torch.Tensor, adv: torch.Tensor,
                     trl_local: torch.Tensor, start: int) -> None:
        d = fadesim.decompose(adv, rewards, mask=mask)
        B = rewards.shape[0]
        row = {"step": float(self.state.global_step), "reward_mean": float(rewards[mask].mean()),
               **{k: float(v) for k, v in mass_metrics(d, B).items()}}
        if self.fadesim_entropy_ema is not None:
            row["entropy_signal"] = self.fadesim_entropy_ema
        for key, value in row.items():
            if key != "step":
                self._metrics[mode][f"fadesim/{key}"].append(value)
        self.fadesim_history.append(row)
        self.fadesim_last = {"rewards": rewards.detach().cpu(), "mask": mask.detach().cpu(),
                             "advantages": adv.detach().cpu(), "trl_advantages_local": trl_local.detach().cpu(),
                             "local_slice": slice(start, start + trl_local.shape[0])}
        # TRL's completions table logged its own advantages for this batch; show fadesim's instead
        logged = self._logs["advantages"]
        n = adv.numel()
        if len(logged) >= n:
            for _ in range(n):
                logged.pop()
            logged.extend(adv.reshape(-1).tolist())
