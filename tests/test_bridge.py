"""The LLM bridge on CPU: a tiny random GPT-2 built from a config and a local tokenizer (no downloads)."""

import copy
import os
import re
import types

import numpy as np
import pandas as pd
import pytest
import torch

transformers = pytest.importorskip("transformers")

import fadesim  # noqa: E402 - after the importorskip of transformers
from fadesim.bridge.backends import HFBackend, Rollouts  # noqa: E402 - after the importorskip of transformers
from fadesim.bridge.rewards import exact_match, score  # noqa: E402 - after the importorskip of transformers
from fadesim.bridge.tasks import ArithmeticTask, CopyTask  # noqa: E402 - after the importorskip of transformers
from fadesim.bridge.tokenizer import CharTokenizer, HFTokenizer  # noqa: E402 - after the importorskip of transformers
from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer, token_logprobs_and_entropy, unbiased_pass_at_k  # noqa: E402 - after the importorskip of transformers

pytestmark = pytest.mark.integration  # the LLM stack: pip install -e ".[all]"


def tiny_model(vocab_size: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=vocab_size, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def make_trainer(advantage="grpo", **cfg):
    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size)
    config = BridgeConfig(**{"advantage": advantage, "G": 8, "prompts_per_step": 16, "lr": 1e-2, **cfg})
    return BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=config)


def test_bridge_uses_the_registry_function_objects_and_matches_numpy():
    tr = make_trainer("w_reinforce", keep_rollouts=True)
    assert tr.advantage_fn is fadesim.get("w_reinforce")
    tr.step()
    saved = tr.rollouts[-1]
    np.testing.assert_allclose(saved["advantages"].numpy(), fadesim.get("w_reinforce")(saved["rewards"].numpy()),
                               rtol=1e-6)


def _first_position_eos_probability(tr):
    problems = tr.task.sample(np.random.default_rng(123), 32)
    ro = tr.backend.generate([p.prompt for p in problems], n=1, seed=0)
    with torch.no_grad():
        logits = tr.model(ro.sequences, attention_mask=ro.attention_mask, position_ids=ro.position_ids).logits
    return float(torch.softmax(logits[:, ro.prompt_length - 1].float(), -1)[:, tr.backend.tokenizer.eos_token_id].mean())


# grpo is slow-marked: the default run's w_reinforce(0.1) covers the same trainer path, and is the harder case
@pytest.mark.parametrize("advantage,params", [pytest.param("grpo", {}, marks=pytest.mark.slow),
                                              ("w_reinforce", {"lam": 0.1})])
def test_training_raises_the_reward_on_the_copy_task_without_collapsing_onto_eos(advantage, params):
    """The sampler is the model (eos allowed from the first token), so a negative-heavy advantage penalises
    the eos it samples instead of pushing mass into an eos the sampler never draws (the old min_new_tokens=1
    defect: w_reinforce(0.1) put probability 1.0 on eos by step 20)."""
    tr = make_trainer(advantage, advantage_params=params)
    rewards = [tr.step()["reward_mean"] for _ in range(60)]
    assert np.mean(rewards[-10:]) > np.mean(rewards[:10]) + 0.3, (np.mean(rewards[:10]), np.mean(rewards[-10:]))
    assert _first_position_eos_probability(tr) < 0.5


def test_logged_entropy_and_masses_equal_a_recomputation():
    tr = make_trainer("focal", keep_rollouts=True)
    tr.step()
    before = copy.deepcopy(tr.model)
    row = tr.step()
    saved = tr.rollouts[-1]
    ro = saved["rollouts"]
    rewards = torch.tensor(score(ro.completions, [p[0] for p in ro.prompts for _ in range(ro.group_size)],
                                 exact_match)).reshape(len(ro.prompts), ro.group_size)
    torch.testing.assert_close(rewards, saved["rewards"])
    with torch.no_grad():
        _, ent = token_logprobs_and_entropy(before, ro)
    mask = ro.response_mask.float()
    assert abs(float((ent * mask).sum() / mask.sum()) - row["entropy"]) < 1e-5
    d = fadesim.decompose(fadesim.get("focal")(rewards), rewards)
    assert abs(float(d.total_positive) / len(ro.prompts) - row["positive_mass"]) < 1e-6
    assert abs(float(d.total_negative) / len(ro.prompts) - row["negative_mass"]) < 1e-6
    assert abs(float(d.ess) - row["ess"]) < 1e-4


def test_fade_gets_its_signals_from_the_trainer():
    tr = make_trainer("fade")
    row = tr.step()
    assert row["initial_entropy"] == pytest.approx(row["entropy"])
    row = tr.step()
    assert row["entropy_signal"] != row["initial_entropy"]


