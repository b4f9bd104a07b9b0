"""Arms measured beside the paper experiment (experiments/real_model_beside.py): the paper's own arms are refused, the
paired difference from GRPO is taken seed by seed with a Student-t interval, and the whole pipeline on the tiny GPT-2
(--preset paper-quick) pairs with a paper experiment's measured file only where both were scored on the same base."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model_beside  # noqa: E402 - a script of experiments/, importable once that folder is on sys.path

pytestmark = pytest.mark.integration  # real_model imports the bridge's stack (transformers)


def test_the_paper_experiments_own_arms_are_refused():
    with pytest.raises(ValueError, match="grpo is already an arm"):
        real_model_beside.arms("risk_sensitive:beta=2,grpo", "paper")
    with pytest.raises(ValueError, match="focal:gamma=3 is already an arm"):
        real_model_beside.arms("focal:gamma=3", "paper")
    assert [label for label, _, _ in real_model_beside.arms("rloo,risk_sensitive:beta=4", "paper")] == [
        "rloo", "risk_sensitive:beta=4"]


def _rows(method, values):
    """(seed, step) -> pass@1 as a measured table with the paired metrics (each metric the same value + a constant)."""
    return pd.DataFrame([{"method": method, "seed": seed, "step": step, "pass@1": v, "pass@2": v + 0.1,
                          "pass@8": v + 0.2, "pass@64": v + 0.3, "pass@1_hard": v / 2, "entropy": 1 - v,
                          "weight_distance": 2 * v} for (seed, step), v in values.items()])


def test_the_paired_difference_is_taken_seed_by_seed_with_a_t_interval():
    arm = _rows("rs", {(0, 12): 0.50, (1, 12): 0.60, (2, 12): 0.40, (0, 0): 0.1, (1, 0): 0.1, (2, 0): 0.1})
    # GRPO has a fourth seed the arm lacks: it is left out of the pair, not averaged into GRPO's side
    grpo = _rows("grpo", {(0, 12): 0.55, (1, 12): 0.70, (2, 12): 0.42, (3, 12): 0.99})
    out = real_model_beside.paired(arm, grpo, ["rs"]).set_index("metric")
    assert set(out.step) == {12} and (out.seeds == 3).all()
    diff = np.array([-0.05, -0.10, -0.02])
    half = stats.t.ppf(0.975, 2) * diff.std(ddof=1) / np.sqrt(3)
    assert out.loc["pass@1", "diff"] == pytest.approx(diff.mean())
    assert (out.loc["pass@1", "lo"], out.loc["pass@1", "hi"]) == pytest.approx((diff.mean() - half, diff.mean() + half))
    assert out.loc["pass@1", "grpo"] == pytest.approx(np.mean([0.55, 0.70, 0.42]))  # seed 3's 0.99 is not in it
    assert out.loc["entropy", "diff"] == pytest.approx(-diff.mean())
    assert out.loc["weight_distance", "diff"] == pytest.approx(2 * diff.mean())
    assert out.loc["pass@64", "diff"] == pytest.approx(diff.mean())  # the largest k measured is reported


def test_scoring_one_arm_keeps_the_other_arms_rows_only_where_they_share_its_base(tmp_path):
    path = tmp_path / "real_model_beside_measured.csv"
    rs = _rows("rs", {(0, 0): 0.1, (1, 0): 0.2, (0, 12): 0.5, (1, 12): 0.6})
    dr = _rows("dr", {(0, 0): 0.1, (1, 0): 0.2, (0, 12): 0.4, (1, 12): 0.7})
    assert real_model_beside.kept(path, rs).equals(rs)  # no file yet: what is scored now
    rs.to_csv(path, index=False)
    both = real_model_beside.kept(path, dr)
    assert sorted(set(both.method)) == ["dr", "rs"] and len(both) == 8
    assert both[both.method == "rs"]["pass@1"].tolist() == [0.1, 0.2, 0.5, 0.6]
    both.to_csv(path, index=False)
    # rescoring an arm replaces its rows, never duplicates them
    again = real_model_beside.kept(path, dr.assign(**{"pass@1": dr["pass@1"].where(dr.step == 0, 0.9)}))
    assert len(again) == 8 and (again[(again.method == "dr") & (again.step == 12)]["pass@1"] == 0.9).all()
    # another base under the kept arm: refused, not mixed
    other = _rows("dr", {(0, 0): 0.1, (1, 0): 0.25, (0, 12): 0.4, (1, 12): 0.7})
    rs.to_csv(path, index=False)
    with pytest.raises(ValueError, match="rs scored on another base"):
        real_model_beside.kept(path, other)


def test_the_pipeline_on_the_tiny_model_pairs_only_with_a_paper_run_on_the_same_base(tmp_path, capsys):
    out, figures = tmp_path / "out", tmp_path / "figures"
    base = ["--preset", "paper-quick", "--out", str(out), "--figures", str(figures), "--seeds", "2",
            "--advantages", "risk_sensitive:beta=2"]
    assert real_model_beside.main([*base, "--phase", "score"]) == 2  # nothing trained yet: scoring refuses
    assert real_model_beside.main([*base, "--phase", "train"]) == 0
    assert real_model_beside.main([*base, "--phase", "score"]) == 0  # no paper experiment there: nothing paired
    measured = pd.read_csv(figures / "real_model_beside_measured.csv")
    assert set(measured.method) == {"risk_sensitive:beta=2"} and set(measured.seed) == {0, 1}
    assert sorted(measured.step.unique()) == [0, 2, 4] and not (figures / "real_model_beside_paired.csv").exists()
    steps = pd.read_csv(figures / "real_model_beside_steps.csv")
    assert sorted(steps[steps.seed == 1].step) == [1, 2, 3, 4]
    # a paper experiment scored on the same base: here the same runs relabelled GRPO, so every difference is 0
    paper = figures / "real_model_paperquick_measured.csv"
    measured.assign(method="grpo").to_csv(paper, index=False)
    capsys.readouterr()
    assert real_model_beside.main([*base, "--phase", "score"]) == 0
    assert "difference from GRPO of the same seed" in capsys.readouterr().out
    pairs = pd.read_csv(figures / "real_model_beside_paired.csv")
    assert len(pairs) and (pairs["diff"] == 0).all() and (pairs.seeds == 2).all()
    # scored against another base: refused, nothing paired
    other = measured.assign(method="grpo")
    other.loc[other.step == 0, "pass@1"] += 0.01
    other.to_csv(paper, index=False)
    assert real_model_beside.main([*base, "--phase", "score"]) == 2
    assert "not the one" in capsys.readouterr().err
