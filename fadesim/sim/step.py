"""One training step and the logged metrics, written once for numpy and jax.numpy.

step = sample G rollouts per prompt (inverse CDF from given uniforms) -> rewards -> the registry's
advantage (the same function object on either backend) -> policy-gradient update with the analytic
score (optionally PPO-clipped over several epochs, optionally with a KL(pi || pi_0) penalty) -> metrics.
The trainer, not the advantage, computes the training signals (smoothed entropy, initial entropy, step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from fadesim.advantages.registry import info
from fadesim.advantages.calling import AdvantageCall, mass_metrics, smoothed_entropy
from fadesim.decomposition import decompose
from fadesim.sim.config import UPDATE_HYPER_PARAMETERS, SimConfig
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.protocol import evaluated

#: metrics of the batch that made an update (NaN in the step-0 row, before any update)
BATCH_METRICS = ("reward_mean", "positive_mass", "negative_mass", "sign_balance", "hardness", "ess", "grad_norm",
                 "clip_fraction")

if TYPE_CHECKING:  # the task interface (docs/DESIGN.md section 6)
    from fadesim.tasks.protocol import Task


def split_hyper_parameters(cfg: SimConfig, hp: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Update hyper-parameters (defaults from cfg, overridden by hp) and advantage overrides."""
    update = {name: hp.get(name, getattr(cfg, name)) for name in UPDATE_HYPER_PARAMETERS}
    adv = {k: v for k, v in hp.items() if k not in UPDATE_HYPER_PARAMETERS}
    return update, adv


def advantage_call(cfg: SimConfig) -> Callable[..., Any]:
    """The registry function with static params bound; passes signals/logprobs only where needed
    (``fadesim.advantages.calling.AdvantageCall``, the rule every trainer uses)."""
    bound = AdvantageCall(cfg.advantage, cfg.advantage_params)

    def call(rewards: Any, signals: Mapping[str, Any], logprobs: Any, overrides: Mapping[str, Any],
             mask: Any = None) -> Any:
        return bound(rewards, signals=signals, logprobs=logprobs, mask=mask, **dict(overrides))

    return call


def training_mean(task: Task, xp: Any) -> Any:
    """The mean over the prompts the task trains on: all of them, or those not held out for evaluation
    (``task.evaluated()``), whose entropy a trainer never sees."""
    held = evaluated(task)
    return sp.prompt_mean(xp, None if held is None else ~xp.asarray(held, dtype=bool))


def policy_entropy(task: Task, params: dict[str, Any], rollout: dict[str, Any], xp: Any) -> Any:
    """The entropy signal: mean sampled token entropy (chain, like an LLM) or exact policy entropy over the training
    prompts."""
    if "token_entropy" in rollout:
        return xp.mean(rollout["token_entropy"])
    return training_mean(task, xp)(sp.entropy(sp.log_softmax(task.logits(params, xp), xp), xp))


def initial_state(task: Task, cfg: SimConfig, xp: Any, dtype: Any) -> dict[str, Any]:
    params = task.init_params(xp, dtype)
    init, _ = OPTIMIZERS[cfg.optimizer]
    h0 = training_mean(task, xp)(task.exact(params, xp, cfg.floor)["entropy"])
    return {"params": params, "opt": init(params, xp), "entropy_ema": h0, "initial_entropy": h0,
            "step": xp.zeros((), dtype=dtype), "ref_params": params}