def test_analyze_recomputes_fades_advantages_from_the_bridges_rollout_log(tmp_path):
    from fadesim.apps.analysis import analyze

    tr = make_trainer("fade", log_rollouts=True, advantage_params={"lam_neg_exploit": 0.1}, lr=5e-2,
                      entropy_decay=0.5)
    rows = [tr.step() for _ in range(5)]
    assert rows[-1]["entropy_signal"] < 0.95 * rows[-1]["initial_entropy"]  # the schedule has moved
    pd.DataFrame(tr.rollout_log).to_csv(tmp_path / "run.csv", index=False)
    analyze(tmp_path / "run.csv", tmp_path / "out", compare="fade:lam_neg_exploit=0.1,fade", forecast=False,
            progress=False, entropy_decay=0.5)
    steps = pd.read_csv(tmp_path / "out" / "steps.csv")
    logged = steps[steps.advantage == "run (logged)"].set_index("step")
    for label, same in (("fade:lam_neg_exploit=0.1", True), ("fade", False)):
        again = steps[steps.advantage == label].set_index("step")
        close = np.isclose(again.negative_mass, logged.negative_mass, rtol=1e-5, atol=1e-7)
        assert close.all() if same else not close[-1], label  # the run's own settings, not the defaults
        np.testing.assert_allclose(again.positive_mass, logged.positive_mass, rtol=1e-5, atol=1e-7)


class _StubBackend:
    def __init__(self, rollouts):
        self.rollouts = rollouts

    def generate(self, prompts, n, *, seed):
        return self.rollouts


def _state(tr):
    return [p.detach().clone() for p in tr.model.parameters()], copy.deepcopy(tr.optimizer.state_dict())


def _unchanged(tr, snapshot):
    params, opt = snapshot
    assert all(torch.equal(a, b) for a, b in zip(params, tr.model.parameters()))
    assert tr.optimizer.state_dict()["state"].keys() == opt["state"].keys() and tr.step_count == 0


def test_bad_input_gives_clear_errors_and_leaves_the_state_untouched():
    tr = make_trainer("grpo")
    snap = _state(tr)
    seqs = torch.ones((16, 3), dtype=torch.long)
    empty = Rollouts(prompts=["a="] * 2, completions=[""] * 16, sequences=seqs,
                     response_mask=torch.zeros((16, 1), dtype=torch.bool), prompt_length=2, group_size=8)
    with pytest.raises(ValueError, match="empty completions"):
        tr.train_on(empty, ["a"] * 16)
    ragged = Rollouts(prompts=["a="] * 2, completions=["a"] * 15, sequences=seqs[:15],
                      response_mask=torch.ones((15, 1), dtype=torch.bool), prompt_length=2, group_size=8)
    with pytest.raises(ValueError, match="15 rollouts cannot be split into groups of G = 8"):
        tr.train_on(ragged, ["a"] * 15)
    good = Rollouts(prompts=["a="] * 2, completions=["a"] * 16, sequences=torch.full((16, 3), 3),
                    response_mask=torch.ones((16, 1), dtype=torch.bool), prompt_length=2, group_size=8)

    def broken_reward(completion, answer):
        raise KeyError("grader crashed")

    tr.reward_fn = broken_reward
    with pytest.raises(RuntimeError, match="reward function failed on rollout 0"):
        tr.train_on(good, ["a"] * 16)
    _unchanged(tr, snap)
    tr.reward_fn = exact_match
    tr.train_on(good, ["a"] * 16)  # the trainer still works afterwards
    assert tr.step_count == 1


