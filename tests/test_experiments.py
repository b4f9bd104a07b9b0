"""Experiment scripts: verdict lines, figures, and kill-and-resume of a sweep."""

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

TINY = ["--n-balances", "5", "--seeds", "3", "--n-prompts", "16", "--n-answers", "8", "--steps", "40",
        "--log-every", "10", "--width", "4", "--llm-n-prompts", "8", "--llm-n-answers", "64", "--llm-n-correct", "4",
        "--llm-width", "4"]


@pytest.mark.heavy
def test_sign_axis_quick_core_prints_verdicts_and_figures(tmp_path, capsys):
    import sign_axis

    # toy's task list in the other order: the pass@k and entropy figures follow each regime's first task
    assert sign_axis.main(TINY + ["--regime", "llm,toy", "--optimizer", "adam_shared", "--tasks", "linear_softmax,bandit",
                                  "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]) == 0
    out = capsys.readouterr().out
    verdicts = _verdict_lines(out)
    theory = [v for v in verdicts if "theory vs simulation" in v]
    # per phase (2): llm bandit (entropy, diversity, logit norm) + toy bandit (3) + toy linear (2 + 4 geometry),
    # and each entropy and diversity claim once more at matched pass@1 (3 tasks x 2);
    # then the theory check: 2 regimes x (sgd, adam_shared) x 4 predicted effects
    assert len(verdicts) - len(theory) == 2 * (3 + 3 + 6 + 3 * 2) and len(theory) == 2 * 2 * 4
    matched = [v for v in verdicts if ", matched pass@1 0." in v.split("]")[0]]
    assert len(matched) == 2 * 3 * 2 and all("where each first reaches pass@1" in v or "not measurable" in v
                                             for v in matched)
    assert all(("NOT CONFIRMED" in v) or (": CONFIRMED" in v) or ("): n/a (" in v and "not measurable" in v)
               for v in verdicts)
    # every verdict names its regime, optimizer and family
    assert all(v.startswith("[llm regime, ") or v.startswith("[toy regime, ") for v in verdicts)
    assert sum(v.startswith("[llm regime, ") for v in verdicts) == 2 * (3 + 2) + 2 * 4
    assert all(("adam_shared" in v) or (", sgd" in v) for v in verdicts)
    assert all("sign_scaled" in v for v in verdicts)
    assert sum("sgd (per-prompt step" in v and "predicted within the 95% CI" in v for v in theory) == 8
    assert "E[M+]" in out and "ESS/group" in out and "Predicted one-step drift" in out
    for name in ("sign_axis_tradeoff_llm_quick", "sign_axis_tradeoff_toy_quick", "sign_axis_geometry_quick",
                 "sign_axis_entropy_quick", "sign_axis_passk_quick", "sign_axis_theory_quick"):
        png = tmp_path / "fig" / f"{name}.png"
        assert png.stat().st_size > 10_000
        assert (tmp_path / "fig" / f"{name}.csv").exists()
    # the pass@k figure: each regime's first task, with its base curve (step 0, rising in k)
    passk = pd.read_csv(tmp_path / "fig" / "sign_axis_passk_quick.csv")
    assert set(passk.run) == {"llm regime, bandit, adam_shared", "toy regime, linear_softmax, adam_shared"}
    base = passk[passk.balance == "base"]
    assert len(base) == 2 * 11 and base.groupby("run").value.is_monotonic_increasing.all()
    tables = (tmp_path / "fig" / "sign_axis_verdicts_quick.md").read_text()
    assert "| task | family | metric | phase | llm / adam_shared | toy / adam_shared |" in tables
    assert tables.count("**") == 2 * 3  # one table per claim


@pytest.mark.slow  # the fast part: test_sign_axis_math_regime_wiring; CI's main-job command runs it in full
def test_sign_axis_in_the_math_regime_sweeps_its_sharpen_task_and_checks_theory_on_its_bandit(tmp_path, capsys):
    import sign_axis

    args = ["--regime", "math", "--optimizer", "adam", "--n-balances", "3", "--seeds", "2", "--steps", "40",
            "--log-every", "10", "--theory-seeds", "8", "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig"),
            "--no-figures"]
    assert sign_axis.main(args) == 0
    out = capsys.readouterr().out
    verdicts = _verdict_lines(out)
    theory = [v for v in verdicts if "theory vs simulation" in v]
    sweep = [v for v in verdicts if "theory vs simulation" not in v]
    # the sweep runs the regime's task (sharpen: entropy, diversity, logit norm, two phases, and entropy and
    # diversity once more at matched pass@1); the theory check runs its bandit control (sgd and adam, 4 effects
    # each), whose per-prompt step uses the preset's 256 prompts
    assert len(sweep) == 2 * (3 + 2) and all(v.startswith("[math regime, sharpen, adam, sign_scaled, ") for v in sweep)
    assert len(theory) == 2 * 4 and all(v.startswith("[math regime, bandit, ") for v in theory)
    assert "math regime's difficulty" in out


@pytest.mark.heavy
def _refused(main, argv, message, capsys):
    """A bad setting: exit status 2 and one line on stderr naming it (argparse's convention), nothing run."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0], (exit_.value.code, err)


def test_sign_axis_regime_and_optimizer_flags(tmp_path, capsys):
    import sign_axis

    args = TINY + ["--regime", "toy", "--optimizer", "adam,adam_shared", "--families", "sign_balanced",
                   "--tasks", "bandit", "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig"), "--no-figures"]
    assert sign_axis.main(args) == 0
    out = capsys.readouterr().out
    # --no-figures: the verdicts and their tables, no figure
    assert "figure: " not in out and not list((tmp_path / "fig").glob("*.png"))
    assert (tmp_path / "fig" / "sign_axis_verdicts_quick.md").exists()
    verdicts = _verdict_lines(out)
    sweep = [v for v in verdicts if "theory vs simulation" not in v]
    assert len(sweep) == 2 * 2 * (3 + 2) and all(v.startswith("[toy regime, bandit, ") for v in sweep)
    assert {v.split(", ")[2] for v in sweep} == {"adam", "adam_shared"}
    assert all("sign_balanced" in v for v in verdicts)
    capsys.readouterr()
    _refused(sign_axis.main, ["--regime", "huge", "--out", str(tmp_path / "x")], "regimes must be a non-empty subset",
             capsys)
    _refused(sign_axis.main, ["--optimizer", "sgd", "--out", str(tmp_path / "x")],
             "plain SGD is the theory check's optimizer", capsys)


def test_figure_renders_with_labelled_axes(tmp_path):
    import matplotlib.pyplot as plt
    import numpy as np

    from fadesim.lab.plots import tradeoff_figure

    df = pd.DataFrame({"balance": np.repeat([-1.0, 0.0, 1.0], 3), "seed": np.tile([0, 1, 2], 3),
                       "entropy": np.linspace(1, 2, 9), "task": "bandit"})
    captured = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, *args, **kwargs):
        captured["labels"] = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
        return real_savefig(fig, *args, **kwargs)

    plt.Figure.savefig = spy
    try:
        path = tradeoff_figure(df, x="balance", x_label="sign balance b", hue="task",
                               panels=[("entropy", "entropy (nats)")], title="t", path=tmp_path / "f.png")
    finally:
        plt.Figure.savefig = real_savefig
    assert captured["labels"] == [("sign balance b", "entropy (nats)")]
    image = plt.imread(path)
    assert image.shape[0] > 100 and image.std() > 0.01  # rendered something, not a blank canvas


#: runs experiments/sign_axis.py, and with KILL_AT = n SIGKILLs itself inside the n-th atomic write of the
#: result store: after the unit's temporary file is written and fsynced, just before os.replace publishes it
#: (the worst moment for a kill). Deterministic, unlike a kill timed from outside.
KILLABLE = """
import os, runpy, signal, sys, types
import fadesim.lab.results as results
kill_at, calls = int(os.environ.get("KILL_AT", "0")), [0]
def replace(src, dst):
    calls[0] += 1
    if calls[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    os.replace(src, dst)
results.os = types.SimpleNamespace(**{**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")},
                                      "replace": replace})
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_atomic_write_gives_the_mode_a_plain_write_gets(tmp_path):
    """write_atomic's temporary file comes from mkstemp (mode 0600); the published result must not stay private."""
    from fadesim.lab.results import write_atomic

    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.csv", pd.DataFrame({"x": [1.0]}))
        (tmp_path / "b.csv").write_text("x\n1.0\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == (tmp_path / "b.csv").stat().st_mode & 0o777 == 0o640
    assert pd.read_csv(tmp_path / "a.csv").x.tolist() == [1.0]


def test_figures_and_text_are_written_atomically(tmp_path):
    """save_figure and write_text_atomic leave the old file, or the complete new one; an error while writing leaves
    no partial file and no temporary behind."""
    import matplotlib.pyplot as plt

    from fadesim.lab.plots import save_figure
    from fadesim.lab.results import write_text_atomic

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "f.png", dpi=50)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not plt.get_fignums()  # a PNG, and the figure closed
    write_text_atomic(tmp_path / "t.md", "# old\n")

    class Boom(RuntimeError):
        pass

    def fails(fh):
        fh.write("# half")
        raise Boom

    from fadesim.lab.results import write_file_atomic

    with pytest.raises(Boom):
        write_file_atomic(tmp_path / "t.md", fails)
    assert (tmp_path / "t.md").read_text() == "# old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "t.md"]


def _run_killed(args, kill_at):
    return subprocess.run([sys.executable, "-c", KILLABLE, str(ROOT / "experiments" / "sign_axis.py"), *args],
                          env={**os.environ, "KILL_AT": str(kill_at)}, capture_output=True, text=True, timeout=600)


@pytest.mark.heavy
def test_killed_sweep_resumes_to_exactly_the_uninterrupted_rows(tmp_path, capsys):
    import sign_axis

    args = TINY + ["--regime", "toy", "--optimizer", "adam_shared", "--tasks", "bandit", "--seeds", "4",
                   "--figures", str(tmp_path / "fig"), "--no-figures"]
    clean = tmp_path / "clean"
    assert sign_axis.main(args + ["--out", str(clean)]) == 0  # uninterrupted, in this process
    clean_units = sorted((clean / "quick" / "units").glob("*.csv"))
    # 2 theory-check units (sgd and adam_shared) and 4 seeds of the bandit sweep
    assert len(clean_units) == 6
    killed = tmp_path / "killed"
    units = killed / "quick" / "units"
    proc = _run_killed(args + ["--out", str(killed)], kill_at=4)  # inside the 4th unit's write
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-3000:])
    assert len(list(units.glob("*.csv"))) == 3  # the first three units, published
    assert len(list(units.glob("*.tmp"))) == 1  # the fourth, written but never published
    for f in units.glob("*.csv"):  # every unit on disk is complete and readable
        pd.read_csv(f)
    # resumed from what the killed process left on disk (in this process: the kill is what needs a process of its
    # own; the killed run's three units, computed there, still have to equal this process's)
    assert sign_axis.main(args + ["--out", str(killed)]) == 0
    a = pd.concat([pd.read_csv(f) for f in clean_units])
    b = pd.concat([pd.read_csv(f) for f in sorted(units.glob("*.csv"))])
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    assert len(list(units.glob("*.tmp"))) == 1  # the orphan is never read as a unit (it stays, named *.tmp)


