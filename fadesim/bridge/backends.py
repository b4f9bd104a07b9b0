"""Rollout backends behind one interface: generate(prompts, n=G) -> Rollouts.

``HFBackend`` samples with transformers' ``generate`` (CPU or GPU); ``VLLMBackend`` uses vLLM's offline
``LLM.generate`` with ``SamplingParams(n=G, logprobs=...)`` (GPU only, imported lazily). Rollouts are grouped
consecutively: rollout g * n + j is the j-th sample of prompt g.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch


@dataclass
class Rollouts:
    prompts: list[str]  # (B,)
    completions: list[str]  # (B * G,)
    sequences: torch.Tensor  # (B * G, P + T) prompt then response token ids
    response_mask: torch.Tensor  # (B * G, T) bool: response tokens up to and including eos
    prompt_length: int  # P
    group_size: int  # G

    @property
    def response_ids(self) -> torch.Tensor:
        return self.sequences[:, self.prompt_length:]

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
        empty = (~self.response_mask.bool()).all(dim=1).nonzero().flatten().tolist()
        if empty:
            raise ValueError(f"rollouts {empty[:8]} have empty completions (no response tokens)")


class HFBackend:
    """Sampling with a transformers causal LM's ``generate`` (temperature 1, no top-k/top-p truncation)."""

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int = 4) -> None:
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, int(max_new_tokens)

    @torch.no_grad()
    def generate(self, prompts: Sequence[str], n: int, *, seed: int) -> Rollouts:
        ids = [self.tokenizer.encode(p) for p in prompts]
        lengths = {len(x) for x in ids}
        if len(lengths) != 1:
            raise ValueError("HFBackend needs prompts of equal token length (no padding in this minimal backend)")
        device = next(self.model.parameters()).device
        inputs = torch.tensor(ids, device=device)
        torch.manual_seed(seed)  # the only randomness: generate's sampling
        out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), do_sample=True, top_k=0,
                                  top_p=1.0, temperature=1.0, num_return_sequences=n,
                                  max_new_tokens=self.max_new_tokens, min_new_tokens=1,
                                  pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.tokenizer.eos_token_id)
        P = inputs.shape[1]
        response = out[:, P:]
        T = response.shape[1]
        is_eos = response == self.tokenizer.eos_token_id
        first_eos = torch.where(is_eos.any(1), is_eos.float().argmax(1), torch.full_like(is_eos[:, 0], T, dtype=torch.long))
        mask = torch.arange(T, device=device)[None, :] <= first_eos[:, None]
        completions = [self.tokenizer.decode(row.tolist()) for row in response]
        return Rollouts(prompts=list(prompts), completions=completions, sequences=out.cpu(),
                        response_mask=mask.cpu(), prompt_length=P, group_size=n)


class VLLMBackend:  # pragma: no cover - needs a GPU and vLLM
    """vLLM offline generation (GPU). Weights are synced from the training model before each generate."""

    def __init__(self, model_path: str, tokenizer: Any, *, max_new_tokens: int = 64, **llm_kwargs: Any) -> None:
        try:
            import vllm
        except ImportError as err:
            raise ImportError("VLLMBackend needs vLLM (pip install vllm) on a machine with a GPU") from err
        if not torch.cuda.is_available():
            raise RuntimeError("VLLMBackend needs a CUDA GPU; use HFBackend on CPU")
        self._vllm = vllm
        self.llm = vllm.LLM(model=model_path, **llm_kwargs)
        self.tokenizer, self.max_new_tokens = tokenizer, int(max_new_tokens)

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Copy the training model's weights into the vLLM engine (in-process engines)."""
        engine = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        engine.load_weights(model.state_dict().items())

    def generate(self, prompts: Sequence[str], n: int, *, seed: int) -> Rollouts:
        params = self._vllm.SamplingParams(n=n, temperature=1.0, max_tokens=self.max_new_tokens, logprobs=0, seed=seed)
        outputs = self.llm.generate(list(prompts), params)
        ids = [self.tokenizer.encode(p) for p in prompts]
        P = len(ids[0])
        rows, completions = [], []
        for prompt_ids, out in zip(ids, outputs):
            for comp in out.outputs:
                rows.append(prompt_ids + list(comp.token_ids))
                completions.append(comp.text)
        T = max(len(r) for r in rows) - P
        seqs = torch.full((len(rows), P + T), self.tokenizer.pad_token_id)
        mask = torch.zeros((len(rows), T), dtype=torch.bool)
        for i, r in enumerate(rows):
            seqs[i, :len(r)] = torch.tensor(r)
            mask[i, :len(r) - P] = True
        return Rollouts(list(prompts), completions, seqs, mask, P, n)