def test_hf_backend_left_pads_prompts_and_its_logprobs_are_the_trainers():
    task = ArithmeticTask(max_operand=99)  # prompts of 4 to 6 characters: left padding is needed
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size).eval()
    problems = task.sample(np.random.default_rng(0), 6)
    assert len({len(p.prompt) for p in problems}) > 1
    ro = HFBackend(model, tok, max_new_tokens=4, min_new_tokens=0).generate([p.prompt for p in problems], 3, seed=1)
    ro.validate()
    assert ro.prompt_mask is not None and ro.prompt_mask.sum(1).tolist() == [len(p.prompt) + 1 for p in problems
                                                                              for _ in range(3)]
    assert ro.completions == [tok.decode(r.tolist()) for r in ro.response_ids]
    with torch.no_grad():
        logp, _ = token_logprobs_and_entropy(model, ro)
    gap = (logp - ro.sampler_logprobs).abs()[ro.response_mask]
    assert gap.max() < 1e-5  # the trainer scores exactly what the sampler drew from
    unpadded = copy.copy(ro)
    unpadded.prompt_mask = None  # forgetting the padding shifts positions: the check above can fail
    with torch.no_grad():
        wrong, _ = token_logprobs_and_entropy(model, unpadded)
    assert (wrong - ro.sampler_logprobs).abs()[ro.response_mask].max() > 1e-2
    # the output layer on the response positions only (logits_to_keep) gives the full projection's numbers
    import fadesim.bridge.trainer as trainer_module

    assert trainer_module._keeps_logits(model)
    with torch.no_grad():
        kept = token_logprobs_and_entropy(model, ro, shared_prefix=False)
        original = trainer_module._keeps_logits
        trainer_module._keeps_logits = lambda m: False
        try:
            full = token_logprobs_and_entropy(model, ro, shared_prefix=False)
        finally:
            trainer_module._keeps_logits = original
    for a, b in zip(kept, full):
        torch.testing.assert_close(a[ro.response_mask], b[ro.response_mask], rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("min_new_tokens", [0, 2])
def test_the_shared_prefix_learner_equals_the_full_forward_pass(min_new_tokens):
    """Each group's prompt run once, its KV cache repeated G times: the same log-probs, entropies and gradients
    as one pass over every full sequence, on left-padded prompts of different lengths."""
    task = ArithmeticTask(max_operand=99)
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size).eval()
    problems = task.sample(np.random.default_rng(3), 5)
    assert len({len(p.prompt) for p in problems}) > 1
    ro = HFBackend(model, tok, max_new_tokens=4, min_new_tokens=min_new_tokens).generate(
        [p.prompt for p in problems], 4, seed=2)
    assert ro.prompt_mask is not None
    adv = torch.linspace(-1.0, 1.0, len(ro.completions))[:, None]
    results = {}
    for shared in (True, False):
        model.zero_grad()
        logp, ent = token_logprobs_and_entropy(model, ro, shared_prefix=shared)
        (-(logp * adv * ro.response_mask).sum() + (ent * ro.response_mask).sum()).backward()
        results[shared] = (logp.detach(), ent.detach(), [p.grad.clone() for p in model.parameters()])
    mask = ro.response_mask
    torch.testing.assert_close(results[True][0][mask], results[False][0][mask], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(results[True][1][mask], results[False][1][mask], rtol=1e-5, atol=1e-5)
    for a, b in zip(results[True][2], results[False][2]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert max(float(g.abs().max()) for g in results[True][2]) > 1e-3  # the gradients compared are not all zero
    mixed = copy.copy(ro)  # a group whose rows hold different prompts cannot share one
    mixed.sequences = ro.sequences.clone()
    mixed.sequences[1, ro.prompt_length - 1] = (mixed.sequences[1, ro.prompt_length - 1] + 1) % tok.vocab_size
    with pytest.raises(ValueError, match="identical prompts"):
        token_logprobs_and_entropy(model, mixed, shared_prefix=True)
    with torch.no_grad():  # the default falls back to the full pass there
        logp_mixed, _ = token_logprobs_and_entropy(model, mixed)
        logp_full, _ = token_logprobs_and_entropy(model, mixed, shared_prefix=False)
    torch.testing.assert_close(logp_mixed, logp_full)


@pytest.mark.parametrize("sampler", ["multinomial", "inverse_cdf"])
@pytest.mark.parametrize("min_new_tokens", [0, 1])
def test_the_shared_prefix_sampler_draws_from_the_learners_distribution(min_new_tokens, sampler):
    """HFBackend(shared_prefix=True): its own sampling loop on one prefill per prompt. The learner scores its
    tokens as the sampler did (1e-5), the same seed gives the same rollouts, and first-token frequencies over
    4000 draws match the model's probabilities (each within 4 standard errors)."""
    task = ArithmeticTask(max_operand=99)
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size).eval()
    problems = task.sample(np.random.default_rng(0), 4)
    backend = HFBackend(model, tok, max_new_tokens=4, min_new_tokens=min_new_tokens, shared_prefix=True,
                        sampler=sampler)
    ro = backend.generate([p.prompt for p in problems], 3, seed=5)
    ro.validate()
    assert ro.group_size == 3 and len(ro.completions) == 12 and ro.prompt_mask is not None
    assert not (ro.response_ids[:, :min_new_tokens] == tok.eos_token_id).any()
    with torch.no_grad():
        logp, ent = token_logprobs_and_entropy(model, ro)
    assert (logp - ro.sampler_logprobs).abs()[ro.response_mask].max() < 1e-5
    assert (ent - ro.sampler_entropy).abs()[ro.response_mask].max() < 1e-5
    again = backend.generate([p.prompt for p in problems], 3, seed=5)
    assert torch.equal(again.sequences, ro.sequences) and again.completions == ro.completions
    n = 4000
    first = HFBackend(model, tok, max_new_tokens=1, min_new_tokens=min_new_tokens, shared_prefix=True,
                      sampler=sampler).generate([problems[0].prompt], n, seed=7)
    with torch.no_grad():
        logits = model(first.sequences[:1, :first.prompt_length]).logits[0, -1].float()
    if min_new_tokens:
        logits[tok.eos_token_id] = float("-inf")
    probs = torch.softmax(logits, -1).numpy()
    freq = np.bincount(first.response_ids[:, 0].numpy(), minlength=len(probs)) / n
    se = np.sqrt(probs * (1 - probs) / n)
    assert (np.abs(freq - probs) <= 4 * se + 1e-12).all()
    if min_new_tokens:  # a probability-0 token (the forbidden eos) is never drawn
        assert freq[tok.eos_token_id] == 0


def test_the_inverse_cdf_draw_is_exact_on_a_hand_made_distribution():
    """Frequencies within 4 standard errors of the probabilities over 20000 rows, zero-probability entries never
    drawn (also at the ends of the vocabulary), the same generator seed the same tokens; a bad sampler name refused."""
    from fadesim.bridge.backends import draw

    probs = torch.tensor([0.0, 0.1, 0.0, 0.25, 0.6, 0.05, 0.0]).repeat(20000, 1)
    tokens = draw(probs, torch.Generator().manual_seed(0), "inverse_cdf")
    freq = np.bincount(tokens.numpy(), minlength=7) / len(tokens)
    p = probs[0].numpy()
    assert (np.abs(freq - p) <= 4 * np.sqrt(p * (1 - p) / len(tokens)) + 1e-12).all() and freq[[0, 2, 6]].sum() == 0
    assert torch.equal(tokens, draw(probs, torch.Generator().manual_seed(0), "inverse_cdf"))
    unnormalised = draw(probs * 3.0, torch.Generator().manual_seed(0), "inverse_cdf")  # scaled by the row total
    assert torch.equal(tokens, unnormalised)
    tok = CharTokenizer("ab")
    with pytest.raises(ValueError, match="sampler must be one of"):
        HFBackend(tiny_model(tok.vocab_size), tok, shared_prefix=True, sampler="gumbel")
    with pytest.raises(ValueError, match="sampler applies to the shared-prefix loop"):
        HFBackend(tiny_model(tok.vocab_size), tok, sampler="inverse_cdf")


@pytest.mark.parametrize("min_new_tokens", [0, 1, 2])
def test_the_learner_computes_the_distribution_the_sampler_drew_from(min_new_tokens):
    """With eos forbidden at the first min_new_tokens positions (generate renormalises them without eos), the
    learner's per-token log-probs and entropies equal the sampler's to 1e-5 on padded prompts."""
    task = ArithmeticTask(max_operand=99)
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size).eval()
    problems = task.sample(np.random.default_rng(0), 6)
    ro = HFBackend(model, tok, max_new_tokens=4, min_new_tokens=min_new_tokens).generate(
        [p.prompt for p in problems], 3, seed=1)
    assert ro.prompt_mask is not None and ro.min_new_tokens == min_new_tokens
    assert not (ro.response_ids[:, :min_new_tokens] == tok.eos_token_id).any()
    with torch.no_grad():
        logp, ent = token_logprobs_and_entropy(model, ro)
    valid = ro.response_mask
    assert (logp - ro.sampler_logprobs).abs()[valid].max() < 1e-5
    assert (ent - ro.sampler_entropy).abs()[valid].max() < 1e-5
    if min_new_tokens:  # the learner of the unprocessed model (the old defect) is off by the eos mass
        raw = copy.copy(ro)
        raw.min_new_tokens = 0
        with torch.no_grad():
            logp_raw, ent_raw = token_logprobs_and_entropy(model, raw)
        assert (logp_raw - ro.sampler_logprobs).abs()[:, 0].min() > 1e-4
        assert (ent_raw - ro.sampler_entropy).abs()[:, 0].min() > 1e-4