def _verdict_lines(out):
    """Every verdict line: CONFIRMED, NOT CONFIRMED, or n/a where a matched-pass@1 reading is not measurable."""
    return [line for line in out.splitlines() if "CONFIRMED" in line or "): n/a (" in line]


@pytest.mark.heavy
def test_difficulty_axis_prints_verdicts_and_figures(tmp_path, capsys):
    import difficulty_axis

    # one task here (linear_softmax; the phase-shift test runs the bandit): each task is its own compiled programs
    args = ["--gammas", "0,2", "--seeds", "2", "--n-prompts", "24", "--n-answers", "8", "--steps", "20",
            "--log-every", "10", "--llm-n-prompts", "8", "--llm-n-answers", "64", "--llm-n-correct", "4",
            "--llm-width", "4", "--tasks", "linear_softmax", "--out", str(tmp_path / "res"),
            "--figures", str(tmp_path / "fig")]
    assert difficulty_axis.main(args) == 0
    lines = _verdict_lines(capsys.readouterr().out)
    # (toy: 3 prompt sets, llm: its calibrated set) x (mass structure, learning on hard prompts)
    assert len(lines) == (3 + 1) * 2
    assert all("linear_softmax" in line for line in lines)
    assert sum(line.startswith("[llm regime, ") for line in lines) == 2
    assert all(", adam_shared, " in line for line in lines)
    assert (tmp_path / "fig" / "difficulty_axis_learning_adam_shared_quick.png").exists()
    assert (tmp_path / "fig" / "difficulty_axis_theory_quick.csv").exists()


