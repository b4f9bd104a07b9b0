"""The real-model rung's paper experiments (experiments/real_model.py --preset paper): the sampler's top-token margin,
the evaluation's token sums and weight geometry, the choice of the best static and FADE setting on the tuning seeds,
the verdicts on hand-made runs whose effects are known, and the whole pipeline on the tiny GPT-2 (--preset
paper-quick). SmolLM2 itself runs in tests/test_pretrained.py's integration test."""

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model  # noqa: E402 - a script of experiments/, importable once that folder is on sys.path

pytestmark = pytest.mark.integration  # the bridge's stack (transformers)


def test_top_margin_is_the_gap_between_the_two_most_likely_tokens():
    from fadesim.bridge.backends import top_margin

    logp = torch.log_softmax(torch.tensor([[2.0, 0.5, 1.0, -3.0], [0.0, 0.0, 0.0, 0.0]]), dim=-1)
    assert torch.allclose(top_margin(logp), torch.tensor([1.0, 0.0]), atol=1e-6)
    forbidden = logp.clone()
    forbidden[0, 0] = float("-inf")  # a masked token (eos forbidden) is never the top one
    assert torch.allclose(top_margin(forbidden)[0], torch.tensor(0.5), atol=1e-6)


def test_the_sampler_records_each_positions_margin_and_the_evaluation_sums_it_over_tokens():
    s = real_model.PAPER_QUICK
    model, tok, template = real_model.load_model(s)
    model.eval()  # no dropout: the sampler's distribution is the model's
    _, problems = real_model.tasks(s, template)
    from fadesim.bridge.backends import HFBackend, top_margin

    ro = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True).generate(
        [problems[0].prompt], n=4, seed=3)
    assert ro.sampler_margin is not None and ro.sampler_margin.shape == ro.response_mask.shape
    # the first position's distribution is the prompt's next-token distribution: its margin from the model itself
    ids = torch.tensor([tok.encode(problems[0].prompt)])
    with torch.no_grad():
        first = torch.log_softmax(model(ids).logits[0, -1].float(), dim=-1)
    assert torch.allclose(ro.sampler_margin[:, 0], top_margin(first).expand(4), atol=1e-4)
    counts = real_model.evaluate(model, tok, problems, s, seed=0)
    assert len(counts) == len(problems) == 3 * s.eval_prompts  # one row per evaluation question, three parts
    assert (counts.tokens >= counts.n).all() and (counts.margin_sum >= 0).all() and (counts.entropy_sum > 0).all()
    assert np.allclose(counts.tokens / counts.n, counts.length)


def test_weight_geometry_of_a_hand_made_move():
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[3.0, 4.0]]))
    initial = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[6.0, 8.0]]))
    g = real_model.weight_geometry(model, initial)
    assert g == pytest.approx({"weight_norm": 10.0, "weight_norm_change": 5.0, "weight_distance": 5.0})


def test_steps_to_a_target_interpolates_between_evaluations_and_is_inf_where_never_reached():
    run = pd.DataFrame({"step": [0, 16, 32], "pass@1": [0.1, 0.3, 0.7]})
    assert real_model._steps_to(run, 0.5) == pytest.approx(24.0)
    assert real_model._steps_to(run, 0.3) == 16.0
    assert real_model._steps_to(run, 0.05) == 0.0
    assert math.isinf(real_model._steps_to(run, 0.8))


def _eval_rows(method, seed, rates):
    """A stored run's evaluation rows: one question per rate, at steps 2 and 4."""
    return [{"kind": "eval", "method": method, "seed": seed, "step": step, "prompt": i, "correct": int(r * 8), "n": 8}
            for step, rs in zip((2, 4), rates) for i, r in enumerate(rs)]