def test_an_off_policy_batch_is_refused_unless_a_correction_is_asked_for():
    tr = make_trainer("grpo")
    problems = tr.task.sample(np.random.default_rng(0), 16)
    ro = tr.backend.generate([p.prompt for p in problems], n=8, seed=0)
    answers = [p.answer for p in problems for _ in range(8)]
    shifted = copy.copy(ro)
    shifted.sampler_logprobs = ro.sampler_logprobs - 0.05  # a sampler 0.05 nats per token off the learner
    snap = _state(tr)
    with pytest.raises(ValueError, match=r"differ from the learner's by 0.05 nats per token.*off_policy='tis'"):
        tr.train_on(shifted, answers)
    _unchanged(tr, snap)
    assert tr.train_on(ro, answers)["sampler_logprob_gap"] < 1e-5  # on-policy: trains
    tis = make_trainer("grpo", off_policy="tis")
    row = tis.train_on(shifted, answers)
    assert row["sampler_logprob_gap"] == pytest.approx(0.05, abs=1e-5)
    no_logprobs = copy.copy(ro)
    no_logprobs.sampler_logprobs = None
    with pytest.raises(ValueError, match="needs the sampler's log-probs"):
        tis.train_on(no_logprobs, answers)
    with pytest.raises(ValueError, match="off_policy must be one of"):
        BridgeConfig(off_policy="importance")


def test_a_tokenizer_without_eos_is_refused():
    no_eos = types.SimpleNamespace(eos_token_id=None, pad_token_id=0)
    with pytest.raises(ValueError, match="has no eos token"):
        HFBackend(tiny_model(8), no_eos)


def test_training_on_padded_arithmetic_rollouts_logs_the_sampler_gap():
    task = ArithmeticTask(max_operand=99)
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size)
    tr = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=3, min_new_tokens=0), task,
                       config=BridgeConfig(G=4, prompts_per_step=4, lr=1e-2))
    rows = [tr.step() for _ in range(2)]
    assert all(r["sampler_logprob_gap"] < 1e-5 for r in rows)
    assert all(r[f"time_{k}"] >= 0 for r in rows for k in ("sync", "generate", "train"))


@pytest.fixture
def saved_tiny_model(tmp_path):
    """A tiny random GPT-2 and its tokenizer saved as a local HF model directory (as a real checkpoint)."""
    tok = CharTokenizer(ArithmeticTask().alphabet)
    path = tmp_path / "tiny-gpt2"
    tiny_model(tok.vocab_size).save_pretrained(path)
    tok.to_hf().save_pretrained(path)
    return path, tok


def test_hf_tokenizer_adapter_matches_the_char_tokenizer(saved_tiny_model):
    path, tok = saved_tiny_model
    hf = HFTokenizer.from_pretrained(str(path))
    assert hf.encode("3+4=") == tok.encode("3+4=") and hf.encode("12", bos=False) == tok.encode("12", bos=False)
    assert hf.decode(tok.encode("12", bos=False) + [tok.eos_token_id, 5, 6]) == "12"
    assert (hf.pad_token_id, hf.eos_token_id, hf.vocab_size) == (tok.pad_token_id, tok.eos_token_id, tok.vocab_size)