@pytest.mark.slow  # the fast part: test_difficulty_axis_math_regime_batches_and_prompt_set
def test_difficulty_axis_in_the_math_regime_checks_mass_on_its_full_batch_control(tmp_path, capsys):
    import difficulty_axis

    args = ["--regime", "math", "--optimizer", "adam", "--gammas", "0,2", "--seeds", "2", "--steps", "20",
            "--log-every", "10", "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]
    assert difficulty_axis.main(args) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("[math regime, ")]
    sharpen = [line for line in lines if line.startswith("[math regime, sharpen, adam, calibrated-math] ")]
    bandit = [line for line in lines if line.startswith("[math regime, bandit, adam, calibrated-math] ")]
    # sharpen draws one prompt a step: no within-batch mass structure to measure, said so, no closed-form line
    assert len(sharpen) == 2 and "not measurable here (one group a step" in sharpen[0]
    assert "hard focus speeds up learning on hard prompts: " in sharpen[1]
    # its bandit control (full batch, 256 prompts): the mass verdict, out of 256 groups, and the closed form
    assert len(bandit) == 3 and "of 256 groups a step)" in bandit[0] and "closed form vs first batch" in bandit[2]
    error = float(bandit[2].split("max |ESS/N error| ")[1])
    assert error < 0.03  # the ESS share per group of 256, not per llm_n_prompts or n_prompts
    theory = pd.read_csv(tmp_path / "fig" / "difficulty_axis_theory_quick.csv")
    assert set(theory.difficulty) == {"calibrated-math"}


