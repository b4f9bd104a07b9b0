"""A STUB of the part of vLLM's offline API that ``VLLMBackend`` uses, for CPU tests of the backend's own logic.

vLLM needs a CUDA GPU, so the real engine is never exercised by these tests (the GPU smoke script
``scripts/gpu_smoke.sh`` does that). The stub mirrors vLLM's signatures and output types as read from vLLM's
source (``vllm.LLM(model=..., **engine_kwargs)``, ``LLM.generate(prompts, sampling_params=..., use_tqdm=...)``
with ``{"prompt_token_ids": [...]}`` prompts, ``SamplingParams(n, temperature, top_p, max_tokens, logprobs,
seed, stop_token_ids)``, ``RequestOutput(prompt_token_ids, outputs=[CompletionOutput(index, text, token_ids,
cumulative_logprob, logprobs=[{token_id: Logprob(logprob, rank, decoded_token)}], finish_reason,
stop_reason)])``, ``llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights(iterable of
(name, tensor))``, ``LLM.reset_prefix_cache()``, ``LLM.apply_model(func)``), and samples from a transformers model loaded from
the same path, in float32 on CPU, so its log-probs are exact.

Seeding as vLLM does it: ``sampling_params`` is one ``SamplingParams`` for every prompt or a list with one per
prompt; sample j of a request with ``seed`` s draws its noise from s + j, as a pure function of (s + j,
position, token) (a Gumbel-max draw from a generator seeded s + j), so one seeded ``SamplingParams`` shared by
two prompts gives their j-th samples the same noise, and calls seeded s and s + 1 share shifted samples.
``seed=None`` draws from torch's global generator.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    logprobs: int | None = None
    seed: int | None = None
    stop_token_ids: list[int] = field(default_factory=list)


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: Any
    outputs: list[CompletionOutput]
    finished: bool = True


class _Runner:
    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.loaded: list[str] = []
        model.load_weights = self._load_weights  # vLLM models take (name, tensor) pairs

    def _load_weights(self, weights: Any) -> set[str]:
        params = dict(self.model.named_parameters())
        names = set()
        with torch.no_grad():
            for name, tensor in weights:
                params[name].copy_(tensor)
                names.add(name)
        self.loaded.append(f"{len(names)} tensors")
        return names


class LLM:
    instances: list["LLM"] = []
    in_process = True  # False: an engine whose core runs in another process (no model_executor here)
    prefix_reset_ok = True  # False: reset_prefix_cache() reports failure, as vLLM does with requests running

    def __init__(self, model: str, **kwargs: Any) -> None:
        from transformers import AutoModelForCausalLM

        self.kwargs = kwargs
        net = AutoModelForCausalLM.from_pretrained(model, local_files_only=True).eval()
        self.runner = _Runner(net)
        worker = types.SimpleNamespace(model_runner=self.runner)
        self.llm_engine = types.SimpleNamespace(model_executor=types.SimpleNamespace(driver_worker=worker)) \
            if LLM.in_process else types.SimpleNamespace(engine_core="another process")
        self.prefix_cache_resets = 0
        self.applied = 0
        LLM.instances.append(self)

    def reset_prefix_cache(self) -> bool:
        self.prefix_cache_resets += 1
        return LLM.prefix_reset_ok

    def apply_model(self, func: Any) -> list[Any]:
        self.applied += 1
        return [func(self.runner.model)]

    @torch.no_grad()
    def generate(self, prompts: list[dict[str, list[int]]], sampling_params: SamplingParams | list[SamplingParams],
                 use_tqdm: bool = True) -> list[RequestOutput]:
        per_prompt = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        if len(per_prompt) != len(prompts):
            raise ValueError("The lengths of prompts and sampling_params must be the same.")
        outs = []
        for r, (prompt, sp) in enumerate(zip(prompts, per_prompt)):
            ids = list(prompt["prompt_token_ids"])
            completions = []
            for j in range(sp.n):
                gen = torch.Generator().manual_seed(int(sp.seed) + j) if sp.seed is not None else None
                seq, lps, reason, stop = list(ids), [], "length", None
                for _ in range(sp.max_tokens):
                    logits = self.runner.model(torch.tensor([seq])).logits[0, -1].float() / sp.temperature
                    logp = torch.log_softmax(logits, dim=-1)
                    u = torch.rand(logp.shape, generator=gen).clamp_min(1e-20)
                    tok = int(torch.argmax(logp - torch.log(-torch.log(u))))  # Gumbel-max: a draw from exp(logp)
                    seq.append(tok)
                    lps.append({tok: Logprob(float(logp[tok]), rank=int((logp > logp[tok]).sum()) + 1)})
                    if tok in sp.stop_token_ids:
                        reason, stop = "stop", tok
                        break
                toks = seq[len(ids):]
                completions.append(CompletionOutput(j, "", toks, sum(d[t].logprob for t, d in zip(toks, lps)),
                                                    lps if sp.logprobs is not None else None, reason, stop))
            outs.append(RequestOutput(str(r), None, ids, None, completions))
        return outs


def install(monkeypatch: Any) -> types.ModuleType:
    """Put this stub in ``sys.modules['vllm']`` for one test and pretend a CUDA device is present."""
    import sys

    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = LLM, SamplingParams
    module.__stub__ = True
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(LLM, "in_process", True)
    monkeypatch.setattr(LLM, "prefix_reset_ok", True)
    LLM.instances.clear()
    return module