def test_vllm_backend_logic_against_a_stub_of_vllm(saved_tiny_model, monkeypatch):
    """STUB test (vLLM needs a GPU): the backend's prompt/output conversion, log-prob extraction and weight
    sync against tests/vllm_stub.py, which mirrors vLLM's API and samples exactly from the saved model."""
    from tests import vllm_stub

    vllm_stub.install(monkeypatch)
    from fadesim.bridge.backends import VLLMBackend

    path, tok = saved_tiny_model
    task = ArithmeticTask(max_operand=99)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    backend = VLLMBackend(str(path), tok, max_new_tokens=3, max_model_len=16)
    engine = vllm_stub.LLM.instances[-1]
    assert engine.kwargs["distributed_executor_backend"] == "external_launcher"
    assert engine.kwargs["max_model_len"] == 16
    tr = BridgeTrainer(model, backend, task, config=BridgeConfig(G=4, prompts_per_step=4, lr=3e-2,
                                                                 keep_rollouts=True))
    rows = [tr.step() for _ in range(3)]
    # the sampler scores its tokens as the trainer does: true only if every step's sync reached the engine
    assert all(r["sampler_logprob_gap"] < 1e-5 for r in rows), [r["sampler_logprob_gap"] for r in rows]
    assert engine.prefix_cache_resets == 3 and len(engine.runner.loaded) == 3
    assert engine.applied == 3  # through vLLM's public LLM.apply_model
    assert engine.kwargs["gpu_memory_utilization"] == 0.3 and engine.kwargs["dtype"] == "bfloat16"
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    ro = tr.rollouts[-1]["rollouts"]
    ro.validate()
    assert ro.prompt_mask is not None  # prompts of different lengths were packed with left padding
    n_prompt = ro.prompt_mask.sum(1).tolist()
    assert n_prompt == [len(tok.encode(p)) for p in ro.prompts for _ in range(4)]
    backend.sync_weights(model)  # the engine now holds the weights after the last training step
    stale = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05)  # a training update the engine has not seen
    ro_stale = backend.generate(ro.prompts, 4, seed=5)
    with torch.no_grad():
        logp_new, _ = token_logprobs_and_entropy(model, ro_stale)
        logp_old, _ = token_logprobs_and_entropy(stale, ro_stale)
    m = ro_stale.response_mask
    assert (logp_old - ro_stale.sampler_logprobs).abs()[m].max() < 1e-5
    assert (logp_new - ro_stale.sampler_logprobs).abs()[m].max() > 1e-3  # without sync, the gap shows


def test_vllm_samples_of_different_prompts_and_calls_never_share_sampling_noise(saved_tiny_model, monkeypatch):
    """STUB test: the stub seeds sample j of a request with seed + j as vLLM does, so one seeded SamplingParams
    for all prompts makes identical prompts' samples identical and shifts samples between calls seeded s and
    s + 1; the backend's per-prompt hashed seeds must show neither."""
    from tests import vllm_stub

    vllm = vllm_stub.install(monkeypatch)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from fadesim.bridge.backends import VLLMBackend, request_seed

    path, tok = saved_tiny_model
    backend = VLLMBackend(str(path), tok, max_new_tokens=3)
    engine = vllm_stub.LLM.instances[-1]
    prompt = {"prompt_token_ids": tok.encode("1+2=")}
    G = 6
    # the defect the backend avoids, shown on the stub itself: one SamplingParams, two identical prompts
    shared = engine.generate([prompt, prompt], vllm.SamplingParams(n=G, max_tokens=3, logprobs=0, seed=5))
    assert [c.token_ids for c in shared[0].outputs] == [c.token_ids for c in shared[1].outputs]
    one = backend.generate(["1+2=", "1+2="], G, seed=5)
    first, second = one.response_ids[:G].tolist(), one.response_ids[G:].tolist()
    assert first != second, "two prompts of one call drew the same samples: shared sampling noise"
    nxt = backend.generate(["1+2="], G, seed=6)
    assert nxt.response_ids[:G - 1].tolist() != first[1:], "calls seeded 5 and 6 share (shifted) samples"
    again = backend.generate(["1+2=", "1+2="], G, seed=5)
    assert torch.equal(again.response_ids, one.response_ids)  # still deterministic per call seed
    seeds = [request_seed(s, i) for s in range(100) for i in range(64)]
    spans = sorted(seeds)
    assert min(b - a for a, b in zip(spans, spans[1:])) > 64  # no two requests' seed ranges [s, s + G) meet


def test_vllm_engine_checks(saved_tiny_model, monkeypatch):
    """STUB test: an engine that is not in-process, a failed prefix-cache reset and the attribute-path
    fallback of the weight sync."""
    from tests import vllm_stub

    vllm_stub.install(monkeypatch)
    from fadesim.bridge.backends import VLLMBackend

    path, tok = saved_tiny_model
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    monkeypatch.setattr(vllm_stub.LLM, "in_process", False)
    with pytest.raises(RuntimeError, match="does not run in this process"):
        VLLMBackend(str(path), tok)
    monkeypatch.setattr(vllm_stub.LLM, "in_process", True)
    backend = VLLMBackend(str(path), tok, dtype="float32", max_model_len=32, enforce_eager=True)
    engine = vllm_stub.LLM.instances[-1]
    assert engine.kwargs["dtype"] == "float32" and engine.kwargs["max_model_len"] == 32 and engine.kwargs["enforce_eager"]
    monkeypatch.delattr(vllm_stub.LLM, "apply_model")  # an older vLLM: the attribute path
    backend.sync_weights(model)
    assert len(engine.runner.loaded) == 1 and engine.applied == 0
    monkeypatch.setattr(vllm_stub.LLM, "prefix_reset_ok", False)
    with pytest.raises(RuntimeError, match="could not reset its prefix cache"):
        backend.sync_weights(model)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        VLLMBackend(str(path), tok, gpu_memory_utilization=1.5)


