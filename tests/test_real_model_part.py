"""One part of the graded task trained alone (experiments/real_model_part.py): the parts setting is checked and keyed,
the questions with a zero operand are found from their texts, the comparison with the mixture is taken at the matched
dose and step with a Welch interval, and on the tiny GPT-2 every training prompt comes from the chosen part."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model  # noqa: E402 - scripts of experiments/, importable once that folder is on sys.path
import real_model_beside  # noqa: E402
import real_model_longer  # noqa: E402
import real_model_part  # noqa: E402

pytestmark = pytest.mark.integration  # real_model imports the bridge's stack (transformers)


def test_the_parts_trained_are_checked_and_only_a_run_is_keyed_by_them():
    paper = real_model.PAPER
    assert paper.train_parts() == [0, 1, 2]
    assert dataclasses.replace(paper, parts="2,0").train_parts() == [0, 2]
    for bad in ("1,1", "3", "-1", "one"):
        with pytest.raises(ValueError, match="parts"):
            dataclasses.replace(paper, parts=bad)
    with pytest.raises(ValueError, match="graded task's parts"):
        dataclasses.replace(real_model.FULL, parts="0")
    alone = dataclasses.replace(paper, parts="1")
    arms = real_model.parse_advantages("grpo")
    spec, mixture_spec = real_model.run_specs(alone, [0], arms)[0], real_model.run_specs(paper, [0], arms)[0]
    assert spec["parts"] == [1] and "parts" not in mixture_spec
    assert real_model.unit_key(spec) != real_model.unit_key(mixture_spec)
    assert real_model._identity(alone) == real_model._identity(paper)  # the base's evaluation: one unit for both
    # the evaluation questions are every part's, in the same order, whatever is trained
    assert [p.prompt for p in real_model.tasks(alone, str)[1]] == [p.prompt for p in real_model.tasks(paper, str)[1]]


def test_operands_are_read_from_the_question_and_a_prompt_without_one_is_refused():
    assert real_model_part.operands("<user>What is 3 + 0 + 5? Answer with a number only.") == [3, 0, 5]
    assert real_model_part.operands("What is 12 - 4? Answer") == [12, 4]
    with pytest.raises(ValueError, match="no arithmetic question"):
        real_model_part.operands("What is the answer?")


def test_the_three_operand_questions_with_a_zero_operand_are_the_designs_seven():
    groups = real_model_part.question_groups(real_model_part.settings("paper", 1)).set_index("prompt")
    assert len(groups) == 48 and list(groups.part.unique()) == real_model.part_labels(real_model.PAPER)
    three = groups[groups.part == "1-digit a + b + c"]
    assert list(three.index) == list(range(16, 32))
    # the seven named in paper_figures/real_model/README.md ("Where the arms differ at large k")
    assert list(three[three.zero_operand].index) == [17, 18, 19, 20, 21, 24, 28]


def _questions(rates):
    """(method, seed, step) -> per-question pass rates (prompts 0..) as a questions table with n = 10."""
    return pd.DataFrame([{"method": m, "seed": seed, "step": step, "prompt": i, "correct": int(round(10 * p)),
                          "n": 10} for (m, seed, step), ps in rates.items() for i, p in enumerate(ps)])


def test_the_part_alone_is_compared_at_the_matched_dose_and_step_with_a_welch_interval():
    groups = pd.DataFrame({"prompt": [0, 1, 2, 3], "part": ["other", "hard", "hard", "hard"],
                           "zero_operand": [False, True, False, False]})
    alone = _questions({("grpo", 0, 2): [0, 1.0, 0.2, 0.4], ("grpo", 1, 2): [0, 0.8, 0.4, 0.6],
                        ("grpo", 2, 2): [0, 0.9, 0.1, 0.3], ("grpo", 0, 4): [1, 1.0, 0.5, 0.5],
                        ("grpo", 1, 4): [1, 1.0, 0.7, 0.5], ("grpo", 2, 4): [1, 1.0, 0.6, 0.6]})
    mixture = _questions({("grpo", s, 6): [1, 0.9, 0.1 * s, 0.0] for s in range(4)}
                         | {("grpo", s, 4): [1, 0.5, 0.0, 0.1 * s] for s in range(4)}
                         | {("focal", 0, 6): [1, 1, 1, 1]})  # an arm the part alone lacks: left out
    out = real_model_part.compare(alone, mixture, groups, "hard", 3).set_index(["match", "step", "subset"])
    assert set(out.method) == {"grpo"}
    # step 2 at the matched dose is the mixture's step 6; its matched step (2) the mixture lacks; step 4 at the matched
    # dose would be 12, which the mixture lacks, and at the matched step is its 4
    assert sorted(set(out.index.droplevel("subset"))) == [("dose", 2), ("step", 4)]
    row = out.loc[("dose", 2, "no zero operand")]
    assert row.mixture_step == 6 and row.questions == 2 and row.seeds == 3 and row.mixture_seeds == 4
    a, b = np.array([0.3, 0.5, 0.2]), np.array([0.0, 0.05, 0.1, 0.15])  # each seed's mean over prompts 2 and 3
    assert row.part_alone == pytest.approx(a.mean()) and row.mixture == pytest.approx(b.mean())
    welch = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (row.lo, row.hi) == pytest.approx((welch.low, welch.high))
    assert out.loc[("dose", 2, "a zero operand")].part_alone == pytest.approx(0.9)
    # the whole part: each seed s at step 4 has rates 0.5, 0, 0.1 s on it
    assert out.loc[("step", 4, "all")].mixture == pytest.approx(np.mean([(0.5 + 0.1 * s) / 3 for s in range(4)]))


def test_an_arm_is_set_against_grpo_within_each_seed_the_seeds_both_hold():
    """real_model_beside.paired with the metrics the part's score phase names (one table holding both arms)."""
    rows = [{"method": m, "seed": seed, "step": step, "x": 0.1 * seed + step + (0.2 + 0.05 * seed if m == "focal" else 0)}
            for m in ("grpo", "focal") for seed in range(3) for step in (0, 16, 96)]
    rows += [{"method": "focal", "seed": 7, "step": 96, "x": 50.0}]  # no GRPO run of seed 7: not paired
    table = pd.DataFrame(rows)
    out = real_model_beside.paired(table, table, ["focal"], ["x"]).set_index("step")
    assert list(out.index) == [16, 96] and (out.seeds == 3).all() and set(out.method) == {"focal"}
    diffs = np.array([0.2, 0.25, 0.3])
    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / np.sqrt(3)
    assert out.loc[96, "diff"] == pytest.approx(0.25) and out.loc[96, "hi"] - out.loc[96, "lo"] == pytest.approx(2 * half)
    assert out.loc[96, "grpo"] == pytest.approx(96.1)
    assert real_model_beside.paired(table, table, [], ["x"]).empty  # GRPO alone: nothing to set against it