def test_the_best_static_and_fade_setting_are_chosen_on_the_tuning_seeds_alone():
    s = real_model.PAPER_QUICK
    rows = (_eval_rows("grpo", 0, [[0.25, 0.5], [0.5, 0.5]]) + _eval_rows("focal:gamma=2", 0, [[0.5, 0.5], [0.5, 0.75]])
            + _eval_rows("sign_scaled:balance=1", 0, [[0.0, 0.0], [0.0, 0.0]])
            + _eval_rows("sign_scaled:balance=-1", 0, [[0.0, 0.0], [0.0, 0.0]])
            + _eval_rows("fade", 0, [[0.25, 0.25], [0.25, 0.25]]) + _eval_rows("fade:gamma_explore=2", 0, [[0.5, 0.5], [0.5, 0.5]])
            # a held-out seed where grpo is far better: it must not sway the choice
            + _eval_rows("grpo", 1, [[1.0, 1.0], [1.0, 1.0]]) + _eval_rows("fade", 1, [[1.0, 1.0], [1.0, 1.0]]))
    table = pd.DataFrame(rows)
    assert real_model.learning_area(table, "focal:gamma=2", [0]) == pytest.approx((0.5 + 0.625) / 2)
    assert real_model.paper_choice(s, table) == ("focal:gamma=2", "fade:gamma_explore=2")
    with pytest.raises(ValueError, match="no evaluation of 'psr'"):
        real_model.learning_area(table, "psr", [0])


def test_the_paper_settings_are_checked():
    base = dict(experiment="paper", advantages="grpo,sign_scaled:balance=1,focal:gamma=2", fade_arms="fade",
                eval_steps="1,2", seeds=2, tune_seeds=1)
    real_model.Settings(**base)
    with pytest.raises(ValueError, match="1 <= tune_seeds < seeds"):
        real_model.Settings(**{**base, "tune_seeds": 2})
    with pytest.raises(ValueError, match="fade_arms must list one or more fade entries"):
        real_model.Settings(**{**base, "fade_arms": "grpo"})
    with pytest.raises(ValueError, match="sign_scaled:balance=b"):
        real_model.Settings(**{**base, "advantages": "grpo,focal:gamma=2"})
    with pytest.raises(ValueError, match="eval_steps must lie in 1 .. steps"):
        real_model.Settings(**{**base, "eval_steps": "0,2"})
    with pytest.raises(ValueError, match="task must be one of"):
        real_model.Settings(task="words")
    assert real_model.sign_axis_arms(real_model.PAPER) == {"sign_scaled:balance=-1": -1.0,
                                                          "sign_scaled:balance=-0.5": -0.5, "grpo": 0.0,
                                                          "sign_scaled:balance=0.5": 0.5, "sign_scaled:balance=1": 1.0}
    assert real_model.difficulty_arms(real_model.PAPER) == {"grpo": 0.0, "focal:gamma=1": 1.0, "focal:gamma=3": 3.0}
    assert len(real_model.parse_advantages(real_model.PAPER.fade_arms)) == 7  # FADE's budget: one per static arm
    assert len(real_model.parse_advantages(real_model.PAPER.advantages)) == 7


def test_the_held_out_runs_go_claim_arms_first_then_difficulty_then_the_third_seed_then_the_other_balances():
    s = real_model.PAPER
    fade = "fade:lam_neg_explore=1:lam_neg_exploit=0.25"
    keep = {label for label, _, _ in real_model.parse_advantages(s.advantages)} | {fade}
    specs = real_model.run_specs(s, range(1, 4), [arm for arm in s.arms() if arm[0] in keep])
    order = [(spec["seed"], spec["method"]) for spec in real_model.held_out_order(s, specs, "grpo", fade)]
    claims = ["grpo", "sign_scaled:balance=-1", "sign_scaled:balance=1", fade]
    difficulty = ["focal:gamma=1", "focal:gamma=3"]
    assert sorted(order) == sorted((spec["seed"], spec["method"]) for spec in specs)  # the same runs, reordered
    assert order == ([(1, m) for m in claims] + [(2, m) for m in claims] + [(1, m) for m in difficulty]
                     + [(2, m) for m in difficulty] + [(3, m) for m in claims + difficulty]
                     + [(sd, m) for sd in (1, 2, 3) for m in ("sign_scaled:balance=-0.5", "sign_scaled:balance=0.5")])