@pytest.mark.slow  # the fast part: tests/test_sharpen.py's restarted-task tests (numpy = jax)
def test_phase_shift_in_the_math_regime_restarts_sharpen_from_its_grpo_checkpoint(tmp_path, capsys):
    import phase_shift

    args = ["--regime", "math", "--optimizer", "adam", "--gammas", "0,2", "--lam-negs", "0.5,1", "--seeds", "2",
            "--window", "10", "--warm-steps", "30", "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig"),
            "--no-figures"]
    assert phase_shift.main(args) == 0
    lines = _verdict_lines(capsys.readouterr().out)
    assert len(lines) == 4 * 2 and all(line.lstrip().startswith("[math regime, sharpen, adam] ") for line in lines)
    rows = pd.concat([pd.read_csv(f) for f in (tmp_path / "res" / "quick" / "units").glob("*.csv")])
    start = rows[rows.step == 0].groupby("phase")[["pass@1", "entropy"]].mean()
    # the late phase starts where 30 GRPO steps left the held-out prompts: sharper and more often right
    assert start.loc["late", "entropy"] < start.loc["early", "entropy"] - 0.05
    assert start.loc["late", "pass@1"] > start.loc["early", "pass@1"]
    assert abs(start.loc["early", "pass@1"] - 0.648) < 0.01  # the math regime's held-out base


def test_phase_shift_prints_verdicts_and_figures(tmp_path, capsys):
    import phase_shift

    args = ["--gammas", "0,2", "--lam-negs", "0.5,1", "--seeds", "2", "--n-prompts", "24", "--n-answers", "8",
            "--window", "10", "--warm-steps", "20", "--llm-n-prompts", "8", "--llm-n-answers", "64",
            "--llm-n-correct", "4", "--llm-width", "4", "--tasks", "bandit", "--out", str(tmp_path / "res"),
            "--figures", str(tmp_path / "fig")]
    assert phase_shift.main(args) == 0
    lines = _verdict_lines(capsys.readouterr().out)
    assert len(lines) == 2 * 4 * 2  # regimes x claims x (pass@1, pass@16)
    assert sum(line.lstrip().startswith("[llm regime, ") for line in lines) == 4 * 2
    assert all(", adam_shared]" in line for line in lines)
    assert (tmp_path / "fig" / "phase_shift_toy_adam_shared_bandit_late_quick.png").exists()
    assert (tmp_path / "fig" / "phase_shift_llm_adam_shared_bandit_early_quick.png").exists()


def test_phase_shift_claims_are_picked_on_tuning_seeds_and_judged_on_held_out_ones():
    import phase_shift

    def frame(progress):  # progress[(gamma, lam_neg)] = one value per seed 0..5 (0-2 tune, 3-5 judge)
        return pd.DataFrame([{"gamma": g, "lam_neg": lam, "seed": seed, "progress": v}
                             for (g, lam), values in progress.items() for seed, v in enumerate(values)])

    suppress = lambda g, lam: lam < 1  # noqa: E731 - a one-line rule
    clear = frame({(0.0, 0.5): [3, 3.1, 2.9, 3, 3.2, 2.8], (0.0, 1.0): [1, 1.1, 0.9, 1, 1.2, 0.8]})
    test = phase_shift.claim_test(clear, suppress)
    assert test.confirmed and test.inside == (0.0, 0.5) and test.outside == (0.0, 1.0) and test.n_held_out == 3
    assert abs(test.gain - 2.0) < 1e-12
    # best on the tuning seeds, no better than the rest on the held-out ones: a tie, not a verdict
    lucky = frame({(0.0, 0.5): [3, 3.1, 2.9, 1, 1.2, 0.8], (0.0, 1.0): [1, 1.1, 0.9, 1.1, 1.0, 0.9]})
    assert not phase_shift.claim_test(lucky, suppress).confirmed
    # the rest wins on the held-out seeds
    assert not phase_shift.claim_test(frame({(0.0, 0.5): [1] * 6, (0.0, 1.0): [2, 2, 2, 2.1, 2, 1.9]}), suppress).confirmed
    empty = phase_shift.claim_test(frame({(0.0, 0.5): [1] * 6}), suppress)
    assert not empty.confirmed and "no setting outside the claim" in empty.describe()
    from fadesim.lab.stats import seed_ranges, split_seeds

    assert split_seeds([3, 1, 2, 0, 1]) == ([0, 1], [2, 3]) and split_seeds(range(5)) == ([0, 1], [2, 3, 4])
    assert seed_ranges(2, 3) == ([0, 1], [1000, 1001, 1002])
    with pytest.raises(ValueError, match="at least one tuning and one held-out seed"):
        seed_ranges(2, 0)
    with pytest.raises(ValueError, match="phase_shift needs at least 2 seeds"):
        phase_shift.claim_test(frame({(0.0, 0.5): [1.0], (0.0, 1.0): [2.0]}), suppress)