def train_step(task: Task, cfg: SimConfig, state: dict[str, Any], u: Any, hp: Mapping[str, Any], xp: Any,
               metrics: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """Advance one step from uniforms ``u`` (task.uniform_shape(G)); returns (state, batch metrics).

    ``metrics=False`` skips the batch metrics (mass decomposition, gradient norm, clip fraction: nothing the
    update reads) and returns ``{}`` for them: the simulator computes them only on the steps it logs."""
    update_hp, adv_hp = split_hyper_parameters(cfg, hp)
    _, update = OPTIMIZERS[cfg.optimizer]
    params, opt = state["params"], state["opt"]
    constrain = getattr(task, "constrain", None)
    ro = task.rollout(params, u, xp)
    actions, rewards, logp_old = ro["actions"], ro["rewards"], ro["logprobs"]
    if info(cfg.advantage).needs_signals:  # only schedule-driven advantages read the entropy signal
        h_now = policy_entropy(task, params, ro, xp)
        ema = smoothed_entropy(state["entropy_ema"], h_now, cfg.entropy_decay)
    else:  # (an O(N K) pass saved each step; the signal is then never read)
        ema = state["entropy_ema"]
    signals = {"entropy": ema, "initial_entropy": state["initial_entropy"], "step": state["step"]}
    # a prompt mini-batch (a task whose rollout returns ``group_weight``, e.g. ``make_sharpen(prompts_per_step=B)``):
    # the groups not drawn this step are masked out of the advantage (the registry's contract: masked entries are 0,
    # and a batch statistic sees the drawn groups only) and of the decomposition; ``group_weight`` (N / B on the
    # drawn groups) makes the update the mean over the drawn groups, as a trainer's loss over its batch is
    gw = ro.get("group_weight")
    mask = None if gw is None else xp.broadcast_to((gw > 0)[:, None], rewards.shape)
    adv = advantage_call(cfg)(rewards, signals, logp_old, adv_hp, mask)
    scale = 1.0 if gw is None else gw[:, None]
    mean = sp.prompt_mean(xp, mask)  # over the drawn groups' rollouts (xp.mean without a mini-batch)
    use_kl = cfg.kl_beta != 0 or "kl_beta" in hp
    logp_ref = task.logprob(state["ref_params"], actions, xp) if use_kl else None
    grad_norm = clip_fraction = None
    for epoch in range(cfg.epochs):
        logp = logp_old if epoch == 0 else task.logprob(params, actions, xp)
        weights = adv * scale
        clipped = xp.zeros(adv.shape, dtype=bool)
        if cfg.ppo:
            ratio = xp.exp(logp - logp_old)
            clipped = ((adv > 0) & (ratio > 1.0 + update_hp["eps_high"])) | (
                (adv < 0) & (ratio < 1.0 - update_hp["eps_low"]))
            weights = xp.where(clipped, 0.0, adv * scale * ratio)
        if use_kl:
            weights = weights - update_hp["kl_beta"] * (logp - logp_ref) * scale
        grads = task.score(params, actions, weights, xp)
        if epoch == 0 and metrics:
            grad_norm = xp.sqrt(sum(xp.sum(g * g) for g in grads.values()))
        if metrics:
            clip_fraction = mean(clipped.astype(adv.dtype))
        params, opt = update(grads, opt, params, update_hp["lr"], xp, tie=update_hp["tie"])
        if constrain is not None:  # a task's constraints (e.g. make_sharpen(floor_sharpness=True)): a projection
            params = constrain(params, xp)
    new_state = dict(state, params=params, opt=opt, entropy_ema=ema, step=state["step"] + 1.0)
    if not metrics:
        return new_state, {}
    d = decompose(adv, rewards, mask=mask)
    n = rewards.shape[0] if gw is None else xp.sum((gw > 0).astype(rewards.dtype))  # groups drawn
    batch = {
        "reward_mean": mean(rewards),
        **mass_metrics(d, n),
        "grad_norm": grad_norm,
        "clip_fraction": clip_fraction,
    }
    return new_state, batch


#: prompts whose *initial* pass rate is below this are "hard" for the pass@1_hard metric
HARD_PASS_RATE = 0.25


def initial_hard_prompts(task: Task) -> np.ndarray:
    """Boolean (N,) mask of the prompts that start hard (a numpy constant of the task)."""
    p0 = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
    return p0 < HARD_PASS_RATE


def policy_metrics(task: Task, cfg: SimConfig, params: dict[str, Any], xp: Any, hard: Any = None) -> dict[str, Any]:
    """Exact metrics of the current policy, averaged over prompts (pass@1_hard: over initially hard ones).

    ``hard``: the (N,) mask of initially hard prompts (``initial_hard_prompts(task)``, computed here if None;
    the jax simulator passes it in, since its task's arrays are traced). A task with evaluation prompts held out of
    training (``task.evaluated()``, an (N,) mask, e.g. ``make_sharpen(eval_prompts=M)``) is measured on them alone."""
    ex = task.exact(params, xp, cfg.floor)
    held = evaluated(task)
    mask = None if held is None else xp.asarray(held, dtype=bool)
    mean = sp.prompt_mean(xp, mask)
    out = sp.exact_pass_at_k(ex["pass_rate"], xp, mask=mask)
    extra = tuple(sorted({int(k) for k in cfg.extra_pass_at_k} - set(sp.PASS_AT_K)))
    if extra:
        out.update(sp.exact_pass_at_k(ex["pass_rate"], xp, ks=extra, mask=mask))
    hard = xp.asarray(initial_hard_prompts(task) if hard is None else hard)
    if mask is not None:
        hard = hard & mask
    n_hard = xp.sum(hard.astype(ex["pass_rate"].dtype))
    out["pass@1_hard"] = xp.sum(xp.where(hard, ex["pass_rate"], 0.0)) / xp.maximum(n_hard, 1.0)
    out.update({
        "entropy": mean(ex["entropy"]),
        "distinct_correct": mean(ex["distinct_correct"]),
        # diversity of the correct answers: entropy of pi restricted to them, and its exp (effective number)
        "correct_entropy": mean(ex["correct_entropy"]),
        "effective_correct": mean(xp.exp(ex["correct_entropy"])),
        "logit_norm": mean(ex["logit_norm"]),
    })
    out.update(task.geometry(params, xp))
    return out