def test_the_graded_task_has_three_parts_and_enough_distinct_training_questions():
    s = real_model.PAPER_QUICK
    _, tok, template = real_model.load_model(s)
    train, problems = real_model.tasks(dataclass_replace(s, eval_prompts=16), template)
    assert len(problems) == 48 and len({p.prompt for p in problems}) == 48
    seen = {p.prompt for p in train.sample(np.random.default_rng(0), 3000)}
    assert len(seen) >= 300 and not seen & {p.prompt for p in problems}  # training never sees an evaluation question
    answers = [int(p.answer) for p in problems]
    assert max(answers[:16]) <= 18 and max(answers[16:32]) <= 27 and min(answers[32:]) >= 20


def dataclass_replace(s, **kw):
    import dataclasses

    return dataclasses.replace(s, **kw)


def _synthetic_paper_run(s):
    """Hand-made evaluations and training steps for PAPER_QUICK's arms: b = +1 has 0.2 nats less entropy than b = 0,
    b = -1 moves its weights 0.5 more, focal has harder batches and a lower ESS; with seed noise."""
    rng = np.random.default_rng(0)
    rows, steps = [], []
    for seed in range(s.seeds):
        for arm, b in (("grpo", 0.0), ("sign_scaled:balance=-1", -1.0), ("sign_scaled:balance=1", 1.0),
                       ("focal:gamma=2", 0.0), ("fade", 0.0), ("fade:gamma_explore=2", 0.0)):
            for step in (0, 2, 4):
                p1 = 0.2 + 0.15 * step + 0.01 * rng.normal()
                rows.append({"method": arm, "seed": seed, "step": step, **{f"pass@{k}": min(1.0, p1 + 0.05 * i)
                                                                           for i, k in enumerate(s.ks())},
                             "pass@1_hard": p1 / 2, "entropy": 1.0 - 0.1 * step * (1 + b) / 2 + 0.01 * rng.normal(),
                             "margin": 1.0, "length": 3.0, "margin_change": 0.0,
                             "weight_norm_change": step * (0.5 if b < 0 else 0.1) + 0.01 * rng.normal(),
                             "weight_distance": step * (0.5 if b < 0 else 0.1) + 0.01 * rng.normal()})
            for step in (1, 2, 3, 4):
                hard = arm.startswith("focal")
                steps.append({"method": arm, "seed": seed, "step": step, "hardness": 0.7 if hard else 0.5,
                              "ess": 1.0 if hard else 1.6})
    return pd.DataFrame(rows), pd.DataFrame(steps)


def test_verdicts_on_hand_made_runs_find_the_planted_effects():
    s = real_model.PAPER_QUICK
    evals, steps = _synthetic_paper_run(s)
    # a prediction grid that says the same (entropy and logit norm) as the planted run, GRPO's tuning path rising
    labels = [label for label, _, _ in s.arms()]
    grid = []
    for step in range(0, 41, 10):
        grid.append({"label": "grpo", "seeds": "tune", "step": step, "k": 1, "pass_at_k": 0.2 + 0.02 * step,
                     "ci95": 0.0, "entropy": 1.0, "logit_norm": 1.0, "pass@1_hard": 0.1})
        for label in labels:
            b = {"sign_scaled:balance=-1": -1.0, "sign_scaled:balance=1": 1.0}.get(label, 0.0)
            for k in s.ks():
                grid.append({"label": label, "seeds": "held", "step": step, "k": k, "pass_at_k": 0.2 + 0.02 * step,
                             "ci95": 0.0, "entropy": 1.0 - 0.01 * step * (1 + b) / 2,
                             "logit_norm": 1.0 + step * (0.05 if b < 0 else 0.01),
                             "pass@1_hard": 0.1 + (0.01 * step if label.startswith("focal") else 0.0)})
    grid = pd.DataFrame(grid)
    theory = pd.DataFrame({"arm": labels, "hardness": [0.5, 0.5, 0.5, 0.7, np.nan, np.nan],
                           "ess_fraction": [0.8, 0.8, 0.8, 0.6, np.nan, np.nan]})
    records = pd.DataFrame(real_model.paper_verdicts(s, evals, steps, grid, theory, ("grpo", "fade"), n_hard=1))
    final = records[(records.phase == "final") & (records.matched == "step")].set_index(["claim", "metric"])
    entropy = final.loc[("positive mass collapses entropy", "entropy")]
    assert entropy.ok and entropy.effect == pytest.approx(0.2, abs=0.03) and entropy.predicted_ok
    geometry = final.loc[("negative mass damages geometry", "weight_norm_change")]
    assert geometry.ok and geometry.effect == pytest.approx(1.6, abs=0.05) and geometry.predicted_ok
    assert not final.loc[("negative mass damages geometry", "margin_change")].ok  # nothing planted there
    assert final.loc[("hard focus moves mass to hard prompts", "hardness")].ok
    assert final.loc[("hard focus costs effective sample size", "ess_fraction")].effect == pytest.approx(0.3)
    assert final.loc[("hard focus costs effective sample size", "ess_fraction")].predicted == pytest.approx(0.2)
    # the matched-pass@1 reading exists for the entropy claim, read where each run reaches the same pass@1
    matched = records[(records.matched == "pass@1") & (records.claim == "positive mass collapses entropy")]
    assert len(matched) == 2 and (matched.n == s.seeds).all()  # every seed reaches the common target
    assert set(records.claim) >= {"FADE reaches the best static's peak earlier", "FADE ends above the best static"}