def test_fade_vs_static_prints_verdicts_and_figures(tmp_path, capsys):
    import fade_vs_static

    args = ["--baselines", "grpo,w_reinforce", "--difficulties", "mixed", "--tune-seeds", "2", "--eval-seeds", "2",
            "--n-prompts", "16", "--steps", "20", "--log-every", "10",
            "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]
    assert fade_vs_static.main(args) == 0
    out = capsys.readouterr().out
    lines = _verdict_lines(out)
    # the speed claim at matched step, then the coverage claim at matched pass@1
    assert len(lines) == 2 and "FADE reaches peak pass@1 earlier" in lines[0]
    assert "FADE keeps more coverage than the best static" in lines[1] and "at matched pass@1: " in lines[1]
    assert "pass@256 where each run first reaches pass@1 " in lines[1]
    for method in ("fade_design", "fade_with_focal", "fade_no_sign", "fade_frozen_explore", "fade_frozen_exploit",
                   "w_reinforce"):
        assert method in out
    assert lines[0].startswith("[toy regime, bandit, adam_shared, mixed] ")
    assert (tmp_path / "fig" / "fade_vs_static_methods_quick.png").exists()
    spectrum = pd.read_csv(tmp_path / "fig" / "fade_vs_static_passk_quick.csv")
    assert sorted(spectrum.k.unique()) == [2**j for j in range(11)] and "fade" in set(spectrum.line)


def test_fade_vs_static_llm_regime_cell(tmp_path, capsys):
    import fade_vs_static

    args = ["--regime", "llm", "--optimizer", "adam", "--baselines", "grpo", "--tune-seeds", "2", "--eval-seeds", "2",
            "--llm-n-prompts", "8", "--steps", "10", "--log-every", "5",
            "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]
    assert fade_vs_static.main(args) == 0
    lines = _verdict_lines(capsys.readouterr().out)
    assert len(lines) == 2 and all(line.startswith("[llm regime, bandit, adam, calibrated] ") for line in lines)


@pytest.mark.slow  # the fast part: test_fade_vs_static_math_regime_units
def test_fade_vs_static_math_regime_cell_runs_sharpen_on_its_calibrated_set(tmp_path, capsys):
    import fade_vs_static

    args = ["--regime", "math", "--optimizer", "adam", "--baselines", "grpo", "--tune-seeds", "2", "--eval-seeds", "2",
            "--steps", "10", "--log-every", "5", "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig"),
            "--no-figures"]
    assert fade_vs_static.main(args) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("[math regime, sharpen, adam, calibrated-math] ")]
    assert len(lines) == 2 and "FADE reaches peak pass@1 earlier" in lines[0]
    assert "at matched pass@1: " in lines[1]  # measured, or not measurable with its reason (10 steps)


@pytest.mark.slow  # the fast part: test_ladder_c3_is_not_measurable_at_one_prompt_a_step
def test_ladder_sharpen_rung_in_the_math_regime_says_c3_is_not_measurable(tmp_path, capsys):
    import ladder

    # the sharpen rung alone (each method is its own compiled program); the bandit rung's C3 is measured in
    # test_ladder_prints_a_verdict_per_claim_with_table_and_figure
    args = ["--regime", "math", "--rungs", "sharpen", "--optimizer", "adam", "--steps", "8", "--log-every", "2",
            "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig"), "--no-figures"]
    assert ladder.main(args) == 0
    out = capsys.readouterr().out
    claims = [line for line in out.splitlines() if line.startswith("[math regime, sharpen rung, adam] C")]
    assert [line.split(" ")[5] for line in claims] == ["C1", "C1p", "C2", "C3", "C4"]
    assert "n/a (not measurable)" in claims[3] and "one prompt a step" in claims[3]
    assert all("n/a" not in line.split("sign predicted")[0] for i, line in enumerate(claims) if i != 3)


def test_tuning_and_evaluation_use_disjoint_seeds_and_fade_gets_the_largest_static_grid():
    import fade_vs_static as fvs

    s = fvs.QUICK
    assert set(fvs.tune_seeds(s)).isdisjoint(fvs.eval_seeds(s))
    assert len(fvs.tune_seeds(s)) == s.tune_seeds and len(fvs.eval_seeds(s)) == s.eval_seeds
    with pytest.raises(ValueError, match="tune_seeds = 1001"):
        fvs.eval_seeds(dataclasses.replace(s, tune_seeds=1001))
    # FADE's tuning budget is the largest static grid; the sweep entries line up with the method names
    largest = max(len(values) for grid in fvs.GRIDS.values() for values in grid.values())
    assert len(fvs.FADE_GRID) == largest
    fade_unit = [u for u in fvs._runs(s) if u["advantage"] == "fade"][0]
    assert fade_unit["variants"].count("fade") == len(fvs.FADE_GRID)
    assert all(len(v) == len(fade_unit["variants"]) for v in fade_unit["sweep"].values())
    default = fvs.FADE_GRID.index((fvs._FADE["lam_neg_explore"], fvs._FADE["lam_neg_exploit"]))
    assert fade_unit["sweep"]["gamma_explore"][default] == fvs._FADE["gamma_explore"]


def test_calibration_figure_fits_the_published_curve(tmp_path, capsys):
    import calibration

    assert calibration.main(["--figures", str(tmp_path), "--n-prompts", "256"]) == 0
    out = capsys.readouterr().out
    assert out.count("error per k") == 3 and "llm-regime task" in out
    frame = pd.read_csv(tmp_path / "calibration.csv")
    published = frame[frame.curve == "published"]
    assert len(published) == 9  # 3 splits x k = 1, 5, 1000 (arXiv 2107.03374, Table 3)
    assert (tmp_path / "calibration.png").stat().st_size > 10_000


