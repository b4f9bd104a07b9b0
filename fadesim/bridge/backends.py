"""Rollout backends behind one interface: ``generate(prompts, n=G, seed=...) -> Rollouts``.

A ``Rollouts`` holds, for each of the B * G rollouts, the completion text, the token ids (prompt then
response) and the sampler's per-token log-probs. Rollouts are grouped consecutively: rollout g * G + j is the
j-th sample of prompt g. Prompts of different token lengths are left-padded (``prompt_mask`` marks the real
prompt tokens; ``attention_mask`` and ``position_ids`` give the forward pass that matches generation);
responses are right-padded and ``response_mask`` covers each response up to and including its first eos.

``HFBackend`` samples with transformers' ``generate`` (CPU or GPU). ``VLLMBackend`` uses vLLM's offline
``LLM.generate`` with ``SamplingParams(n=G, logprobs=0)`` on token-id prompts (GPU only, imported lazily), and
``sync_weights(model)`` copies the training model's weights into the engine (the trainer calls it before
every generation).
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from typing import Any, Sequence

import torch


@dataclass
class Rollouts:
    prompts: list[str]  # (B,)
    completions: list[str]  # (B * G,)
    sequences: torch.Tensor  # (B * G, P + T) left-padded prompt, then the right-padded response token ids
    response_mask: torch.Tensor  # (B * G, T) bool: response tokens up to and including the first eos
    prompt_length: int  # P (the padded prompt width)
    group_size: int  # G
    prompt_mask: torch.Tensor | None = None  # (B * G, P) bool, False on left padding; None: no padding
    sampler_logprobs: torch.Tensor | None = None  # (B * G, T) log-prob of each response token under the sampler
    sampler_entropy: torch.Tensor | None = None  # (B * G, T) entropy of the distribution each token was drawn from
    # (B * G, T) log-prob of that distribution's most likely token minus its second's (nats): how peaked the policy is
    sampler_margin: torch.Tensor | None = None
    # the sampler's logits processing that the learner reproduces: eos was impossible at the first
    # ``min_new_tokens`` response positions (transformers' min_new_tokens, vLLM's min_tokens)
    min_new_tokens: int = 0
    eos_token_id: int | None = None

    @property
    def response_ids(self) -> torch.Tensor:
        return self.sequences[:, self.prompt_length:]

    @property
    def attention_mask(self) -> torch.Tensor:
        """(N, P + T): 0 on prompt padding, 1 elsewhere (positions after eos are never read: causal)."""
        N, L = self.sequences.shape
        mask = torch.ones((N, L), dtype=torch.long)
        if self.prompt_mask is not None:
            mask[:, :self.prompt_length] = self.prompt_mask.long()
        return mask

    @property
    def position_ids(self) -> torch.Tensor:
        """(N, P + T): 0 at the first real prompt token (as transformers' generate does with left padding)."""
        return (self.attention_mask.cumsum(dim=1) - 1).clamp(min=0)

    def validate(self) -> None:
        n = len(self.completions)
        if n == 0:
            raise ValueError("the backend returned no rollouts")
        if self.group_size < 1 or n % self.group_size:
            raise ValueError(f"{n} rollouts cannot be split into groups of G = {self.group_size}")
        if n != len(self.prompts) * self.group_size:
            raise ValueError(f"{n} rollouts for {len(self.prompts)} prompts x G = {self.group_size}")
        if self.sequences.shape[0] != n or self.response_mask.shape[0] != n:
            raise ValueError("sequences / response_mask do not have one row per rollout")
        T = self.sequences.shape[1] - self.prompt_length
        if self.response_mask.shape[1] != T:
            raise ValueError(f"response_mask has {self.response_mask.shape[1]} columns; the sequences hold T = {T} "
                             "response tokens")
        if self.prompt_mask is not None and tuple(self.prompt_mask.shape) != (n, self.prompt_length):
            raise ValueError(f"prompt_mask has shape {tuple(self.prompt_mask.shape)}; expected ({n}, "
                             f"{self.prompt_length})")
        for name in ("sampler_logprobs", "sampler_entropy", "sampler_margin"):
            value = getattr(self, name)
            if value is not None and value.shape != self.response_mask.shape:
                raise ValueError(f"{name} has shape {tuple(value.shape)}; expected {tuple(self.response_mask.shape)}")
        if self.min_new_tokens < 0:
            raise ValueError(f"min_new_tokens must be >= 0; got {self.min_new_tokens}")
        if self.min_new_tokens > 0 and self.eos_token_id is None:
            raise ValueError("min_new_tokens > 0 forbids eos at the first positions, but eos_token_id is None")
        empty = (~self.response_mask.bool()).all(dim=1).nonzero().flatten().tolist()
        if empty:
            raise ValueError(f"rollouts {empty[:8]} have empty completions (no response tokens)")


def pack_rollouts(prompts: Sequence[str], prompt_ids: Sequence[Sequence[int]],
                  responses: Sequence[Sequence[int]], logprobs: Sequence[Sequence[float]] | None,
                  tokenizer: Any, group_size: int, *, entropies: Sequence[Sequence[float]] | None = None,
                  margins: Sequence[Sequence[float]] | None = None, min_new_tokens: int = 0) -> Rollouts:
    """Rollouts from per-rollout token lists: ``prompt_ids[i]`` (one per prompt), ``responses[i * G + j]``,
    the sampler's log-prob of each of its tokens and (optionally) the entropy and the top-token margin (log-prob of
    the first minus the second most likely token) of each position's sampling distribution. Each response is cut after its first eos; prompts are left-padded and responses
    right-padded with the tokenizer's pad id. ``min_new_tokens``: the sampler forbade eos at that many
    leading positions (the learner applies the same mask)."""
    G, eos, pad = int(group_size), tokenizer.eos_token_id, tokenizer.pad_token_id
    if len(responses) != len(prompt_ids) * G:
        raise ValueError(f"{len(responses)} responses for {len(prompt_ids)} prompts x G = {G}")
    cut = []
    per_token: dict[str, tuple[Sequence[Sequence[float]] | None, list[list[float]]]] = {
        "log-probs": (logprobs, []), "entropies": (entropies, []), "margins": (margins, [])}
    for i, resp in enumerate(responses):
        resp = list(resp)
        n = resp.index(eos) + 1 if eos in resp else len(resp)
        cut.append(resp[:n])
        for what, (values, kept) in per_token.items():
            if values is not None:
                if len(values[i]) < n:
                    raise ValueError(f"rollout {i}: {len(values[i])} {what} for {n} response tokens")
                kept.append([float(v) for v in values[i][:n]])
    P = max(len(p) for p in prompt_ids)
    T = max(1, max(len(r) for r in cut))
    N = len(cut)
    seqs = torch.full((N, P + T), pad, dtype=torch.long)
    prompt_mask = torch.zeros((N, P), dtype=torch.bool)
    response_mask = torch.zeros((N, T), dtype=torch.bool)
    tables = {what: torch.zeros((N, T), dtype=torch.float32) if values is not None else None
              for what, (values, _) in per_token.items()}
    for i, resp in enumerate(cut):
        p = list(prompt_ids[i // G])
        seqs[i, P - len(p):P] = torch.tensor(p, dtype=torch.long)
        prompt_mask[i, P - len(p):] = True
        if resp:
            seqs[i, P:P + len(resp)] = torch.tensor(resp, dtype=torch.long)
            response_mask[i, :len(resp)] = True
            for what, table in tables.items():
                if table is not None:
                    table[i, :len(resp)] = torch.tensor(per_token[what][1][i])
    completions = [tokenizer.decode(r) for r in cut]
    padded = bool((~prompt_mask).any())
    return Rollouts(prompts=list(prompts), completions=completions, sequences=seqs, response_mask=response_mask,
                    prompt_length=P, group_size=G, prompt_mask=prompt_mask if padded else None,
                    sampler_logprobs=tables["log-probs"], sampler_entropy=tables["entropies"],
                    sampler_margin=tables["margins"], min_new_tokens=int(min_new_tokens), eos_token_id=eos)


class HFBackend:
    """Sampling with a transformers causal LM's ``generate`` (temperature 1, no top-k/top-p truncation).

    ``min_new_tokens=0`` (default): the sampler is the model itself. ``min_new_tokens=m > 0`` forbids eos at the
    first m response positions: ``generate`` then draws those tokens from the model's distribution
    renormalised without eos. The rollouts record that processing (``Rollouts.min_new_tokens``), and the
    trainer computes its log-probs, ratios and entropy from the same processed distribution, so learner and
    sampler agree in both modes (the logged ``sampler_logprob_gap`` is float rounding). The sampler's
    log-prob and entropy of each position come from the processed scores ``generate`` sampled from.

    ``shared_prefix=True`` samples with the backend's own loop instead of ``generate``: each prompt's forward pass
    (the prefill) runs once and its KV cache is repeated for its G samples (``generate`` with
    ``num_return_sequences`` runs the prefill G times), then tokens are drawn from the full temperature-1
    softmax with a ``torch.Generator`` seeded by ``seed``, until every rollout has emitted eos or
    ``max_new_tokens`` is reached. The distribution is the same; the draws are not promised to equal
    ``generate``'s for the same seed. On SmolLM2 (28-token prompts, 8 prompts x 8 rollouts of up to 8 tokens, 2
    cores) generation took 8-9 s instead of 12-17 s (README, LLM bridge).

    ``sampler`` (the shared-prefix loop's draw, both exact draws from the same softmax): ``"multinomial"``
    (``torch.multinomial``, the default, which every committed run before 2026-12-06 used) or ``"inverse_cdf"``
    (one uniform per row against the float64 cumulative sum of the probabilities, ``torch.searchsorted``; a
    probability-0 token, e.g. a forbidden eos, has an empty interval and is never drawn). On CPU the second is about
    12x faster over SmolLM2's 49152-token vocabulary (5 ms against 62 ms for 64 rows, 114 ms against 542 ms for 512:
    benchmarks/real_model_step.py); the same seed draws different tokens under the two."""

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int = 4, min_new_tokens: int = 0,
                 shared_prefix: bool = False, sampler: str = "multinomial") -> None:
        if max_new_tokens < 1 or not 0 <= min_new_tokens <= max_new_tokens:
            raise ValueError(f"need 0 <= min_new_tokens <= max_new_tokens and max_new_tokens >= 1; got "
                             f"{min_new_tokens}, {max_new_tokens}")
        if sampler not in SAMPLERS:
            raise ValueError(f"HFBackend: sampler must be one of {', '.join(SAMPLERS)}; got {sampler!r}")
        if sampler != "multinomial" and not shared_prefix:
            raise ValueError("HFBackend: sampler applies to the shared-prefix loop (shared_prefix=True); transformers' "
                             "generate draws with its own multinomial")
        if getattr(tokenizer, "eos_token_id", None) is None:
            raise ValueError("HFBackend: the tokenizer has no eos token (eos_token_id is None), so completions could "
                             "never end and min_new_tokens could not be reproduced by the learner")
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.min_new_tokens = int(max_new_tokens), int(min_new_tokens)
        self.shared_prefix, self.sampler = bool(shared_prefix), sampler

    @torch.no_grad()
    def generate(self, prompts: Sequence[str], n: int, *, seed: int) -> Rollouts:
        ids = [self.tokenizer.encode(p) for p in prompts]
        if not ids or any(len(x) == 0 for x in ids):
            raise ValueError("HFBackend needs at least one prompt, each encoding to at least one token")
        if n < 1:
            raise ValueError(f"HFBackend needs n >= 1 samples per prompt; got {n}")
        P = max(len(x) for x in ids)
        pad = self.tokenizer.pad_token_id
        device = next(self.model.parameters()).device
        inputs = torch.tensor([[pad] * (P - len(x)) + list(x) for x in ids], device=device)
        attention = torch.tensor([[0] * (P - len(x)) + [1] * len(x) for x in ids], device=device)
        if self.shared_prefix:
            return self._generate_shared(prompts, ids, inputs, attention, n, seed)
        torch.manual_seed(seed)  # the only randomness: generate's sampling
        out = self.model.generate(inputs, attention_mask=attention, do_sample=True, top_k=0, top_p=1.0,
                                  temperature=1.0, num_return_sequences=n, max_new_tokens=self.max_new_tokens,
                                  min_new_tokens=self.min_new_tokens, pad_token_id=pad,
                                  eos_token_id=self.tokenizer.eos_token_id, return_dict_in_generate=True,
                                  output_scores=True)
        response = out.sequences[:, P:]
        # log-prob of each drawn token under the processed logits it was drawn from, one step at a time (a
        # (N, T, V) stack would be gigabytes for a real vocabulary)
        logp, ent, margin = [], [], []
        for t, step in enumerate(out.scores):
            logp_t = torch.log_softmax(step.float(), dim=-1)
            logp.append(logp_t.gather(-1, response[:, t, None])[:, 0])
            ent.append(entropy_from_logprobs(logp_t))
            margin.append(top_margin(logp_t))
        return pack_rollouts(prompts, ids, response.cpu().tolist(), torch.stack(logp, 1).cpu().tolist(),
                             self.tokenizer, n, entropies=torch.stack(ent, 1).cpu().tolist(),
                             margins=torch.stack(margin, 1).cpu().tolist(), min_new_tokens=self.min_new_tokens)

    def _generate_shared(self, prompts: Sequence[str], ids: list[list[int]], inputs: torch.Tensor,
                         attention: torch.Tensor, n: int, seed: int) -> Rollouts:
        """One prefill per prompt, its KV cache repeated n times, then temperature-1 sampling (see the class)."""
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        device = inputs.device
        positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
        logits, cache = shared_prefill(self.model, inputs, attention, positions, n)
        attention = attention.repeat_interleave(n, dim=0)
        position = positions[:, -1:].repeat_interleave(n, dim=0) + 1
        generator = torch.Generator(device=device).manual_seed(int(seed))
        N = logits.shape[0]
        done = torch.zeros(N, dtype=torch.bool, device=device)
        drawn, logp, ent, margin = [], [], [], []
        for t in range(self.max_new_tokens):
            if t < self.min_new_tokens:
                logits[:, eos] = float("-inf")
            logp_t = torch.log_softmax(logits, dim=-1)
            probs = logp_t.exp()
            token = draw(probs, generator, self.sampler)
            token = torch.where(done, torch.full_like(token, pad), token)  # cut by pack_rollouts after eos
            drawn.append(token)
            logp.append(logp_t.gather(-1, token[:, None])[:, 0])
            ent.append(entropy_from_logprobs(logp_t, probs))
            margin.append(top_margin(logp_t))
            done |= token == eos
            if bool(done.all()) or t == self.max_new_tokens - 1:
                break
            attention = torch.cat([attention, torch.ones_like(attention[:, :1])], dim=1)
            out = self.model(token[:, None], attention_mask=attention, position_ids=position, past_key_values=cache,
                             use_cache=True)
            logits = out.logits[:, -1].float()
            position = position + 1
        return pack_rollouts(prompts, ids, torch.stack(drawn, 1).cpu().tolist(), torch.stack(logp, 1).cpu().tolist(),
                             self.tokenizer, n, entropies=torch.stack(ent, 1).cpu().tolist(),
                             margins=torch.stack(margin, 1).cpu().tolist(), min_new_tokens=self.min_new_tokens)


def shared_prefill(model: Any, inputs: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, n: int
                   ) -> tuple[torch.Tensor, Any]:
    """One forward pass over B (left-padded) prompts with the KV cache, shared by n rollouts each: (the float32
    logits at each prompt's last position, repeated to (B * n, V) in group order, the cache repeated to B * n rows).
    Runs under the caller's grad mode: the sampler's (no grad) and the learner's, where the gradient of the n copies
    sums into the one pass."""
    keep = {"logits_to_keep": 1} if _keeps_logits(model) else {}
    out = model(inputs, attention_mask=attention, position_ids=positions, use_cache=True, **keep)
    cache = out.past_key_values
    cache.batch_repeat_interleave(n)  # prompt g's keys and values for its n rollouts, in group order
    return out.logits[:, -1].float().repeat_interleave(n, dim=0), cache


def _keeps_logits(model: Any) -> bool:
    """Whether the model's forward takes transformers' ``logits_to_keep`` (the output layer on the last
    positions only)."""
    import inspect

    return "logits_to_keep" in inspect.signature(model.forward).parameters


SAMPLERS = ("multinomial", "inverse_cdf")


def draw(probs: torch.Tensor, generator: torch.Generator, sampler: str = "multinomial") -> torch.Tensor:
    """One token per row of ``probs`` (N, V), exactly from those probabilities: ``torch.multinomial``, or by the
    inverse CDF (one float64 uniform per row, scaled by the row's total, against the float64 cumulative sum)."""
    if sampler == "multinomial":
        return torch.multinomial(probs, 1, generator=generator)[:, 0]
    cdf = probs.double().cumsum(-1)
    u = torch.rand(probs.shape[0], 1, generator=generator, dtype=torch.float64, device=probs.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True)[:, 0].clamp(max=probs.shape[-1] - 1)


def entropy_from_logprobs(logp: torch.Tensor, probs: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy over the last axis of a log-softmax; tokens of probability 0 (log-prob -inf, e.g. a forbidden
    eos) contribute 0, not NaN, in the value and in its gradient (the -inf entries are replaced before the product,
    so no 0 * inf reaches autograd). ``probs``: ``logp.exp()`` where the caller has it already."""
    finite = logp.nan_to_num(neginf=0.0)  # a log-softmax holds no NaN or +inf: only the -inf entries change
    return -((logp.exp() if probs is None else probs) * finite).sum(-1)


def top_margin(logp: torch.Tensor) -> torch.Tensor:
    """Over the last axis of a log-softmax: the log-prob of the most likely token minus the second's (nats, >= 0;
    inf where one token has all the mass). The policy's peakedness, a geometry measure of the sign axis (arXiv
    2607.01490: negative mass reshapes the logits it pushes down)."""
    top = logp.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1]


def _extract(outputs: Any) -> tuple[list[list[int]], list[list[int]], list[list[float]]]:
    """Prompt ids, response ids and sampled-token log-probs from vLLM ``RequestOutput``s (``logprobs=0``:
    each position's dict holds the sampled token's ``Logprob``)."""
    prompt_ids, responses, logprobs = [], [], []
    for req in outputs:
        prompt_ids.append(list(req.prompt_token_ids))
        for comp in req.outputs:
            tokens = list(comp.token_ids)
            if comp.logprobs is None or len(comp.logprobs) != len(tokens):
                raise RuntimeError("vLLM returned no per-token log-probs; VLLMBackend samples with logprobs=0")
            responses.append(tokens)
            logprobs.append([float(pos[tok].logprob) for tok, pos in zip(tokens, comp.logprobs)])
    return prompt_ids, responses, logprobs


def request_seed(seed: int, prompt_index: int) -> int:
    """The seed of prompt ``prompt_index``'s request in a call seeded ``seed``: a 62-bit hash of both.

    vLLM draws sample j of a request from seed + j, and its sampling noise is a pure function of (seed, position,
    token). One seeded SamplingParams for every prompt would give sample j of every prompt the same noise, and
    calls whose seeds differ by less than n would share samples; hashed request seeds are 2^62 apart on average,
    so the ranges [s, s + n) of different prompts and calls never meet in practice."""
    digest = hashlib.blake2b(f"{int(seed)}/{int(prompt_index)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class VLLMBackend:
    """vLLM offline generation in this process (GPU), with weight sync from the training model.

    The engine runs in-process (``distributed_executor_backend="external_launcher"``, one rank, as TRL's
    colocate mode does, with ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` so the engine core is not a subprocess);
    the constructor checks that it is (``llm.llm_engine.model_executor`` exists) and raises otherwise. So
    ``sync_weights`` can hand the training model's parameters to the engine's ``load_weights`` (through the
    public ``LLM.apply_model`` where vLLM has it) and reset the prefix cache (an error if vLLM reports it could
    not). Prompts are sent as token ids from the bridge's tokenizer and completions decoded with it, so trainer
    and sampler see the same tokens. Sampling: temperature 1, no top-k/top-p, ``logprobs=0`` (the sampled
    token's log-prob, ``logprobs_mode="processed_logprobs"``), one ``SamplingParams`` per prompt with its own
    hashed seed (``request_seed``).

    Defaults chosen here rather than vLLM's: ``gpu_memory_utilization=0.3`` (vLLM's 0.9 would leave the
    colocated trainer no memory), ``dtype="bfloat16"`` (``"float32"`` makes the sampler's log-probs the
    learner's to float rounding: the exactness check), a free ``MASTER_PORT`` (unless one is set)."""

    def __init__(self, model_path: str, tokenizer: Any, *, max_new_tokens: int = 64, seed: int = 0,
                 gpu_memory_utilization: float = 0.3, dtype: str = "bfloat16", max_model_len: int | None = None,
                 enforce_eager: bool = False, **llm_kwargs: Any) -> None:
        try:
            import vllm
        except ImportError as err:
            raise ImportError("VLLMBackend needs vLLM (pip install -e '.[vllm]') on a machine with a CUDA GPU; use "
                              "HFBackend on CPU") from err
        if not torch.cuda.is_available():
            raise RuntimeError("VLLMBackend needs a CUDA GPU; use HFBackend on CPU")
        if not 0 < gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1]; got {gpu_memory_utilization}")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process
        port = os.environ.get("MASTER_PORT") or str(_free_port())
        for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                           ("MASTER_PORT", port)):
            os.environ.setdefault(key, value)  # the in-process (external_launcher) engine is rank 0 of 1
        kwargs = {"distributed_executor_backend": "external_launcher", "seed": seed,
                  "logprobs_mode": "processed_logprobs", "gpu_memory_utilization": gpu_memory_utilization,
                  "dtype": dtype, "enforce_eager": enforce_eager,
                  **({"max_model_len": int(max_model_len)} if max_model_len else {}), **llm_kwargs}
        self._vllm = vllm
        self.llm = vllm.LLM(model=model_path, **kwargs)
        if getattr(getattr(self.llm, "llm_engine", None), "model_executor", None) is None:
            raise RuntimeError(
                "VLLMBackend: the vLLM engine does not run in this process (llm.llm_engine.model_executor is "
                "missing), so the training model's weights cannot reach it; set VLLM_ENABLE_V1_MULTIPROCESSING=0 "
                "before vLLM starts and use distributed_executor_backend='external_launcher'")
        self.tokenizer, self.max_new_tokens = tokenizer, int(max_new_tokens)

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Copy the training model's current weights into the engine (names as in the HF checkpoint)."""
        weights = [(name, p.detach()) for name, p in model.named_parameters()]
        if hasattr(self.llm, "apply_model"):  # vLLM's public API: runs the function on the engine's model
            self.llm.apply_model(lambda engine_model: engine_model.load_weights(iter(weights)))
        else:
            engine_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
            engine_model.load_weights(iter(weights))
        if self.llm.reset_prefix_cache() is False:
            raise RuntimeError("VLLMBackend: vLLM could not reset its prefix cache after the weight sync (requests "
                               "still running?), so cached prefixes of the old weights could be reused")

    def generate(self, prompts: Sequence[str], n: int, *, seed: int) -> Rollouts:
        ids = [self.tokenizer.encode(p) for p in prompts]
        params = [self._vllm.SamplingParams(n=n, temperature=1.0, top_p=1.0, max_tokens=self.max_new_tokens,
                                            logprobs=0, seed=request_seed(seed, i),
                                            stop_token_ids=[self.tokenizer.eos_token_id])
                  for i in range(len(ids))]
        outputs = self.llm.generate([{"prompt_token_ids": x} for x in ids], sampling_params=params, use_tqdm=False)
        prompt_ids, responses, logprobs = _extract(outputs)
        if prompt_ids != [list(x) for x in ids]:
            raise RuntimeError("vLLM's outputs are not in prompt order")
        return pack_rollouts(prompts, ids, responses, logprobs, self.tokenizer, n)
