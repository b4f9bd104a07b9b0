"""A minimal on-policy LLM RL trainer in torch using fadesim advantages, logging the simulator's metrics.

step: prompts -> G rollouts each (backend) -> verifiable rewards -> fadesim advantage (the registry's function
object, on torch tensors) -> token-level policy-gradient loss (optional PPO clip eps_low/eps_high; loss
aggregation token_mean (DAPO), seq_mean (GRPO) or token_sum (Dr.GRPO's constant normaliser)) -> AdamW.
Everything that can fail (generation, validation, rewards, the advantage) runs before the optimizer is
touched, so a bad batch leaves the model and optimizer state unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import torch

import fadesim
from fadesim.advantages.calling import AdvantageCall, mass_metrics, smoothed_entropy
from fadesim.bridge.backends import Rollouts, _keeps_logits, entropy_from_logprobs, shared_prefill
from fadesim.bridge.rewards import RewardFn, exact_match, score
from fadesim.bridge.tasks import ProblemSource
from fadesim.tasks.calibrate import estimate_pass_at_k

LOSS_AGGREGATIONS = ("token_mean", "seq_mean", "token_sum")
OFF_POLICY = (None, "tis")


@dataclass
class BridgeConfig:
    advantage: str = "grpo"
    advantage_params: Mapping[str, Any] = field(default_factory=dict)
    G: int = 8
    prompts_per_step: int = 8
    lr: float = 3e-3
    epochs: int = 1
    eps_low: float = 0.2
    eps_high: float = 0.2
    loss_aggregation: str = "token_mean"
    entropy_decay: float = 0.9
    pass_k: tuple[int, ...] = (1, 2, 4, 8)
    seed: int = 0
    keep_rollouts: bool = False
    # one row per rollout in BridgeTrainer.rollout_log (step, prompt, group, completion, reward, advantage, logprob,
    # entropy, length): the table `fadesim analyze` reads (fadesim.apps.analysis), a few numbers per rollout
    log_rollouts: bool = False
    # on-policy guard: the mean |sampler log-prob - learner log-prob| per response token above which train_on
    # refuses the batch (float32 HF sampling agrees to ~1e-6; a bf16 engine or logits processing the learner
    # does not reproduce exceed it), unless off_policy names a correction
    max_sampler_logprob_gap: float = 1e-3
    # None: refuse off-policy batches; "tis": truncated importance sampling, each token's loss weighted by
    # min(pi_learner / pi_sampler, tis_cap) (the truncated ratio of V-trace, arXiv 1802.01561 eq. 1)
    off_policy: str | None = None
    tis_cap: float = 2.0

    def __post_init__(self) -> None:
        fadesim.info(self.advantage).bind(**dict(self.advantage_params))
        if self.loss_aggregation not in LOSS_AGGREGATIONS:
            raise ValueError(f"loss_aggregation must be one of {LOSS_AGGREGATIONS}; got {self.loss_aggregation!r}")
        if self.off_policy not in OFF_POLICY:
            raise ValueError(f"off_policy must be one of {OFF_POLICY}; got {self.off_policy!r}")
        if not self.max_sampler_logprob_gap >= 0 or not self.tis_cap >= 1:
            raise ValueError(f"need max_sampler_logprob_gap >= 0 and tis_cap >= 1; got "
                             f"{self.max_sampler_logprob_gap}, {self.tis_cap}")
        if self.G < 2 or self.prompts_per_step < 1:
            raise ValueError("G must be >= 2 and prompts_per_step >= 1")


def _shares_prompts(model: torch.nn.Module, ro: Rollouts) -> bool:
    """Whether the learner may run each group's prompt once: groups of G > 1 rollouts whose G prompt rows are
    identical (as every backend packs them), and a model whose forward takes a KV cache."""
    import inspect

    G, P = ro.group_size, ro.prompt_length
    if G < 2 or "past_key_values" not in inspect.signature(model.forward).parameters:
        return False
    prompts = ro.sequences[:, :P].reshape(-1, G, P)
    masks = ro.attention_mask[:, :P].reshape(-1, G, P)
    return bool((prompts == prompts[:, :1]).all() and (masks == masks[:, :1]).all())


def _response_logits(model: torch.nn.Module, ro: Rollouts, shared_prefix: bool | None) -> torch.Tensor:
    """(N, T, V): the logits that predict each response token (positions P - 1 ... P + T - 2).

    Shared prefix (default where ``_shares_prompts``): each group's prompt runs once, with the KV cache, and its
    keys and values are repeated for the group's G responses (``repeat_interleave``, so the gradient of the G
    copies sums into the one prompt pass); then the responses run on that cache. The numbers are the full
    forward pass's to float rounding (``tests/test_bridge.py`` checks log-probs, entropies and gradients), for
    about 1/G of the prompt's compute. Otherwise one forward pass over prompt and response, with the output layer
    on the T + 1 last positions only where the model supports it (transformers' ``logits_to_keep``)."""
    device = next(model.parameters()).device
    P, T, G = ro.prompt_length, ro.response_mask.shape[1], ro.group_size
    seqs, attention, positions = (x.to(device) for x in (ro.sequences, ro.attention_mask, ro.position_ids))
    if shared_prefix is None:
        shared_prefix = _shares_prompts(model, ro)
    elif shared_prefix and not _shares_prompts(model, ro):
        raise ValueError("shared_prefix=True needs groups of G > 1 identical prompts and a model that takes "
                         "past_key_values")
    if shared_prefix:
        first, cache = shared_prefill(model, seqs[::G, :P], attention[::G, :P], positions[::G, :P], G)
        first = first[:, None]
        if T == 1:
            return first
        rest = model(seqs[:, P:P + T - 1], attention_mask=attention[:, :P + T - 1],
                     position_ids=positions[:, P:P + T - 1], past_key_values=cache, use_cache=True).logits.float()
        return torch.cat([first, rest], dim=1)
    # the response is the sequence's tail, and a prompt's positions need no vocabulary projection
    kw = {"logits_to_keep": T + 1} if _keeps_logits(model) else {}
    logits = model(seqs, attention_mask=attention, position_ids=positions, **kw).logits.float()
    start = logits.shape[1] - (seqs.shape[1] - (P - 1))  # where position P - 1 landed
    return logits[:, start:start + T]


def token_logprobs_and_entropy(model: torch.nn.Module, ro: Rollouts, *, shared_prefix: bool | None = None,
                               entropy_grad: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Per response token: log pi(token) and the entropy of the next-token distribution, (N, T) each, both
    under the distribution the sampler drew from (the model's, with eos masked at the first
    ``ro.min_new_tokens`` positions). ``shared_prefix``: None (each group's prompt once where possible), True
    (required), False (one pass over every full sequence); see ``_response_logits``. ``entropy_grad=False``
    computes the entropy outside autograd (the same numbers; the trainer logs it and feeds FADE's signal but never
    differentiates it, and the (N, T, V) intermediates are then freed at once)."""
    T = ro.response_mask.shape[1]
    step_logits = _response_logits(model, ro, shared_prefix)
    m = min(ro.min_new_tokens, T)
    if m > 0:  # the sampler's processing: eos impossible at the first m positions (as generate's min_new_tokens)
        forbid = torch.zeros_like(step_logits, dtype=torch.bool)
        forbid[:, :m, ro.eos_token_id] = True
        step_logits = step_logits.masked_fill(forbid, float("-inf"))
    logp_all = torch.log_softmax(step_logits, dim=-1)
    ids = ro.response_ids.to(logp_all.device)
    logp = logp_all.gather(-1, ids[..., None])[..., 0]
    if entropy_grad:
        return logp, entropy_from_logprobs(logp_all)
    with torch.no_grad():
        return logp, entropy_from_logprobs(logp_all)


def unbiased_pass_at_k(correct: np.ndarray, k: int) -> float:
    """Mean over groups of 1 - C(n - c, k)/C(n, k) (the unbiased estimator from n samples, c correct)."""
    n = correct.shape[1]
    return estimate_pass_at_k(np.full(correct.shape[0], n), correct.sum(1), [k])[k]


class BridgeTrainer:
    def __init__(self, model: torch.nn.Module, backend: Any, task: ProblemSource, *, reward_fn: RewardFn = exact_match,
                 config: BridgeConfig | None = None) -> None:
        self.model, self.backend, self.task, self.reward_fn = model, backend, task, reward_fn
        # dropout off: the PPO ratio and the logged log-probs/entropy need deterministic forward passes
        # (gradients still flow in eval mode; causal LMs carry no batch-norm statistics)
        self.model.eval()
        self.cfg = config or BridgeConfig()
        self.advantage_fn = fadesim.get(self.cfg.advantage)  # the registry's function object itself
        self.entry = fadesim.info(self.cfg.advantage)
        self.call = AdvantageCall(self.cfg.advantage, self.cfg.advantage_params)  # that function, params bound
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.cfg.lr)
        self.rng = np.random.default_rng(self.cfg.seed)
        self.step_count = 0
        self.initial_entropy: float | None = None
        self.entropy_ema: float | None = None
        self.history: list[dict[str, float]] = []
        self.rollouts: list[dict[str, Any]] = []
        self.rollout_log: list[dict[str, Any]] = []

    def advantages(self, rewards: torch.Tensor, seq_logprobs: torch.Tensor, entropy: float) -> torch.Tensor:
        signals = {"entropy": self.entropy_ema if self.entropy_ema is not None else entropy,
                   "initial_entropy": self.initial_entropy or entropy, "step": self.step_count}
        return self.call(rewards, signals=signals, logprobs=seq_logprobs)

    def step(self) -> dict[str, float]:
        """One on-policy step: sync the sampler's weights (backends that hold their own copy, e.g. vLLM),
        generate G rollouts for each of ``prompts_per_step`` fresh problems, train on them. The row carries
        wall-clock timings (``time_sync``, ``time_generate``, ``time_train``, seconds)."""
        t0 = time.perf_counter()
        if hasattr(self.backend, "sync_weights"):
            self.backend.sync_weights(self.model)
        t1 = time.perf_counter()
        problems = self.task.sample(self.rng, self.cfg.prompts_per_step)
        ro = self.backend.generate([p.prompt for p in problems], n=self.cfg.G, seed=self.cfg.seed * 100003 + self.step_count)
        t2 = time.perf_counter()
        answers = [p.answer for p in problems for _ in range(self.cfg.G)]
        row = self.train_on(ro, answers)
        row.update(time_sync=t1 - t0, time_generate=t2 - t1, time_train=time.perf_counter() - t2)
        return row

    def train_on(self, ro: Rollouts, answers: list[str]) -> dict[str, float]:
        ro.validate()
        if ro.group_size != self.cfg.G:
            raise ValueError(f"rollouts have G = {ro.group_size}, the trainer was configured with G = {self.cfg.G}")
        B, G = len(ro.prompts), ro.group_size
        t_start = time.perf_counter()
        rewards = torch.tensor(score(ro.completions, answers, self.reward_fn), dtype=torch.float32).reshape(B, G)
        t_scored = time.perf_counter()
        if self.cfg.epochs == 1:  # one forward pass serves both: at the first epoch the learner's parameters are the
            # old ones, so logp_old is that pass's log-probs, detached (the ratio is exactly 1, as with two passes)
            logp_first, ent = token_logprobs_and_entropy(self.model, ro, entropy_grad=False)
            logp_old, ent = logp_first.detach(), ent.detach()
        else:
            with torch.no_grad():
                logp_old, ent = token_logprobs_and_entropy(self.model, ro)
        # the learner's tensors live on the model's device; rollouts come back on the CPU, and rewards and
        # advantages ((B, G), a few numbers) stay there
        device = logp_old.device
        mask = ro.response_mask.to(device).float()
        gap = None
        if ro.sampler_logprobs is not None:
            # how far the sampler's log-probs are from the learner's for the same tokens: float rounding when
            # both compute one distribution; a bf16 engine or logits processing the learner lacks makes it larger
            gap = float(((ro.sampler_logprobs.to(device) - logp_old).abs() * mask).sum() / mask.sum())
            if gap > self.cfg.max_sampler_logprob_gap and self.cfg.off_policy is None:
                raise ValueError(
                    f"the sampler's log-probs differ from the learner's by {gap:.3g} nats per token (mean), above "
                    f"max_sampler_logprob_gap = {self.cfg.max_sampler_logprob_gap:g}: this batch is off-policy "
                    "(a lower-precision engine, or logits processing such as top-k / repetition penalties that "
                    "the learner does not apply). Make the sampler compute the learner's distribution, raise "
                    "the tolerance, or set off_policy='tis' to correct with truncated importance weights")
        elif self.cfg.off_policy is not None:
            raise ValueError(f"off_policy={self.cfg.off_policy!r} needs the sampler's log-probs; the backend "
                             "returned none (Rollouts.sampler_logprobs is None)")
        entropy = float((ent * mask).sum() / mask.sum())
        if self.initial_entropy is None:
            self.initial_entropy = entropy
        self.entropy_ema = smoothed_entropy(self.entropy_ema, entropy, self.cfg.entropy_decay)
        seq_logp = (logp_old * mask).sum(1).reshape(B, G).cpu()
        adv = self.advantages(rewards, seq_logp, entropy)  # (B, G); raises before any state change
        if not torch.isfinite(adv).all():
            raise ValueError("the advantage returned non-finite values")
        adv_tok = adv.reshape(B * G, 1).to(device)
        if self.cfg.off_policy == "tis":  # per-token truncated importance weight pi_learner / pi_sampler
            adv_tok = adv_tok * torch.exp(logp_old - ro.sampler_logprobs.to(device)).clamp(max=self.cfg.tis_cap)
        grad_norm = 0.0
        t_forward = time.perf_counter()
        time_backward = time_optimizer = 0.0
        for _ in range(self.cfg.epochs):
            logp = logp_first if self.cfg.epochs == 1 else token_logprobs_and_entropy(self.model, ro)[0]
            ratio = torch.exp(logp - logp_old)
            clipped = torch.clamp(ratio, 1 - self.cfg.eps_low, 1 + self.cfg.eps_high)
            per_token = -torch.minimum(ratio * adv_tok, clipped * adv_tok)
            loss = self._aggregate(per_token, mask)
            self.optimizer.zero_grad()
            t0 = time.perf_counter()
            loss.backward()
            t1 = time.perf_counter()
            grad_norm = float(torch.sqrt(sum((p.grad.float() ** 2).sum() for p in self.model.parameters()
                                             if p.grad is not None)))
            self.optimizer.step()
            time_backward += t1 - t0
            time_optimizer += time.perf_counter() - t1
        self.step_count += 1
        d = fadesim.decompose(adv, rewards)
        correct = (rewards > 0.5).numpy()
        row = {"step": self.step_count, "reward_mean": float(rewards.mean()), "entropy": entropy,
               **{k: float(v) for k, v in mass_metrics(d, B).items()}, "grad_norm": grad_norm, "loss": float(loss.detach()),
               "weight_norm": float(torch.sqrt(sum((p.detach().float() ** 2).sum() for p in self.model.parameters()))),
               "entropy_signal": self.entropy_ema, "initial_entropy": self.initial_entropy,
               # where the learner's time went (seconds): the reward function, the first forward pass (with
               # epochs > 1 the no-grad one; the later epochs' passes are in step's time_train only), backward,
               # the grad norm and optimizer step
               "time_score": t_scored - t_start, "time_forward": t_forward - t_scored,
               "time_backward": time_backward, "time_optimizer": time_optimizer,
               "response_tokens": float(mask.sum()), "prompt_tokens": float(ro.attention_mask[:, :ro.prompt_length].sum())}
        if gap is not None:
            row["sampler_logprob_gap"] = gap
        if ro.sampler_entropy is not None:
            row["sampler_entropy_gap"] = float(((ro.sampler_entropy.to(ent.device) - ent).abs() * mask).sum() / mask.sum())
        for k in self.cfg.pass_k:
            if k <= G:
                row[f"pass@{k}"] = unbiased_pass_at_k(correct, k)
        self.history.append(row)
        if self.cfg.log_rollouts:
            self.rollout_log.extend(self._rollout_rows(ro, rewards, adv, seq_logp, ent.detach(), mask))
        if self.cfg.keep_rollouts:
            self.rollouts.append({"rollouts": ro, "rewards": rewards, "advantages": adv.detach().clone(),
                                  "logprobs": logp_old, "metrics": row})
        return row

    def _rollout_rows(self, ro: Rollouts, rewards: torch.Tensor, adv: torch.Tensor, seq_logp: torch.Tensor,
                      ent: torch.Tensor, mask: torch.Tensor) -> list[dict[str, Any]]:
        """This step's rollouts as rows of ``fadesim analyze``'s table: the group is (step, prompt index), the
        entropy the mean over the response's tokens (nats), the length its token count."""
        B, G = rewards.shape
        length = mask.sum(1)
        seq_ent = ((ent * mask).sum(1) / length.clamp(min=1)).cpu().numpy()
        length = length.cpu().numpy()
        return [{"step": self.step_count, "prompt": ro.prompts[b], "group": f"{self.step_count}:{b}",
                 "completion": ro.completions[b * G + g], "reward": float(rewards[b, g]),
                 "advantage": float(adv[b, g]), "logprob": float(seq_logp[b, g]),
                 "entropy": float(seq_ent[b * G + g]), "length": int(length[b * G + g])}
                for b in range(B) for g in range(G)]

    def _aggregate(self, per_token: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.cfg.loss_aggregation == "token_mean":
            return (per_token * mask).sum() / mask.sum()
        if self.cfg.loss_aggregation == "seq_mean":
            return ((per_token * mask).sum(1) / mask.sum(1)).mean()
        return (per_token * mask).sum() / (mask.shape[0] * mask.shape[1])  # token_sum: constant normaliser