@pytest.mark.heavy
def test_the_paper_pipeline_end_to_end_on_the_tiny_model(tmp_path, capsys):
    out = tmp_path / "out"
    assert real_model.main(["--preset", "paper-quick", "--phase", "train", "--out", str(out)]) == 2  # no prediction
    assert real_model.main(["--preset", "paper-quick", "--phase", "predict", "--out", str(out)]) == 0
    figures = out / "paper-quick_paperquick" / "figures"
    grid = pd.read_csv(figures / "real_model_paperquick_prediction.csv")
    assert {"logit_norm", "pass@1_hard"} <= set(grid.columns) and set(grid.label) == {
        label for label, _, _ in real_model.PAPER_QUICK.arms()}
    theory = pd.read_csv(figures / "real_model_paperquick_theory.csv").set_index("arm")
    assert set(theory.entropy_drift_sign.dropna()) <= {-1, 0, 1} and np.isnan(theory.loc["fade", "hardness"])
    assert real_model.main(["--preset", "paper-quick", "--phase", "train", "--out", str(out)]) == 0
    capsys.readouterr()
    assert real_model.main(["--preset", "paper-quick", "--phase", "score", "--out", str(out)]) == 0  # (--phase all
    text = capsys.readouterr().out  # would predict again: tests/test_real_model.py runs the three phases in one call
    lines = [line for line in text.splitlines() if line.startswith("[tiny rung")]
    claims = {line.split("] ")[1].split(" (")[0] for line in lines}
    assert claims == {"positive mass collapses entropy", "negative mass damages geometry",
                      "hard focus moves mass to hard prompts", "hard focus costs effective sample size",
                      "hard focus sharpens the signal on hard prompts", "FADE reaches the best static's peak earlier",
                      "FADE keeps more coverage than the best static", "FADE ends above the best static"}
    assert all("matched step" in line or "matched pass@1" in line for line in lines)
    # PREDICTED and NOT PREDICTED are told apart (a verdict line says exactly one of them, or that there was none)
    for line in lines:
        said = line.rsplit("(", 1)[-1]
        assert said.startswith(("PREDICTED:", "NOT PREDICTED:", "no prediction", "nothing measured to predict")), line
    measured = pd.read_csv(figures / "real_model_paperquick_measured.csv")
    # held-out seeds run every static and only the chosen FADE setting
    held = measured[measured.seed >= 1]
    assert set(held.method) & {"fade", "fade:gamma_explore=2"} and len(set(held.method) & {"fade", "fade:gamma_explore=2"}) == 1
    assert (measured[measured.step == 0].groupby("method")["pass@1"].nunique() == 1).all()  # step 0: the base
    assert (figures / "real_model_paperquick_curves.png").is_file() and (figures / "real_model_paperquick_verdicts.md").is_file()
    _restoring_the_recorded_runs_scores_them_the_same(tmp_path, out, capsys)
    # an unfinished sweep: --phase score refuses, naming the missing run; --phase interim scores the rest, marked
    s = real_model.PAPER_QUICK
    store = real_model.ResultStore(out / "paper-quick_paperquick")
    gone = next(spec for spec in real_model.run_specs(s, [2], s.arms()) if spec["method"] == "grpo")
    store._path(gone).unlink()
    capsys.readouterr()
    assert real_model.main(["--preset", "paper-quick", "--phase", "score", "--out", str(out)]) == 2
    assert "missing: grpo seed 2" in capsys.readouterr().err
    assert real_model.main(["--preset", "paper-quick", "--phase", "interim", "--out", str(out)]) == 0
    assert ("\nINTERIM: 15 of the design's 16 runs stored; missing (the sweep resumes): grpo seed 2\n"
            in capsys.readouterr().out)
    assert (figures / "real_model_paperquick_verdicts.md").read_text().startswith("INTERIM: 15 of the design's 16")
    verdicts = pd.read_csv(figures / "real_model_paperquick_verdicts.csv")
    assert set(verdicts.runs_stored) == {15} and set(verdicts.runs_designed) == {16}
    assert verdicts[verdicts.claim == "FADE ends above the best static"].n.max() == 1  # grpo is the best static here
    with pytest.raises(ValueError, match="--phase interim scores the paper experiment"):
        real_model.Settings(phase="interim")


