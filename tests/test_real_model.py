"""The real-model rung's pipeline (experiments/real_model.py) on a tiny random GPT-2: the prediction grid and its
reading, the published-effect checks on hand-made tables, resuming a killed run from its checkpoint exactly, and
the three phases end to end. SmolLM2 itself is exercised by tests/test_pretrained.py's integration test."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fadesim.bridge.tasks import ChatArithmetic, TaskMixture, distinct_problems
from fadesim.lab.literature import BASE, ProtocolSettings, prediction_grid, read_prediction

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model  # noqa: E402 - a script of experiments/, importable once that folder is on sys.path

pytestmark = pytest.mark.integration  # the bridge's stack (transformers)

SMALL = ["--sim-steps", "20", "--sim-log-every", "10", "--sim-seeds", "2", "--advantages", "grpo,psr,nsr"]


def test_task_mixture_and_the_fixed_evaluation_set():
    mix = TaskMixture((ChatArithmetic(digits=1), ChatArithmetic(digits=3)))
    problems = mix.sample(np.random.default_rng(0), 400)
    sizes = [len(p.answer) for p in problems]
    assert 120 < sum(s <= 2 for s in sizes) < 280  # about half of the sums come from each part (1-digit: <= 18)
    first = distinct_problems(ChatArithmetic(digits=1, split="eval"), 12, seed=3)
    assert len({p.prompt for p in first}) == 12 and first == distinct_problems(ChatArithmetic(digits=1, split="eval"),
                                                                               12, seed=3)
    train = {p.prompt for p in ChatArithmetic(digits=1).sample(np.random.default_rng(0), 2000)}
    assert not train & {p.prompt for p in first}  # evaluation questions never appear in training
    with pytest.raises(ValueError, match="found only .* distinct prompts"):
        distinct_problems(ChatArithmetic(digits=1, split="eval"), 90, seed=0, max_draws=5000)
    with pytest.raises(ValueError, match="one or more tasks"):
        TaskMixture(())


def test_the_grid_is_read_where_the_tuning_seeds_grpo_meets_the_measured_pass_at_1():
    s = ProtocolSettings(task="bandit", n_prompts=16, n_answers=16, seeds=4, max_steps=40, log_every=10)
    grid = prediction_grid({1: 0.3, 8: 0.8}, [("grpo", "grpo", {}), ("nsr", "nsr", {})], s)
    tune = grid[grid.seeds == "tune"]
    assert set(tune.label) == {"grpo"} and set(tune.k) == {1}
    held = grid[grid.seeds == "held"]
    assert set(held.label) == {"grpo", "nsr"} and set(held.k) == {1, 8} and set(held.step) == {0, 10, 20, 30, 40}
    assert np.allclose(held[(held.step == 0) & (held.k == 1)].pass_at_k, 0.3, atol=0.05)  # calibrated
    path = tune.sort_values("step")
    target = float(path.pass_at_k.iloc[2])  # the tuning seeds' pass@1 at step 20
    table, step, reached = read_prediction(grid, target)
    first = int(path[(path.step > 0) & (path.pass_at_k >= target)].step.iloc[0])
    assert reached and step == first
    assert set(table.label) == {BASE, "grpo", "nsr"} and (table[table.label == BASE].ci95 == 0).all()
    row = table[(table.label == "nsr") & (table.k == 8)].pass_at_k.iloc[0]
    assert row == held[(held.label == "nsr") & (held.step == step) & (held.k == 8)].pass_at_k.iloc[0]
    _, step_far, reached_far = read_prediction(grid, 0.999)
    assert not reached_far and step_far > 0
    with pytest.raises(ValueError, match="no tuning-seed 'ppo' pass@1 path"):
        read_prediction(grid, 0.5, reference="ppo")
    with pytest.raises(ValueError, match="match_seeds 'held' is not served here"):
        prediction_grid({1: 0.3, 8: 0.8}, [("grpo", "grpo", {})], dataclasses.replace(s, match_seeds="held"))


def test_the_published_effects_on_hand_made_tables():
    rows = {BASE: (0.30, 0.90), "grpo": (0.45, 0.85), "psr": (0.50, 0.95), "nsr": (0.35, 0.895)}
    table = pd.DataFrame([{"method": m, "k": k, "pass_at_k": v} for m, vals in rows.items()
                          for k, v in zip((1, 64), vals)])
    got = real_model.effects(table, {"nsr": 1.0, "grpo": 0.8, "psr": 0.5}, top=64)
    assert got == {"GRPO above base at pass@1, below at pass@64": True,
                   "PSR above base at pass@1, below at pass@64": False,
                   "NSR never below base (all k, 0.01 tolerance)": True,  # 0.895 vs 0.90: within 0.01
                   "entropy NSR > GRPO > PSR": True}
    table.loc[(table.method == "nsr") & (table.k == 64), "pass_at_k"] = 0.88
    assert not real_model.effects(table, {"nsr": 0.1, "grpo": 0.8, "psr": 0.5}, top=64)[
        "NSR never below base (all k, 0.01 tolerance)"]
    counts = pd.DataFrame({"correct": [0, 4, 8], "n": [8, 8, 8]})
    assert real_model.pass_at_k(counts, [1, 8]) == pytest.approx({1: 0.5, 8: 2 / 3})


def test_a_killed_run_resumes_from_its_checkpoint_to_the_same_numbers(tmp_path, monkeypatch):
    s = real_model.Settings(steps=4, checkpoint_every=1, eval_prompts=1, eval_samples=4)
    whole = real_model.train_run(s, "grpo", "grpo", {}, 0, tmp_path / "a", rollouts=tmp_path / "a.csv")
    from fadesim.bridge.trainer import BridgeTrainer

    original = BridgeTrainer.step

    def dies_at_step_3(self):
        if self.step_count == 2:
            raise KeyboardInterrupt("killed")
        return original(self)

    monkeypatch.setattr(BridgeTrainer, "step", dies_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        real_model.train_run(s, "grpo", "grpo", {}, 0, tmp_path / "b", rollouts=tmp_path / "b.csv")
    assert torch.load(tmp_path / "b" / "state.pt", weights_only=False)["step"] == 2
    assert not (tmp_path / "b.csv").exists()  # the log is written once the run is done
    monkeypatch.setattr(BridgeTrainer, "step", original)
    resumed = real_model.train_run(s, "grpo", "grpo", {}, 0, tmp_path / "b", rollouts=tmp_path / "b.csv")
    keep = [c for c in whole.columns if not c.startswith("time_")]
    pd.testing.assert_frame_equal(whole[keep], resumed[keep])
    # the rollout log survives the kill: each step once, the same rows as the uninterrupted run's
    log_a, log_b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    pd.testing.assert_frame_equal(log_a, log_b)
    assert list(log_a.step.unique()) == [1, 2, 3, 4] and len(log_a) == 4 * s.G * s.prompts_per_step
    # it is the run's own: per step, its mean reward and its advantages' masses are the trainer's
    from fadesim.apps.analysis import analyze

    report = analyze(tmp_path / "a.csv", tmp_path / "analysis", forecast=False)
    run = pd.read_csv(tmp_path / "analysis" / "steps.csv")
    run = run[run.advantage == run.advantage.iloc[0]].set_index("step")
    steps = whole[whole.kind == "step"].set_index("step")
    np.testing.assert_allclose(run.mean_reward, steps.reward_mean, atol=1e-12)
    np.testing.assert_allclose(run.positive_mass, steps.positive_mass, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(run.negative_mass, steps.negative_mass, rtol=1e-5, atol=1e-7)
    assert report is not None
    evals = whole[whole.kind == "eval"]  # one row per evaluation prompt (1 per digit count, 2 counts) and step
    assert len(evals) == 2 * 2 and set(evals.step) == {2, 4} and (evals.n == 4).all()


def test_the_three_phases_end_to_end(tmp_path, capsys):
    out = tmp_path / "out"
    common = ["--out", str(out), *SMALL]
    assert real_model.main(["--phase", "train", *common]) == 2  # no prediction yet: refused
    assert "run --phase predict first" in capsys.readouterr().err
    assert real_model.main(["--phase", "predict", *common]) == 0
    prediction = out / "quick" / "figures" / "real_model_prediction.csv"
    grid = pd.read_csv(prediction)
    assert set(grid.label) == {"grpo", "psr", "nsr"} and grid.step.max() == 20
    assert real_model.main(["--phase", "score", *common]) == 2  # the runs are missing: refused, not trained
    assert "missing: grpo seed 0" in capsys.readouterr().err
    assert real_model.main(["--phase", "all", *common]) == 0
    text = capsys.readouterr()
    assert "is not committed" in text.err  # a prediction outside git is flagged before training
    lines = text.out.strip().splitlines()
    assert lines[-1].startswith("mean step time: ") and any(line.startswith("real model, end (step 2") for line in lines)
    effects = [line for line in lines if "end of training" in line and " on tiny (" in line]
    assert any("NSR never below base" in line for line in effects)
    for line in effects:  # PREDICTED exactly when the prediction said what was measured ("NOT PREDICTED" is not it)
        measured = ": CONFIRMED on tiny" in line
        assert measured != (": NOT CONFIRMED on tiny" in line)
        said_yes = line.endswith("the prediction said yes)")
        assert said_yes != line.endswith("the prediction said no)")
        assert ("(PREDICTED:" in line) == (said_yes == measured) and ("(NOT PREDICTED:" in line) == (said_yes != measured)
    measured = pd.read_csv(out / "quick" / "figures" / "real_model_measured.csv")
    assert set(measured.method) == {BASE, "grpo", "psr", "nsr"} and set(measured.k) == {1, 2, 4, 8}
    steps = pd.read_csv(out / "quick" / "figures" / "real_model_steps.csv")
    assert len(steps) == 3 * 2 and {"entropy", "sampler_logprob_gap", "positive_mass", "negative_mass",
                                    "time_generate", "time_backward", "time_optimizer"} <= set(steps.columns)
    assert (steps.sampler_logprob_gap < 1e-4).all()
    assert (out / "quick" / "figures" / "real_model.png").is_file()
    assert not (out / "quick" / "checkpoints" / "grpo_seed0").exists()  # removed once the run's unit is stored


def test_a_second_design_prefills_the_answer_and_keeps_its_own_files_and_units():
    """prefill ends every prompt (training and evaluation), the first-integer reward scores the model's answer, the
    tag names the design's files, and the first design's unit identity is unchanged (its stored runs stay valid)."""
    s = real_model.Settings(prefill=" answer is", reward="first_integer", tag="prefilled")
    _, tok, template = real_model.load_model(s)
    train, problems = real_model.tasks(s, template)
    assert all(p.prompt.endswith("? Answer with a number only. answer is") for p in problems)
    assert all(p.prompt.endswith(" answer is") for p in train.sample(np.random.default_rng(0), 5))
    assert s.reward_fn()(" 12 and 13", "12") == 1.0 and real_model.Settings().reward_fn()(" 12 and 13", "12") == 0.0
    assert s.file("base.csv") == "real_model_prefilled_base.csv" and real_model.Settings().file("base.csv") == (
        "real_model_base.csv")
    first = real_model._identity(real_model.Settings())
    assert set(first) == {"model", "digits", "eval_prompts", "eval_samples", "max_new_tokens"}
    assert real_model._identity(s) == {**first, "prefill": " answer is", "reward": "first_integer"}
    with pytest.raises(ValueError, match="reward must be 'last_integer' or 'first_integer'"):
        real_model.Settings(reward="eval")
    with pytest.raises(ValueError, match="tag must be letters, digits"):
        real_model.Settings(tag="../x")
