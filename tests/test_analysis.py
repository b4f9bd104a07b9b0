"""fadesim.apps.analysis / `fadesim analyze`: rollout logs in every documented format give the hand-computed per-step
numbers; reading is streamed (chunk boundaries change nothing); bad rows name their file and line; nothing
half-written is left behind."""

import json

import numpy as np
import pandas as pd
import pytest

import fadesim
import fadesim.apps.analysis as analysis
from fadesim.apps.analysis import STEP_COLUMNS, AnalysisError, PromptTracker, analyze, detect
from fadesim.apps.cli import main

# two steps: step 1 has prompts a (3 of 4 right), b (0 of 4), c (4 of 4); step 2 has a (1 of 2), b (2 of 3)
ROWS = ([(1, "a", r) for r in (1, 1, 0, 1)] + [(1, "b", 0.0)] * 4 + [(1, "c", 1.0)] * 4
        + [(2, "a", r) for r in (0.0, 1.0)] + [(2, "b", r) for r in (1.0, 0.2, 0.9)])


def _frame():
    return pd.DataFrame(ROWS, columns=["step", "prompt", "reward"])


def _write(frame, path):
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    return path


def test_a_hand_made_run_gives_the_hand_computed_numbers(tmp_path):
    res = analyze(_write(_frame(), tmp_path / "run.csv"), tmp_path / "out", compare="psr", forecast=False,
                  progress=False)
    steps = pd.read_csv(tmp_path / "out" / "steps.csv")
    assert list(steps.columns) == list(STEP_COLUMNS) and len(steps) == 2 * 2
    first = steps[(steps.step == 1) & (steps.advantage == "run (grpo, recomputed)")].iloc[0]
    assert (first.n_prompts, first.n_groups, first.n_rollouts) == (3, 3, 12)
    assert first.mean_reward == pytest.approx(7 / 12)
    assert first.all_correct_groups == pytest.approx(1 / 3) and first.all_wrong_groups == pytest.approx(1 / 3)
    r = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=float)
    d = fadesim.decompose(fadesim.get("grpo")(r), r)
    assert first.positive_mass == pytest.approx(float(d.total_positive) / 3)
    assert first.negative_mass == pytest.approx(float(d.total_negative) / 3)
    assert first.ess == pytest.approx(float(d.ess)) and first.sign_balance == pytest.approx(0.0, abs=1e-12)
    psr = steps[(steps.step == 1) & (steps.advantage == "psr")].iloc[0]
    assert psr.positive_mass == pytest.approx(7 / 3) and psr.negative_mass == 0 and psr.sign_balance == 1
    # step 2: groups of 2 and 3 (the shorter one masked); 0.2 is wrong and 0.9 right at the default threshold 0.5
    second = steps[(steps.step == 2) & (steps.advantage == "psr")].iloc[0]
    assert (second.n_rollouts, second.mean_reward) == (5, pytest.approx(3 / 5))
    assert second.positive_mass == pytest.approx(3 / 2)
    prompts = pd.read_csv(tmp_path / "out" / "prompts.csv")
    assert prompts.solved.tolist() == [pytest.approx(1 / 3), 0.0]
    assert prompts.newly_solved.tolist() == [2, 1] and prompts.never_solved.tolist() == [1, 0]
    assert prompts.newly_lost.tolist() == [0, 0]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| psr |" in report and "2 steps (1 .. 2)" in report
    assert (tmp_path / "out" / "analysis.png").stat().st_size > 10_000 and res["kind"] == "table"


def test_csv_jsonl_and_parquet_agree_and_chunks_change_nothing(tmp_path, monkeypatch):
    frame = _frame()
    tables = [analyze(_write(frame, tmp_path / f"run{ext}"), tmp_path / f"out{ext}", forecast=False,
                      progress=False)["steps"] for ext in (".csv", ".jsonl", ".parquet")]
    for other in tables[1:]:
        pd.testing.assert_frame_equal(tables[0], other)
    monkeypatch.setattr(analysis, "CHUNK", 3)  # steps split across chunk boundaries
    for ext in (".csv", ".jsonl", ".parquet"):
        pd.testing.assert_frame_equal(tables[0], analyze(tmp_path / f"run{ext}", tmp_path / "chunked", forecast=False,
                                                         progress=False)["steps"])


