"""The LLM bridge on CPU: a tiny random GPT-2 built from a config and a local tokenizer (no downloads)."""

import copy

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

import fadesim  # noqa: E402
from fadesim.bridge.backends import HFBackend, Rollouts  # noqa: E402
from fadesim.bridge.rewards import exact_match, score  # noqa: E402
from fadesim.bridge.tasks import ArithmeticTask, CopyTask  # noqa: E402
from fadesim.bridge.tokenizer import CharTokenizer  # noqa: E402
from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer, token_logprobs_and_entropy, unbiased_pass_at_k  # noqa: E402


def tiny_model(vocab_size: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=vocab_size, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def make_trainer(advantage="grpo", **cfg):
    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    model = tiny_model(tok.vocab_size)
    config = BridgeConfig(advantage=advantage, G=8, prompts_per_step=16, lr=1e-2, **cfg)
    return BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=config)


def test_bridge_uses_the_registry_function_objects_and_matches_numpy():
    tr = make_trainer("w_reinforce", keep_rollouts=True)
    assert tr.advantage_fn is fadesim.get("w_reinforce")
    tr.step()
    saved = tr.rollouts[-1]
    np.testing.assert_allclose(saved["advantages"].numpy(), fadesim.get("w_reinforce")(saved["rewards"].numpy()),
                               rtol=1e-6)


def test_grpo_raises_the_reward_on_the_copy_task():
    tr = make_trainer("grpo")
    rewards = [tr.step()["reward_mean"] for _ in range(80)]
    assert np.mean(rewards[-10:]) > np.mean(rewards[:10]) + 0.3, (np.mean(rewards[:10]), np.mean(rewards[-10:]))


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


def test_llm_bridge_experiment_prints_prediction_verdicts(tmp_path, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import llm_bridge

    assert llm_bridge.main(["--steps", "4", "--seeds", "1", "--figures", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "simulation predicts the sign of the entropy drift" in out
    assert "simulation predicts the ordering of entropy drift" in out
    assert (tmp_path / "llm_bridge_entropy_quick.png").exists()
    with pytest.raises(SystemExit, match="need a GPU machine"):
        llm_bridge.main(["--backend", "vllm"])