def test_on_the_tiny_model_every_training_prompt_is_from_the_part_trained(tmp_path, capsys):
    out, figures = tmp_path / "out", tmp_path / "figures"
    base = ["--preset", "paper-quick", "--out", str(out), "--figures", str(figures), "--seeds", "2"]
    assert real_model_part.main([*base, "--part", "3"]) == 2
    assert "--part must lie in 0..2" in capsys.readouterr().err
    assert real_model_part.main([*base, "--phase", "all"]) == 0
    assert "comparison with the mixture is not made" in capsys.readouterr().out  # no mixture's runs beside them
    for seed in (0, 1):
        prompts = pd.read_csv(out / "paper-quick" / "rollouts" / f"grpo_seed{seed}.csv").prompt
        assert all(len(real_model_part.operands(p)) == 3 for p in prompts)  # a + b + c only
    name = real_model_part.settings("paper-quick", 1).file
    measured = pd.read_csv(figures / name("measured.csv"))
    assert sorted(measured.step.unique()) == [0, 2, 4, 8] and sorted(measured.seed.unique()) == [0, 1]
    parts = pd.read_csv(figures / name("parts.csv"))
    assert list(parts[parts.method == "base"].part) == real_model.part_labels(real_model.PAPER_QUICK)
    # on the trained part's questions alone (one a part in this preset: prompt 1), the base at step 0
    trained = pd.read_csv(figures / name("trained_part_measured.csv")).set_index(["seed", "step"])
    per_question = pd.read_csv(figures / name("questions.csv"))
    own = per_question[per_question.prompt == 1].set_index(["seed", "step"])
    np.testing.assert_allclose(trained.loc[own.index, "pass@1"], own.correct / own.n, rtol=0, atol=1e-12)
    assert sorted(trained.index.get_level_values("step").unique()) == [0, 2, 4, 8]
    assert not (figures / name("paired.csv")).exists()  # one arm: nothing to set against GRPO
    # beside the mixture's runs of the same preset, the comparison is written
    _, table = real_model.arms_runs(real_model_longer.PRESETS["paper-quick"], range(2),
                                    real_model.parse_advantages("grpo"), tmp_path / "mixture", only_stored=False,
                                    desc="mixture")
    real_model_longer.questions(table).to_csv(figures / "real_model_longer_questions.csv", index=False)
    assert real_model_part.main([*base, "--phase", "score"]) == 0
    assert (figures / name("compare.png")).stat().st_size > 0  # drawn beside the comparison
    both = pd.read_csv(figures / name("compare.csv"))
    assert set(zip(both.match, both.step, both.mixture_step)) == {("dose", 2, 6), ("step", 4, 4), ("step", 8, 8)}