def _restoring_the_recorded_runs_scores_them_the_same(tmp_path, out, capsys):
    """--from-committed on a copy of the finished sweep whose store lost the base and most runs: the lost runs come
    from the written steps and measured files, the base is measured again, and every written result is the same
    byte for byte; incomplete or inconsistent records are refused, naming the problem."""
    import shutil

    s = real_model.PAPER_QUICK
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    root, figures = copy / "paper-quick_paperquick", copy / "paper-quick_paperquick" / "figures"
    names = ["verdicts.csv", "verdicts.md", "score.csv", "clock.csv", "measured.csv", "steps.csv"]
    before = {name: (figures / s.file(name)).read_bytes() for name in names}
    store = real_model.ResultStore(root)
    specs = real_model.run_specs(s, range(s.seeds), s.arms())
    kept = next(spec for spec in specs if spec["seed"] == 1 and spec["method"] == "grpo")
    lost = [spec for spec in specs if store.has(spec) and spec != kept]
    assert len(lost) == 15
    for spec in lost:
        store._path(spec).unlink()
    base_spec = {"unit": "eval", "method": real_model.BASE, "seed": 0, "step": 0, "settings": real_model._identity(s)}
    store._path(base_spec).unlink()
    score = ["--preset", "paper-quick", "--phase", "score", "--out", str(copy), "--no-figures"]
    for png in figures.glob("*.png"):
        png.unlink()
    capsys.readouterr()
    assert real_model.main(score) == 2  # without --from-committed a lost run is missing
    assert real_model.main([*score, "--from-committed"]) == 0
    text = capsys.readouterr()
    assert "15 of the runs restored from the committed real_model_paperquick_steps.csv" in text.out
    assert "is not committed as it is" in text.err  # (a temporary folder: not in git)
    assert store.has(base_spec) and not any(store.has(spec) for spec in lost)  # measured again; nothing retrained
    for name in names:
        assert (figures / s.file(name)).read_bytes() == before[name], name
    assert not list(figures.glob("*.png"))  # --no-figures: every result written, no figure drawn
    # a recorded run with a step missing, a run scored against another base, a base curve that is not the calibrated
    steps = pd.read_csv(figures / s.file("steps.csv"))
    steps.drop(index=steps.index[(steps.method == "grpo") & (steps.seed == 0) & (steps.step == 2)]).to_csv(
        figures / s.file("steps.csv"), index=False)
    with pytest.raises(ValueError, match=r"holds steps \[1, 3, 4\] of grpo seed 0, not 1..4"):
        real_model.main([*score, "--from-committed"])
    (figures / s.file("steps.csv")).write_bytes(before["steps.csv"])
    measured = pd.read_csv(figures / s.file("measured.csv"))
    measured.loc[(measured.method == "grpo") & (measured.seed == 0) & (measured.step == 0), "entropy"] += 0.01
    measured.to_csv(figures / s.file("measured.csv"), index=False)
    with pytest.raises(ValueError, match="committed grpo seed 0 was scored against another base"):
        real_model.main([*score, "--from-committed"])
    (figures / s.file("measured.csv")).write_bytes(before["measured.csv"])
    curve = pd.read_csv(figures / s.file("base.csv"))
    curve.loc[0, "pass_at_k"] += 0.01
    curve.to_csv(figures / s.file("base.csv"), index=False)
    with pytest.raises(ValueError, match="is not the base curve the prediction was calibrated to"):
        real_model.main([*score, "--from-committed"])
    with pytest.raises(ValueError, match="--from-committed restores the paper experiment's runs"):
        real_model.Settings(from_committed=True)