@pytest.mark.heavy
def test_ladder_prints_a_verdict_per_claim_with_table_and_figure(tmp_path, capsys):
    import ladder

    # one rung end to end (each method is its own compiled program); predictions: the synthetic test below
    args = ["--rungs", "bandit", "--steps", "8", "--log-every", "2", "--n-prompts", "16", "--bootstrap", "50",
            "--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]
    assert ladder.main(args) == 0
    out = capsys.readouterr().out
    claims = [line for line in out.splitlines() if line.startswith("[toy regime, bandit rung, adam_shared] C")]
    # C1 at the matched step and at matched pass@1 (C1p), C2, C3, C4
    assert [line.split(" ")[5] for line in claims] == ["C1", "C1p", "C2", "C3", "C4"]
    assert all("sign predicted by the rung below: (first rung)" in line for line in claims)
    assert all(("CONFIRMED" in line) and ("effect " in line) for line in claims)
    assert "entropy where each first reaches pass@1 0." in claims[1] or "not measurable (pass@1" in claims[1]
    table = (tmp_path / "fig" / "ladder_quick.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| C")]
    assert len(rows) == 5 and all("| bandit | toy | adam_shared |" in row for row in rows)  # every verdict's optimizer
    assert (tmp_path / "fig" / "ladder_quick.png").stat().st_size > 10_000
    capsys.readouterr()
    _refused(ladder.main, ["--rungs", "bandit,gpt5", "--out", str(tmp_path / "x")], "rungs must be a non-empty subset",
             capsys)
    _refused(ladder.main, ["--seeds", "2", "--out", str(tmp_path / "x")], "seeds >= 4", capsys)


def _synthetic_rung(rung, entropy_by_method, seeds=4, steps=(0, 2, 4, 6, 8)):
    import ladder

    rows = []
    for m_index, method in enumerate(ladder.METHODS):
        for seed in range(seeds):
            for step in steps:
                noise = 0.01 * ((seed * 7 + m_index * 3) % 5)
                rows.append({"rung": rung, "regime": "toy", "method": method, "seed": seed, "step": step,
                             "entropy": entropy_by_method[method] + noise, "pass@1": 0.1 * m_index + noise,
                             "pass@1_hard": 0.05 * m_index + noise, "ess": 10.0 - m_index,
                             "geometry": 1.0 + (0.5 if method == "negative-heavy" else 0.0) + noise})
    return pd.DataFrame(rows)


def test_ladder_predictions_on_synthetic_rungs():
    """Two rungs with the same method ordering: tau = 1 with a CI above 0 and every effect's sign predicted;
    a third rung with entropy reversed: tau = -1, C1's sign not predicted."""
    import numpy as np

    import ladder

    base = {"grpo": 1.0, "positive-heavy": 0.5, "negative-heavy": 1.5, "focal": 1.2, "fade": 0.8}
    flipped = {m: 2.0 - v for m, v in base.items()}
    df = pd.concat([_synthetic_rung("bandit", base), _synthetic_rung("chain", base),
                    _synthetic_rung("neural", flipped).assign(regime="-")], ignore_index=True)
    s = ladder.Settings(rungs=("bandit", "chain", "neural"), steps=8, log_every=2, bootstrap=100)
    effects = ladder.claim_effects(df, s)
    c1 = {(e["rung"]): e for e in effects if e["claim"] == "C1"}
    assert c1["bandit"]["ok"] and c1["chain"]["ok"] and not c1["neural"]["ok"]
    np.testing.assert_allclose(c1["bandit"]["effect"], -0.5 + np.mean([0.01 * ((s_ * 7 + 1 * 3) % 5) -
                                                                        0.01 * ((s_ * 7) % 5) for s_ in range(4)]))
    predicted = ladder.sign_predictions(effects)
    assert predicted[("bandit", "toy", "C1")] == "(first rung)"
    assert predicted[("chain", "toy", "C1")] == "yes (from bandit, toy)"
    assert predicted[("neural", "-", "C1")].startswith("NO (from chain, toy: ")
    cells = [("bandit", "toy"), ("bandit", "llm"), ("chain", "toy"), ("chain", "llm"), ("neural", "-"), ("gpt2", "-")]
    assert ladder.predecessors(cells, 1) == []  # the same rung in another regime predicts nothing
    assert ladder.predecessors(cells, 3) == [("bandit", "llm")]
    assert ladder.predecessors(cells, 4) == [("chain", "toy"), ("chain", "llm")]
    assert ladder.predecessors(cells, 5) == [("neural", "-")]
    orders = pd.DataFrame(ladder.ordering_predictions(df, s, np.random.default_rng(0)))
    ent = orders[orders.metric == "entropy"]
    assert (ent[ent.target == "chain (toy)"].tau == 1.0).all() and ent[ent.target == "chain (toy)"].predicted.all()
    assert (ent[ent.target == "neural (-)"].tau == -1.0).all() and not ent[ent.target == "neural (-)"].predicted.any()