def test_group_ids_logged_advantages_and_the_threshold(tmp_path):
    frame = _frame().assign(group=["g1"] * 4 + ["g2"] * 4 + ["g3"] * 4 + ["g4"] * 2 + ["g5"] * 3,
                            advantage=np.linspace(-1, 1, len(ROWS)))
    frame.loc[frame.index >= 12, "prompt"] = "same prompt, two groups"
    res = analyze(_write(frame, tmp_path / "run.csv"), tmp_path / "out", forecast=False, progress=False,
                  threshold=0.1)
    steps = res["steps"]
    assert set(steps.advantage) == {"run (logged)"}
    second = steps[steps.step == 2].iloc[0]
    assert (second.n_prompts, second.n_groups) == (1, 2)  # the group ids, not the prompt, define the groups
    assert second.mean_reward == pytest.approx(4 / 5)  # 0.2 > 0.1 counts as correct
    adv = np.linspace(-1, 1, len(ROWS))[12:]
    positive = adv[adv > 0].sum()
    assert second.positive_mass == pytest.approx(positive / 2)


def test_groups_of_consecutive_rows():
    from fadesim.apps.analysis import consecutive_groups

    # a prompt drawn twice in a step (8 consecutive rows, G = 4) forms two groups
    ids = consecutive_groups(["a"] * 4 + ["b"] * 8 + ["a"] * 4)
    assert ids.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert consecutive_groups(["a"] * 6, group_size=3).tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(AnalysisError, match="a run of 4 consecutive rollouts of one prompt is not a multiple of the "
                                            "group size 3"):
        consecutive_groups(["a"] * 4 + ["b"] * 3, group_size=3)


def test_a_prompt_drawn_twice_in_a_step_is_tracked_as_one_prompt(tmp_path):
    """Two groups of one prompt in a step (one all wrong, one with a right answer): two groups in steps.csv, one
    prompt in prompts.csv, whose pass rate is over both groups, so it is not counted as lost."""
    rows = ([(1, "a", 1.0), (1, "a", 0.0)] + [(2, "a", 0.0)] * 2 + [(2, "a", 1.0), (2, "a", 0.0)])
    frame = pd.DataFrame(rows, columns=["step", "prompt", "reward"]).assign(group=["1", "1", "2", "2", "3", "3"])
    res = analyze(_write(frame, tmp_path / "run.csv"), tmp_path / "out", forecast=False, progress=False)
    assert res["steps"][res["steps"].step == 2][["n_prompts", "n_groups"]].values.tolist() == [[1, 2]]
    second = res["prompts"].iloc[1]
    assert (second.n_prompts, second.newly_lost, second.pass_rate_bin2) == (1, 0, 1.0)  # 1 of 4 right: 0.25


def test_the_prompt_tracker():
    t = PromptTracker()
    assert t.update(1, ["a", "b"], np.array([0.5, 0.0]))["newly_solved"] == 1
    row = t.update(2, ["a", "b"], np.array([0.0, 0.25]))
    assert (row["newly_solved"], row["newly_lost"], row["never_solved"]) == (1, 1, 0)


@pytest.mark.parametrize("text, message", [
    ('{"step": 1, "prompt": "a", "reward": 1}\n{"step": 1, "prompt": "a", "reward": \n', "line 2: not valid JSON"),
    ('{"step": 1, "prompt": "a", "reward": 1}\n[1, 2]\n', "line 2: expected a JSON object"),
    ('{"step": 1, "prompt": "a"}\n', "line 1: missing column(s) ['reward']"),
    ('{"step": 1, "prompt": "a", "reward": 1}\n\n{"step": 1, "prompt": "a", "reward": "yes"}\n',
     "line 3: reward 'yes' is not a number"),
    ('{"step": 1, "prompt": "a", "reward": 1}\n{"step": 1, "prompt": "a", "reward": 0}\n'
     '{"step": 2, "prompt": "a", "reward": 1}\n{"step": 2, "prompt": "a", "reward": 0}\n'
     '{"step": 1, "prompt": "b", "reward": 0}\n', "line 5: rows of step 1 come after another step's"),
    ('{"step": 1, "prompt": "a", "reward": 1}\n{"step": 1, "prompt": "b", "reward": 0}\n',
     "step 1: every group has one rollout"),
    ('{"step": 1, "prompt": "a", "reward": 1, "entropy": 0.5}\n{"step": 1, "prompt": "a", "reward": 0, "entropy": -0.1}\n',
     "line 2: entropy -0.1 is negative"),
])
def test_bad_rows_name_the_file_and_line_and_leave_nothing_behind(tmp_path, text, message):
    path = tmp_path / "run.jsonl"
    path.write_text(text)
    with pytest.raises(AnalysisError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")) as err:
        analyze(path, tmp_path / "out", forecast=False, progress=False)
    assert str(path) in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]  # no output, no temporary folder


