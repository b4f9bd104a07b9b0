"""Tokenizers for the bridge: a character-level one built locally from an alphabet (no downloads), and an
adapter giving a transformers tokenizer the same interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"


@dataclass
class CharTokenizer:
    """Token ids: 0 = pad, 1 = bos, 2 = eos, then one id per character of ``alphabet``."""

    alphabet: str
    vocab: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if len(set(self.alphabet)) != len(self.alphabet) or not self.alphabet:
            raise ValueError("alphabet must be a non-empty string of distinct characters")
        self.vocab = [PAD, BOS, EOS, *self.alphabet]
        self._index = {c: i for i, c in enumerate(self.vocab)}

    pad_token_id, bos_token_id, eos_token_id = 0, 1, 2

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, *, bos: bool = True) -> list[int]:
        unknown = sorted(set(text) - set(self.alphabet))
        if unknown:
            raise ValueError(f"characters {unknown} are not in the tokenizer's alphabet")
        return ([self.bos_token_id] if bos else []) + [self._index[c] for c in text]

    def to_hf(self):  # -> transformers.PreTrainedTokenizerFast
        """The same tokenizer as a ``transformers.PreTrainedTokenizerFast`` (built locally, no download), for
        libraries that need one (TRL's GRPOTrainer, vLLM): the same ids, bos prepended by ``__call__``/``encode``
        (``add_special_tokens``), characters concatenated by ``decode``."""
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
        from transformers import PreTrainedTokenizerFast

        core = Tokenizer(models.WordLevel(dict(self._index), unk_token=None))
        core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
        core.decoder = decoders.Fuse()
        core.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, self.bos_token_id)])
        return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS, eos_token=EOS)

    def decode(self, ids: list[int]) -> str:
        """Text up to the first eos; pad/bos are dropped."""
        out = []
        for i in ids:
            if i == self.eos_token_id:
                break
            if i >= 3:
                out.append(self.vocab[i])
        return "".join(out)


class HFTokenizer:
    """The bridge's tokenizer interface (``encode``, ``decode``, ``pad_token_id``, ``eos_token_id``,
    ``vocab_size``) over a transformers tokenizer, e.g. ``AutoTokenizer.from_pretrained(path,
    local_files_only=True)``. ``decode`` stops at the first eos and drops special tokens; a tokenizer without
    a pad token pads with eos (pads are masked, never trained on)."""

    def __init__(self, tokenizer: Any) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos token: completions could never end")
        self.tokenizer = tokenizer
        self.eos_token_id = int(tokenizer.eos_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_token_id)
        self.vocab_size = len(tokenizer)

    @classmethod
    def from_pretrained(cls, path: str) -> "HFTokenizer":
        from transformers import AutoTokenizer

        return cls(AutoTokenizer.from_pretrained(path, local_files_only=True))

    def encode(self, text: str, *, bos: bool = True) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=bos)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        ids = list(ids)
        if self.eos_token_id in ids:
            ids = ids[:ids.index(self.eos_token_id)]
        return self.tokenizer.decode(ids, skip_special_tokens=True)