def test_kendall_tau_and_checkpoints():
    import numpy as np

    import ladder

    assert ladder.kendall_tau(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])) == 1.0
    assert ladder.kendall_tau(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == -1.0
    assert ladder.checkpoints(200, 10) == {"quarter": 50, "half": 100, "end": 200}
    assert ladder.checkpoints(40, 10) == {"quarter": 10, "half": 20, "end": 40}


def test_one_task_builder_per_regime_reads_the_sizes_the_settings_declare():
    from fadesim.lab.regime_tasks import regime_task
    from fadesim.tasks import make_task

    @dataclasses.dataclass(frozen=True)
    class Sizes:
        n_prompts: int = 6
        n_answers: int = 12
        chain_length: int = 2
        chain_vocab: int = 5
        width: int = 3

    s = Sizes()
    bandit = regime_task(s, "bandit", "toy", difficulty="hard", seed=1)
    ref = make_task("bandit", regime="toy", n_prompts=6, n_answers=12, difficulty="hard", seed=1)
    assert (bandit.logits0 == ref.logits0).all()
    chain = regime_task(s, "chain", "toy")
    assert (chain.length, chain.table0.shape[-1]) == (2, 5)  # the settings' chain, not the toy preset's T 3, V 4
    assert regime_task(s, "linear_softmax", "toy").prompt_features.shape == (6, 3)
    default_chain = regime_task(object(), "chain", "toy")  # sizes not declared: the toy regime's
    assert (default_chain.length, default_chain.table0.shape[-1]) == (3, 4)
    with pytest.raises(ValueError, match="unknown regime 'tiny'"):
        regime_task(s, "bandit", "tiny")


def test_each_regime_runs_its_own_task_list():
    from fadesim.lab.regime_tasks import regime_task_names

    class Sign:  # sign_axis: tuples, an llm list of its own
        tasks, llm_tasks, math_tasks = ("bandit", "linear_softmax"), ("bandit",), ("sharpen",)

    class Phase:  # phase_shift: comma-separated strings, no llm list (the llm regime runs ``tasks``)
        tasks, math_tasks = "bandit, linear_softmax", "sharpen,bandit"

    assert [regime_task_names(Sign(), r) for r in ("toy", "llm", "math")] == [
        ["bandit", "linear_softmax"], ["bandit"], ["sharpen"]]
    assert [regime_task_names(Phase(), r) for r in ("toy", "llm", "math")] == [
        ["bandit", "linear_softmax"], ["bandit", "linear_softmax"], ["sharpen", "bandit"]]


def test_at_pass1_reads_a_metric_where_pass1_first_reaches_the_target():
    from fadesim.lab.stats import at_pass1

    run = pd.DataFrame({"step": [20, 0, 10, 30], "pass@1": [0.6, 0.5, 0.75, 0.9], "entropy": [1.0, 2.0, 1.5, 0.5]})
    # sorted by step: pass@1 0.5, 0.75, 0.6, 0.9; the first crossing of 0.7 is between steps 0 and 10
    assert at_pass1(run, 0.7, "entropy") == pytest.approx(2.0 + (0.2 / 0.25) * (1.5 - 2.0))
    assert np.isnan(at_pass1(run, 0.5, "entropy"))  # met before training: not a reading of what training did
    assert at_pass1(run, 0.8, "entropy") == pytest.approx(1.0 + (0.2 / 0.3) * (0.5 - 1.0))  # after the dip
    assert np.isnan(at_pass1(run, 0.95, "entropy"))  # never reached
    with pytest.raises(ValueError, match="must be a finite number"):
        at_pass1(run, float("nan"), "entropy")


def test_matched_pass1_takes_learning_speed_out_of_the_sign_axis_comparison():
    """Both balances trace the same entropy-vs-pass@1 frontier (entropy = 2 - 2 pass@1), b = +1 twice as slowly:
    at the matched step b = +1 keeps more entropy (the claim's effect is negative), at matched pass@1 it is 0."""
    import sign_axis

    rows = []
    for seed in range(4):
        for b, speed in ((0.0, 0.02), (1.0, 0.01)):
            for step in range(0, 101, 10):
                p1 = 0.4 + speed * step * (1 + 0.01 * seed)
                rows.append({"seed": seed, "balance": b, "step": step, "pass@1": p1, "entropy": 2 - 2 * p1})
    run = pd.DataFrame(rows)
    part = run[run.step == 20].set_index(["seed", "balance"])
    at_step = part.entropy.xs(0.0, level=1) - part.entropy.xs(1.0, level=1)
    assert (at_step < -0.3).all()
    rec = sign_axis.matched_pass1_record(run, part, "early", 20, "positive mass collapses entropy", "entropy")
    assert rec["target"] == pytest.approx(part["pass@1"].xs(1.0, level=1).mean())  # the slower balance's mean
    assert rec["effect"] == pytest.approx(0.0, abs=1e-12) and rec["ok"] is False
    assert "over 4/4 seeds" in rec["detail"] and rec["phase"] == "early, matched pass@1"


def test_difficulty_axis_math_regime_batches_and_prompt_set():
    """Fast: each task's groups a step (the ESS is out of them), the math regime's calibrated set, and the mass
    verdict on a one-group-a-step task, which says it is not measurable instead of judging a constant."""
    import difficulty_axis as da
    from fadesim.tasks import regime_kwargs

    s = da.Settings(n_prompts=24, n_answers=8, llm_n_prompts=8, llm_n_answers=64, llm_n_correct=4)
    assert da.groups_per_step(s, "math", "sharpen", da.MATH_SET) == 1  # one prompt a step
    assert da.groups_per_step(s, "math", "bandit", da.MATH_SET) == 256
    assert da.groups_per_step(s, "toy", "bandit", "hard") == 24 and da.groups_per_step(s, "llm", "bandit", da.LLM_SET) == 8
    assert da.prompt_sets("math") == (da.MATH_SET,) and da.difficulty_of(da.MATH_SET) == regime_kwargs("math", "bandit")[
        "difficulty"]
    rows = [{"regime": "math", "optimizer": "adam", "task": "sharpen", "difficulty": da.MATH_SET, "phase": phase,
             "seed": seed, "gamma": g, "step": step, "hardness": 0.5, "ess": 0.6, "pass@1_hard": 0.1 + 0.01 * g * step}
            for seed in range(4) for g in (0.0, 2.0)
            for phase, steps in (("first", (0, 1)), ("train", (0, 20))) for step in steps]
    theory = pd.DataFrame({"difficulty": da.MATH_SET, "gamma": [0.0, 2.0], "hardness": 0.5, "ess_fraction": 0.6})
    lines = da.verdicts(pd.DataFrame(rows), theory, dataclasses.replace(s, gammas="0,2"))
    assert len(lines) == 2 and "not measurable here (one group a step" in lines[0]
    assert lines[1].startswith("[math regime, sharpen, adam, calibrated-math] hard focus speeds up learning")


def test_fade_vs_static_math_regime_units():
    """Fast: the math regime's units run its sharpen task on its calibrated set, and that task is the preset's."""
    import fade_vs_static as fvs
    from fadesim.tasks import make_task

    s = fvs.Settings(regimes=("math",), baselines="grpo")
    units = fvs._runs(s)
    assert {(u["regime"], u["task"], u["difficulty"]) for u in units} == {("math", "sharpen", fvs.MATH_SET)}
    assert {u["advantage"] for u in units} == {"grpo", "fade"}
    task = fvs._task("sharpen", fvs.MATH_SET, s, "math")
    np.testing.assert_array_equal(task.logits0, make_task("sharpen", regime="math").logits0)


def test_ladder_c3_is_not_measurable_at_one_prompt_a_step():
    """Fast: on synthetic rungs in the math regime, the sharpen rung's C3 is n/a (one prompt a step: no ESS cost
    within a batch of one group) while its bandit control's is judged; C1p is reported on both."""
    import ladder

    base = {"grpo": 1.0, "positive-heavy": 0.5, "negative-heavy": 1.5, "focal": 1.2, "fade": 0.8}
    df = pd.concat([_synthetic_rung("bandit", base), _synthetic_rung("sharpen", base)],
                   ignore_index=True).assign(regime="math")
    s = ladder.Settings(rungs=("bandit", "sharpen"), regimes=("math",), optimizer="adam", steps=8, log_every=2)
    assert ladder.one_group_a_step(s, "sharpen", "math") and not ladder.one_group_a_step(s, "bandit", "math")
    effects = {(e["rung"], e["claim"]): e for e in ladder.claim_effects(df, s)}
    assert effects[("sharpen", "C3")]["ok"] is None and "one prompt a step" in effects[("sharpen", "C3")]["note"]
    assert effects[("bandit", "C3")]["ok"] is not None
    assert {("bandit", "C1p"), ("sharpen", "C1p")} <= set(effects)


def test_sign_axis_math_regime_wiring():
    """Fast: the main job's math regime sweeps its sharpen task, checks the second-order theory on its bandit
    control at the preset's 256 prompts, and tabulates masses under its calibrated difficulty."""
    import sign_axis
    from fadesim.lab.regime_tasks import regime_task_names
    from fadesim.tasks import make_task

    s = sign_axis.QUICK
    assert s.regimes[0] == "math" and s.optimizers[0] == "adam"
    assert regime_task_names(s, "math") == ["sharpen"]
    assert regime_task_names(sign_axis.FULL, "math") == ["sharpen", "linear_softmax"]
    sgd = sign_axis.theory_configs(s)["math"]["sgd"]
    assert sgd.optimizer == "sgd" and sgd.lr == pytest.approx(s.theory_step * 256)
    bandit = sign_axis.build_task(s, "math", "bandit")
    np.testing.assert_array_equal(bandit.logits0, make_task("bandit", regime="math").logits0)
    masses = sign_axis.exact_mass_table(s, "math")
    assert masses.loc[masses.advantage == "grpo", "balance"].item() == pytest.approx(0.0, abs=1e-12)
