"""Runs trained past the paper experiment's length (experiments/real_model_longer.py): the change from the paper's
last step is taken within each seed with a Student-t interval, and on the tiny GPT-2 (--preset paper-quick) a longer
run's first steps are the shorter run's, evaluation for evaluation."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model  # noqa: E402 - scripts of experiments/, importable once that folder is on sys.path
import real_model_longer  # noqa: E402

pytestmark = pytest.mark.integration  # real_model imports the bridge's stack (transformers)


def _evals(values):
    """(seed, step) -> pass@1 as an evaluation table (pass@2 = pass@1 + 0.1, entropy = 1 - pass@1)."""
    return pd.DataFrame([{"method": "grpo", "seed": seed, "step": step, "pass@1": v, "pass@2": v + 0.1,
                          "entropy": 1 - v} for (seed, step), v in values.items()])


def test_the_change_from_the_calibration_step_is_paired_within_each_seed():
    evals = _evals({(0, 48): 0.70, (1, 48): 0.80, (2, 48): 0.75, (0, 96): 0.74, (1, 96): 0.81, (2, 96): 0.80,
                    (3, 96): 0.99})  # seed 3 has no step 48: left out, not averaged into step 96
    out = real_model_longer.over_time(evals, 48).set_index("metric")
    assert set(out.step) == {96} and (out.seeds == 3).all() and set(out["from"]) == {48}
    diff = np.array([0.04, 0.01, 0.05])
    half = stats.t.ppf(0.975, 2) * diff.std(ddof=1) / np.sqrt(3)
    assert out.loc["pass@1", "diff"] == pytest.approx(diff.mean())
    assert (out.loc["pass@1", "lo"], out.loc["pass@1", "hi"]) == pytest.approx((diff.mean() - half,
                                                                                diff.mean() + half))
    assert out.loc["pass@1", "value"] == pytest.approx(np.mean([0.74, 0.81, 0.80]))
    assert out.loc["pass@2", "diff"] == pytest.approx(diff.mean())
    assert out.loc["entropy", "diff"] == pytest.approx(-diff.mean())
    with pytest.raises(ValueError, match="no evaluation at step 24"):
        real_model_longer.over_time(evals, 24)


def test_the_reproduction_check_reports_the_largest_difference_of_each_run():
    mine = _evals({(0, 48): 0.70, (1, 48): 0.80})
    committed = _evals({(0, 48): 0.70, (1, 48): 0.78, (2, 48): 0.5})
    out = real_model_longer.reproduction(mine, committed, 48).set_index("seed")
    assert list(out.index) == [0, 1]
    assert out.loc[0, "max_abs_diff"] == 0.0 and out.loc[1, "max_abs_diff"] == pytest.approx(0.02)


def test_each_part_of_the_task_is_summarised_over_its_questions_and_seeds():
    """Two parts of two questions; the base at step 0 and one arm at step 96 on two seeds, rates by hand: the mean
    pass rate, the share solved at least once (pass@n) and the share at p >= 0.9, each over question x seed."""
    base = pd.DataFrame({"prompt": [0, 1, 2, 3], "correct": [4, 0, 1, 0], "n": 8})
    runs = pd.DataFrame([{"method": "grpo", "seed": seed, "step": 96, "prompt": prompt, "correct": c, "n": 8}
                         for seed, counts in ((0, (8, 8, 0, 2)), (1, (8, 4, 0, 0))) for prompt, c in enumerate(counts)])
    out = real_model_longer.by_part(runs, base, ["easy", "hard"], 2).set_index(["method", "part"])
    assert list(out.index) == [("base", "easy"), ("base", "hard"), ("grpo", "easy"), ("grpo", "hard")]
    an_arm = real_model_longer.by_part(runs.assign(method="an_arm"), base, ["easy", "hard"], 2)
    assert list(an_arm.method) == ["base", "base", "an_arm", "an_arm"]  # the base first, whatever the arms' names
    assert out.loc[("base", "easy"), ["pass_rate", "solved", "high"]].tolist() == pytest.approx([0.25, 0.5, 0.0])
    assert out.loc[("base", "hard"), ["pass_rate", "solved", "questions"]].tolist() == pytest.approx([1 / 16, 0.5, 2])
    assert out.loc[("grpo", "easy"), ["pass_rate", "solved", "high", "seeds"]].tolist() == pytest.approx(
        [28 / 32, 1.0, 0.75, 2])
    assert out.loc[("grpo", "hard"), ["pass_rate", "solved", "high", "questions"]].tolist() == pytest.approx(
        [2 / 32, 0.25, 0.0, 4])
    with pytest.raises(ValueError, match="2 parts x 3 questions do not cover the 4 evaluation questions"):
        real_model_longer.by_part(runs, base, ["easy", "hard"], 3)


def test_the_graded_tasks_parts_are_named_by_operands_and_digits():
    assert real_model.part_labels(real_model.PAPER) == ["1-digit a + b", "1-digit a + b + c",
                                                        "2-digit a + b, no carry"]
    assert real_model.part_labels(real_model.FULL) == ["1-digit a + b", "2-digit a + b"]


def test_on_the_tiny_model_a_longer_runs_first_steps_are_the_shorter_run(tmp_path, capsys):
    out, figures = tmp_path / "out", tmp_path / "figures"
    figures.mkdir()
    base = ["--preset", "paper-quick", "--out", str(out), "--figures", str(figures), "--seeds", "2"]
    assert real_model_longer.main([*base, "--phase", "score"]) == 2  # nothing trained yet: scoring refuses
    assert real_model_longer.main([*base[:-1], "0", "--phase", "train"]) == 2  # no seed: refused, nothing trained
    assert "name at least one arm and one seed (got 1 arms, 0 seeds)" in capsys.readouterr().err
    # the shorter run of the same arm and seeds, as the paper experiment would have made it
    short = real_model.PAPER_QUICK
    store, table = real_model.arms_runs(short, range(2), real_model.parse_advantages("grpo"), tmp_path / "short",
                                        only_stored=False, desc="short")
    real_model.eval_table(short, table, real_model.base_counts(short, store)).to_csv(
        figures / short.file("measured.csv"), index=False)
    pd.DataFrame([{"method": "grpo", "step": step, "k": k, "simulated": 0.5, "ci95": 0.01} for step in (4, 6, 8)
                  for k in (1, 4)]).to_csv(figures / "real_model_longer_prediction.csv", index=False)
    assert real_model_longer.main([*base, "--phase", "all"]) == 0
    printed = capsys.readouterr().out
    assert (figures / "real_model_longer.png").stat().st_size > 0  # drawn where the prediction's table is
    assert "largest absolute difference 0 over 2 runs" in printed  # bit for bit on one machine
    time = pd.read_csv(figures / "real_model_longer_time.csv")
    assert sorted(time.step.unique()) == [6, 8] and set(time["from"]) == {4} and (time.seeds == 2).all()
    assert (time.reproduced == 0.0).all()
    measured = pd.read_csv(figures / "real_model_longer_measured.csv")
    assert sorted(measured.step.unique()) == [0, 4, 6, 8]
    signal = pd.read_csv(figures / "real_model_longer_groups.csv")  # from the rollout logs of the runs
    assert sorted(signal[signal.seed == 0].step) == list(range(1, 9))
    assert np.allclose(signal[["all_right", "all_wrong"]].sum(axis=1) + signal.mixed, 1.0)
    steps = pd.read_csv(figures / "real_model_longer_steps.csv")
    assert sorted(steps[steps.seed == 1].step) == list(range(1, 9))
    per_question = pd.read_csv(figures / "real_model_longer_questions.csv")  # what pass@1 is the mean of
    rate = per_question.assign(p=per_question.correct / per_question.n).groupby(["seed", "step"]).p.mean()
    later = measured[measured.step > 0].set_index(["seed", "step"])["pass@1"]
    np.testing.assert_allclose(rate.loc[later.index].to_numpy(), later.to_numpy(), rtol=0, atol=1e-12)
    parts = pd.read_csv(figures / "real_model_longer_parts.csv")  # the same questions, by part of the graded task
    assert list(parts[parts.method == "base"].part) == real_model.part_labels(short)  # the base first, at step 0
    assert (parts[parts.method == "base"].step == 0).all() and (parts[parts.method == "grpo"].seeds == 2).all()
    whole = parts[parts.method == "grpo"].assign(w=lambda t: t.pass_rate * t.questions).groupby("step")
    np.testing.assert_allclose((whole.w.sum() / whole.questions.sum()).loc[[4, 6, 8]].to_numpy(),
                               later.groupby(level="step").mean().loc[[4, 6, 8]].to_numpy(), rtol=0, atol=1e-12)
    # a second arm scored alone later (its own units only) keeps the first arm's rows in every file, unchanged
    assert real_model_longer.main([*base, "--advantages", "focal:gamma=2", "--phase", "all"]) == 0
    assert "(4 runs, 2 scored now)" in capsys.readouterr().out
    for name, before in (("measured", measured), ("time", time), ("groups", signal), ("steps", steps),
                         ("questions", per_question)):
        after = pd.read_csv(figures / f"real_model_longer_{name}.csv")
        assert set(after.method) == {"grpo", "focal:gamma=2"}, name
        pd.testing.assert_frame_equal(after[after.method == "grpo"][before.columns].reset_index(drop=True),
                                      before.reset_index(drop=True), check_dtype=False, obj=name)


def test_churn_pairs_each_question_with_itself_and_counts_moves_both_ways():
    """Two seeds x three questions: rates at step 48 and 96 by hand; one question rises by 0.5, one falls by 0.5, the
    rest stay, so the mean is unchanged while two questions moved more than 0.25."""
    at48 = {(0, 0): 8, (0, 1): 0, (0, 2): 4, (1, 0): 8, (1, 1): 2, (1, 2): 8}
    at96 = {(0, 0): 8, (0, 1): 4, (0, 2): 4, (1, 0): 4, (1, 1): 2, (1, 2): 8}
    rows = [{"method": "grpo", "seed": seed, "step": step, "prompt": prompt, "correct": c, "n": 8}
            for step, table in ((48, at48), (96, at96)) for (seed, prompt), c in table.items()]
    out = real_model_longer.churn(pd.DataFrame(rows), 48).iloc[0]
    a = np.array([1, 0, 0.5, 1, 0.25, 1])
    b = np.array([1, 0.5, 0.5, 0.5, 0.25, 1])
    assert out.questions == 6 and out.step == 96 and out["from"] == 48
    assert out.mean_from == pytest.approx(a.mean()) and out.mean_to == pytest.approx(b.mean())
    assert out.spread_from == pytest.approx(np.mean(a * (1 - a))) and out.spread_to == pytest.approx(np.mean(b * (1 - b)))
    assert out.solved_from == pytest.approx(3 / 6) and out.solved_to == pytest.approx(2 / 6)
    assert out.never_from == pytest.approx(1 / 6) and out.never_to == 0.0
    assert (out.up, out.down) == (1, 1) and out.mean_abs_change == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="no evaluation at step 24"):
        real_model_longer.churn(pd.DataFrame(rows), 24)