def test_vllm_backend_errors_name_the_missing_piece(saved_tiny_model, monkeypatch):
    import sys

    from fadesim.bridge.backends import VLLMBackend

    path, tok = saved_tiny_model
    monkeypatch.setitem(sys.modules, "vllm", None)  # as on this CPU machine: vLLM not installed
    with pytest.raises(ImportError, match="VLLMBackend needs vLLM"):
        VLLMBackend(str(path), tok)
    from tests import vllm_stub

    vllm_stub.install(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        VLLMBackend(str(path), tok)

def test_tokenizer_and_tasks():
    tok = CharTokenizer("0123456789+=")
    assert tok.decode(tok.encode("3+4=")[1:] + [tok.eos_token_id, 5]) == "3+4="
    with pytest.raises(ValueError, match="not in the tokenizer's alphabet"):
        tok.encode("3*4")
    probs = ArithmeticTask().sample(np.random.default_rng(0), 5)
    assert all(str(eval(p.prompt[:-1])) == p.answer for p in probs)  # the test may eval its own prompts
    with pytest.raises(ValueError, match="3 completions for 2 answers"):
        score(["a", "b", "c"], ["a", "b"], exact_match)


def test_unbiased_pass_at_k():
    correct = np.array([[1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    assert unbiased_pass_at_k(correct, 1) == pytest.approx(0.125)
    assert unbiased_pass_at_k(correct, 4) == pytest.approx(0.5)


@pytest.mark.heavy
def test_llm_bridge_experiment_prints_prediction_verdicts(tmp_path, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import llm_bridge

    args = ["--steps", "4", "--seeds", "1", "--figures", str(tmp_path), "--out", str(tmp_path / "res")]
    assert llm_bridge.main(args) == 0
    out = capsys.readouterr().out
    # checkpoints after 1 and 2 of 4 updates (the LLM's rows 2 and 3), not the final step
    assert out.count("simulation predicts the sign of the entropy change after") == 2
    assert "ordering of advantages by entropy change after 1 updates" in out
    assert "ordering of advantages by entropy change after 2 updates" in out
    assert (tmp_path / "llm_bridge_entropy_quick.png").exists()
    table = pd.read_csv(tmp_path / "llm_bridge_entropy_quick.csv")
    assert len(table) == len(llm_bridge.ADVANTAGES) and table["dH@2 LLM"].notna().all()
    # resumable: a second run reads every unit from disk (no training) and prints the same verdicts
    units = sorted((tmp_path / "res" / "quick" / "units").iterdir())
    assert len(units) == len(llm_bridge.ADVANTAGES)
    stamps = [u.stat().st_mtime_ns for u in units]
    assert llm_bridge.main(args) == 0
    again = capsys.readouterr().out
    assert [u.stat().st_mtime_ns for u in units] == stamps
    assert [line for line in again.splitlines() if "predicts" in line] == [
        line for line in out.splitlines() if "predicts" in line]
    with pytest.raises(SystemExit) as exit_:
        llm_bridge.main(["--backend", "vllm"])
    assert exit_.value.code == 2 and "--backend vllm needs --model DIR" in capsys.readouterr().err


def test_llm_bridge_on_a_saved_model_fits_the_step0_pass_rates(saved_tiny_model, tmp_path, capsys, monkeypatch):
    """The --model path on CPU: a local checkpoint directory (here a tiny random GPT-2) on the arithmetic task,
    step-0 pass rates -> beta-binomial fit -> exact masses vs the step-0 batch, training, simulation."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import llm_bridge

    path, _ = saved_tiny_model
    args = ["--model", str(path), "--steps", "2", "--seeds", "1", "--measure-prompts", "16", "--measure-samples",
            "8", "--prompts-per-step", "4", "--max-new-tokens", "3", "--lr", "1e-2", "--max-operand", "9",
            "--reward", "exact", "--figures", str(tmp_path), "--out", str(tmp_path / "res")]
    assert llm_bridge.main(args) == 0
    out = capsys.readouterr().out
    assert "fitted difficulty Beta(a=" in out and "reward exact match" in out
    assert "exact masses under the fitted Beta predict the step-0 masses (4 SE)" in out
    assert out.count("step 2: sync") == len(llm_bridge.ADVANTAGES)  # per-step timings, every advantage
    assert "simulation predicts the sign of the entropy change after 1 updates" in out  # 2 steps: one checkpoint
    assert (tmp_path / "llm_bridge_entropy_hf.png").exists()
    # bad settings and a missing engine: one line on stderr and exit status 2 (raised as errors below main)
    with pytest.raises(SystemExit) as exit_:
        llm_bridge.main(args + ["--measure-samples", "12"])
    assert exit_.value.code == 2 and "must be a multiple of --G" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "vllm", None)
    assert llm_bridge.main(args + ["--backend", "vllm"]) == 2
    assert "VLLMBackend needs vLLM" in capsys.readouterr().err


def test_rewards_by_name(monkeypatch):
    import sys

    from fadesim.bridge.rewards import exact_match, reward_by_name

    assert reward_by_name("exact") == (exact_match, "exact match")
    with pytest.raises(ValueError, match="unknown reward 'fuzzy'; known: auto, math, exact"):
        reward_by_name("fuzzy")
    monkeypatch.setitem(sys.modules, "math_verify", None)  # as if math-verify were not installed
    assert reward_by_name("auto") == (exact_match, "exact match (math-verify is not installed)")
    with pytest.raises(ImportError, match="needs math-verify: pip install"):
        reward_by_name("math")


def test_math_verify_reward_parses_and_never_evaluates():
    pytest.importorskip("math_verify")
    from fadesim.bridge.rewards import math_verify_reward

    assert math_verify_reward("The answer is 12", "12") == 1.0
    assert math_verify_reward("\\boxed{12}", "12") == 1.0
    assert math_verify_reward("13", "12") == 0.0
    assert math_verify_reward("__import__('os').getcwd()", "12") == 0.0


@pytest.mark.heavy
def test_the_ladders_bridge_rungs_train_every_method(saved_tiny_model, tmp_path, monkeypatch):
    """The GPT-2 rung, and the model rung on a saved checkpoint with the HF sampler on CPU (on a GPU machine the
    same rung samples with vLLM); the model rung is predicted by the GPT-2 rung."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import ladder

    path, _ = saved_tiny_model
    s = ladder.Settings(rungs=("gpt2",), G=4, gpt2_steps=3, gpt2_seeds=4, model=str(path), model_backend="hf",
                        model_steps=3, model_max_new_tokens=3, model_max_operand=9, model_prompts_per_step=4,
                        model_lr=1e-2, model_reward="exact")
    assert s.rungs == ("gpt2", "model")  # --model DIR adds the rung
    df = ladder.run_sweep(s, ladder.ResultStore(tmp_path / "res"))
    for rung in ("gpt2", "model"):
        part = df[df.rung == rung]
        assert set(part.method) == set(ladder.METHODS) and sorted(part.seed.unique()) == [0, 1, 2, 3]
        assert sorted(part.step.unique()) == [0, 1, 2]  # row k: the policy after k updates
        assert np.isfinite(part[["entropy", "pass@1", "geometry"]].to_numpy()).all()
    effects = ladder.claim_effects(df, s)
    by = {(e["rung"], e["claim"]): e for e in effects}
    assert by[("gpt2", "C3")]["ok"] is None and by[("model", "C3")]["ok"] is None  # no exact per-prompt pass rates
    assert all(np.isfinite(by[(r, c)]["effect"]) for r in ("gpt2", "model") for c in ("C1", "C2", "C4"))
    predicted = ladder.sign_predictions(effects)
    assert "(from gpt2" in predicted[("model", "-", "C1")]
    assert ladder.optimizer_of("model", s) == "AdamW (the bridge's)"

    with pytest.raises(ValueError, match="the model rung needs a checkpoint: --model DIR"):
        ladder.Settings(rungs=("gpt2", "model"))
    with pytest.raises(ValueError, match="is neither a directory .* nor a packaged model \\(smollm2\\)"):
        ladder.Settings(model=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="model_backend must be a non-empty subset"):
        ladder.Settings(model=str(path), model_backend="sglang")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="vLLM, which needs a GPU"):
        ladder.ModelRung(ladder.Settings(model=str(path)))


def test_the_ladders_model_rung_takes_a_packaged_model(tmp_path, monkeypatch):
    """--model smollm2: the packaged model through load_pretrained (here a stand-in: a tiny GPT-2 and a character
    tokenizer whose chat template is the question itself), on the real-model rung's chat arithmetic with the
    last-integer reward, the HF sampler with one prefill per prompt, on CPU."""
    import sys
    from pathlib import Path

    import fadesim.bridge.pretrained as pretrained
    from fadesim.bridge.tokenizer import CharTokenizer

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import ladder

    class ChatChars(CharTokenizer):
        def apply_chat_template(self, turns, add_generation_prompt, tokenize):
            assert add_generation_prompt and not tokenize and turns[0] == {"role": "system", "content": ""}
            return turns[-1]["content"]

    tok = ChatChars("".join(sorted(set("0123456789 +-?.abcdefghijklmnopqrstuvwxyzWAHS"))))
    loads = []

    def fake_load(name, **_):
        loads.append(name)
        return pretrained.tiny_gpt2(tok.vocab_size, seed=0, n_positions=128), tok

    monkeypatch.setattr(pretrained, "load_pretrained", fake_load)
    with pytest.raises(ValueError, match="runs with the HF sampler on CPU: add --model-backend hf"):
        ladder.Settings(model="smollm2")
    s = ladder.Settings(rungs=("gpt2",), G=4, gpt2_steps=2, gpt2_seeds=4, model="smollm2", model_backend="hf",
                        model_steps=2, model_max_new_tokens=3, model_prompts_per_step=2, model_lr=1e-3)
    rung = ladder.ModelRung(s)
    assert rung.reward_name == "last integer" and rung.make_backend(None).shared_prefix
    problem = rung.task.sample(np.random.default_rng(0), 1)[0]
    assert problem.prompt.startswith("What is ") and problem.prompt.endswith("Answer with a number only.")
    frame = rung.unit({"method": "grpo", "seed": 0})
    assert sorted(frame.step) == [0, 1] and np.isfinite(frame[["entropy", "pass@1", "geometry"]].to_numpy()).all()
    assert loads == ["smollm2", "smollm2"]  # the tokenizer once, fresh weights for the unit


def _smoke_commands(text: str) -> list[tuple[str, list[str]]]:
    """(script, flags) of every ``python3 experiments/NAME.py ...`` command in gpu_smoke.sh (continuations joined)."""
    joined = text.replace("\\\n", " ")
    return [(m.group(1), re.findall(r"(?<!\S)(--[A-Za-z][A-Za-z0-9-]*)", m.group(2)))
            for m in re.finditer(r"python3 (experiments/\w+\.py)([^\n|]*)", joined)]


def test_gpu_smoke_scripts_plumbing_is_sound(capsys):
    """The fast check of the GPU smoke script (the CPU dry run below is slow-marked): bash parses it, every
    experiment command in it passes only flags that script accepts, its embedded Python compiles, and every size
    knob the dry run sets is one the script reads."""
    import ast
    import importlib
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    path = root / "scripts" / "gpu_smoke.sh"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    commands = _smoke_commands(text)
    assert {script for script, _ in commands} == {"experiments/llm_bridge.py", "experiments/ladder.py"}
    sys.path.insert(0, str(root / "experiments"))
    for script, flags in commands:
        module = importlib.import_module(Path(script).stem)
        with pytest.raises(SystemExit):
            module.main(["--help"])
        accepted = set(re.findall(r"(--[A-Za-z][A-Za-z0-9-]*)", capsys.readouterr().out))
        assert flags and not set(flags) - accepted, (script, sorted(set(flags) - accepted))
    blocks = re.findall(r"<<'PY'\n(.*?)\nPY\n", text, flags=re.S)
    assert len(blocks) == 2
    for block in blocks:
        ast.parse(block)
    for knob in SMOKE_SIZES:
        assert f"${{{knob}:-" in text, knob


SMOKE_SIZES = {"SMOKE_SFT_STEPS": "5", "SMOKE_STEPS": "2", "SMOKE_LADDER_STEPS": "4", "SMOKE_SWEEP_STEPS": "4",
               "SMOKE_SWEEP_SEEDS": "2", "SMOKE_MEASURE_PROMPTS": "8"}


@pytest.mark.slow  # 130 s on 2 cores, almost all start-up; test_gpu_smoke_scripts_plumbing_is_sound checks the
# script's commands and the other bridge, ladder, sweep and device tests run each step's code
def test_gpu_smoke_script_runs_from_the_source_tree(tmp_path):
    """The GPU smoke script's plumbing, on CPU at tiny sizes: it builds its own checkpoint, runs the bridge (HF
    backend: no vLLM here) and the simulator's sweep, and writes rows and timings (the GPU run itself needs the
    GPU machine; see the closing notes)."""
    import json
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "GPU_SMOKE_ALLOW_CPU": "1", **SMOKE_SIZES}
    proc = subprocess.run(["bash", str(root / "scripts" / "gpu_smoke.sh"), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert (tmp_path / "tiny-gpt2" / "config.json").exists()
    timings = (tmp_path / "timings.txt").read_text()
    assert all(f"{step} " in timings for step in ("checkpoint", "bridge_hf", "ladder_hf", "sweep", "device_check",
                                                  "total"))
    device_log = (tmp_path / "device_check.log").read_text()
    assert "SKIPPED" in device_log and "FAILED" not in device_log  # no GPU here: the CUDA tests skip
    log = (tmp_path / "ladder.log").read_text()
    assert "[model rung, AdamW (the bridge's)] C1" in log and "[gpt2 (-) -> model (-)" in log
    assert "| C1 positive mass collapses entropy | model | - | AdamW (the bridge's) |" in (
        tmp_path / "ladder" / "ladder_quick.md").read_text()
    warm_up = re.search(r"exact mean pass@1 (\S+) -> (\S+)", (tmp_path / "checkpoint.log").read_text())
    assert warm_up and 0 < float(warm_up[1]) < 1 and 0 < float(warm_up[2]) < 1
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    assert sweep["steps"] == 4 and sweep["seeds"] == 2 and sweep["seconds"] > 0
    assert "fitted difficulty Beta(a=" in (tmp_path / "bridge.log").read_text()


def test_chat_template_renders_the_turns_and_appends_the_prefill():
    from fadesim.bridge.tasks import chat_template

    class Turns:
        def apply_chat_template(self, turns, add_generation_prompt, tokenize):
            assert add_generation_prompt and not tokenize
            return "".join(f"<{t['role']}>{t['content']}" for t in turns) + "<assistant>"

    assert chat_template(Turns())("What is 2 + 3?") == "<user>What is 2 + 3?<assistant>"
    assert chat_template(Turns(), system="", prefill="The answer is")("q") == "<system><user>q<assistant>The answer is"
    with pytest.raises(ValueError, match="prefill must be a string"):
        chat_template(Turns(), prefill=None)