def test_formats_are_detected_or_refused(tmp_path):
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "3.jsonl").write_text('{"input": "q", "output": "a", "gts": "a", "score": 1.0, "step": 3}\n'
                                               '{"input": "q", "output": "b", "gts": "a", "score": 0.0, "step": 3}\n')
    (tmp_path / "trl" / "completions").mkdir(parents=True)
    assert detect(tmp_path / "verl") == "verl" and detect(tmp_path / "trl") == "trl"
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisError, match="neither a verl rollout directory"):
        detect(tmp_path / "empty")
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(AnalysisError, match="must be .csv, .jsonl or .parquet"):
        detect(tmp_path / "x.txt")
    (tmp_path / "verl" / "4.jsonl").write_text('{"input": "q", "output": "a"}\n')
    with pytest.raises(AnalysisError, match=r"4.jsonl, line 1: missing score"):
        analyze(tmp_path / "verl", tmp_path / "out", forecast=False, progress=False)


def test_the_command_prints_the_report_and_refuses_bad_input(tmp_path, capsys):
    path = _write(_frame(), tmp_path / "run.csv")
    assert main(["analyze", str(path), "--out", str(tmp_path / "out"), "--compare", "focal", "--no-forecast"]) == 0
    out = capsys.readouterr().out
    assert "# Run analysis" in out and "| focal |" in out and "steps.csv" in out
    assert main(["analyze", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o2")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["analyze", str(path), "--out", str(tmp_path / "o3"), "--compare", "fade"]) == 2
    assert "step 1: --compare fade reads the entropy signal" in capsys.readouterr().err
    assert main(["analyze", str(path), "--out", str(tmp_path / "o3"), "--compare", "unlikeliness"]) == 2
    assert "--compare unlikeliness reads each rollout's log-prob, and the log has no logprob column" in (
        capsys.readouterr().err)
    assert main(["analyze", str(path), "--out", str(tmp_path / "o3"), "--advantage", "fade"]) == 2
    assert "--advantage fade reads the entropy signal" in capsys.readouterr().err
    assert main(["analyze", str(path), "--out", str(tmp_path / "o3"), "--entropy-decay", "1"]) == 2
    assert "entropy_decay must lie in [0, 1); got 1.0" in capsys.readouterr().err
    assert not (tmp_path / "o3").exists()


def test_fade_and_unlikeliness_read_the_logged_entropy_and_logprobs(tmp_path):
    # three steps of 3 prompts x 4 rollouts with logged entropies, lengths and log-probs: the step entropy is the
    # token mean (entropy weighted by length), the initial entropy the first step's, the signal their moving
    # average including the current step (decay 0.5 here)
    rng = np.random.default_rng(0)
    r = np.array([[[1, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]], [[1, 0, 0, 0], [0, 1, 1, 0], [1, 1, 0, 1]],
                  [[0, 0, 0, 1], [1, 1, 1, 0], [0, 1, 0, 1]]], dtype=float)
    frame = pd.DataFrame([{"step": s + 1, "prompt": "abc"[b], "reward": r[s, b, g]}
                          for s in range(3) for b in range(3) for g in range(4)])
    frame["entropy"] = rng.uniform(0.5, 1.5, len(frame)) * frame.step.map({1: 1.0, 2: 0.5, 3: 0.2})  # falling
    frame["length"] = rng.integers(1, 9, len(frame))
    frame["logprob"] = -rng.uniform(0.5, 20.0, len(frame))
    analyze(_write(frame, tmp_path / "run.parquet"), tmp_path / "out", compare="fade:lam_neg_exploit=0.1,unlikeliness",
            forecast=False, progress=False, entropy_decay=0.5)
    steps = pd.read_csv(tmp_path / "out" / "steps.csv").set_index(["advantage", "step"])
    h = [float((part.entropy * part.length).sum() / part.length.sum()) for _, part in frame.groupby("step")]
    signal = [h[0], 0.5 * h[0] + 0.5 * h[1], 0.25 * h[0] + 0.25 * h[1] + 0.5 * h[2]]
    fade, unlikely = fadesim.get("fade", lam_neg_exploit=0.1), fadesim.get("unlikeliness")
    for s in range(3):
        want = fadesim.decompose(fade(r[s], signals={"entropy": signal[s], "initial_entropy": h[0]}), r[s])
        got = steps.loc[("fade:lam_neg_exploit=0.1", s + 1)]
        assert got.positive_mass == pytest.approx(float(want.total_positive) / 3, rel=1e-9)
        assert got.negative_mass == pytest.approx(float(want.total_negative) / 3, rel=1e-9)
        logprobs = frame[frame.step == s + 1].logprob.to_numpy().reshape(3, 4)
        u = fadesim.decompose(unlikely(r[s], logprobs=logprobs), r[s])
        assert steps.loc[("unlikeliness", s + 1)].positive_mass == pytest.approx(float(u.total_positive) / 3)
    # the schedule moved: eta = signal / initial entropy falls below 1, so the negative weight moves off its start
    assert signal[0] / h[0] == 1 and 0 < signal[2] / h[0] < signal[1] / h[0] < 0.9
    # prompts.csv and the report carry the step entropies and the signal
    per_step = pd.read_csv(tmp_path / "out" / "prompts.csv")
    np.testing.assert_allclose(per_step.entropy, h, rtol=1e-12)
    np.testing.assert_allclose(per_step.entropy_signal, signal, rtol=1e-12)
    np.testing.assert_allclose(per_step.entropy_ratio, np.array(signal) / h[0], rtol=1e-12)
    assert f"fell to {signal[2] / h[0]:.3f} (step 3)" in (tmp_path / "out" / "report.md").read_text()


def test_the_forecast_is_calibrated_to_the_first_step(tmp_path):
    res = analyze(_write(_frame(), tmp_path / "run.csv"), tmp_path / "out", progress=False)
    forecast = pd.read_csv(tmp_path / "out" / "forecast.csv")
    assert forecast.step.tolist() == [0, 1] and forecast.forecast_pass_at_1.between(0, 1).all()
    # step 0 is the calibrated start: near the first step's mean reward (7/12), within the calibration's error
    assert abs(forecast.forecast_pass_at_1.iloc[0] - 7 / 12) < 0.1
    assert "Forecast (the simulator calibrated" in (tmp_path / "out" / "report.md").read_text()
    assert res["forecast"] is not None


@pytest.mark.integration
def test_a_verl_rollout_directory_written_by_verl_itself(tmp_path):
    verl_trainer = pytest.importorskip("verl.trainer.ppo.ray_trainer")
    write = verl_trainer.RayPPOTrainer._write_generations
    rows = ROWS[:12] + [(2, "a", 0.0), (2, "a", 1.0), (2, "b", 1.0), (2, "b", 0.2)]  # verl: n rollouts per prompt
    for step in (1, 2):
        part = [(p, r) for s, p, r in rows if s == step]
        write([p for p, _ in part], ["out"] * len(part), ["gt"] * len(part), [r for _, r in part],
              {"request_id": list(range(len(part)))}, str(tmp_path / "rollouts"), step)
    frame = pd.DataFrame(rows, columns=["step", "prompt", "reward"])
    ours = analyze(_write(frame, tmp_path / "run.csv"), tmp_path / "a", forecast=False, progress=False)["steps"]
    theirs = analyze(tmp_path / "rollouts", tmp_path / "b", forecast=False, progress=False)
    assert theirs["kind"] == "verl"
    pd.testing.assert_frame_equal(ours, theirs["steps"])