def test_a_clock_calibrated_at_the_first_checkpoint_reads_the_later_ones_at_its_multiples():
    """The clock on a hand-made two-length run: the grid's GRPO rises 0.01 a simulator step from 0.2; measured GRPO
    pass@1 0.30 at step 2 calibrates 5 simulator steps a training step (10 / 2), so step 4 (2x) is read at grid step 20
    (pass@1 0.40 there), whatever was measured at step 4 (0.35, which a fresh match would put at grid step 15)."""
    s = real_model.PAPER_QUICK
    arms = ["grpo"]
    grid = []
    for step in range(0, 41, 10):
        value = 0.2 + 0.01 * step
        grid.append({"label": "grpo", "seeds": "tune", "step": step, "k": 1, "pass_at_k": value, "ci95": 0.0,
                     "entropy": 1.0})
        for k in s.ks():
            grid.append({"label": "grpo", "seeds": "held", "step": step, "k": k, "pass_at_k": min(1.0, value * k),
                         "ci95": 0.0, "entropy": 1.0})
    grid = pd.DataFrame(grid)
    evals = pd.DataFrame([{"method": "grpo", "seed": sd, "step": step, **{f"pass@{k}": min(1.0, p * k) for k in s.ks()}}
                          for sd in range(2) for step, p in ((0, 0.2), (2, 0.3), (4, 0.35))])
    clock = real_model.paper_clock(s, evals, grid, arms)
    assert list(clock.multiple) == [1.0, 2.0]
    np.testing.assert_allclose(clock.clock_grid_step, [10.0, 20.0])
    np.testing.assert_allclose(clock.matched_grid_step, [10.0, 15.0])
    np.testing.assert_allclose(clock.grpo_clock, [0.3, 0.4])
    np.testing.assert_allclose(clock.grpo_measured, [0.3, 0.35])
    assert clock.abs_error.iloc[0] == pytest.approx(0.0, abs=1e-12) and clock.abs_error.iloc[1] > 0


def test_the_verdicts_interval_is_student_t_over_the_seeds_and_covers_95_percent():
    from fadesim.lab.stats import ci95_t

    mean, half = ci95_t([0.0, 1.0])
    assert mean == 0.5 and half == pytest.approx(12.7062 * (0.5 ** 0.5) / 2 ** 0.5, rel=1e-4)  # t(0.975, 1) = 12.706
    assert ci95_t([2.0]) == (2.0, float("inf"))
    # coverage by simulation: 3 normal seeds, 4000 draws; 0.95 within 4 standard errors (0.0138); the normal
    # approximation's 1.96 would cover about 0.80 at n = 3
    draws = np.random.default_rng(0).normal(size=(4000, 3))
    covered = np.mean([abs(m) <= h for m, h in map(ci95_t, draws)])
    assert abs(covered - 0.95) < 4 * (0.95 * 0.05 / 4000) ** 0.5, covered
