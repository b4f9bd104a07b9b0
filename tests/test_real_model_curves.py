"""The measured SmolLM2 runs as literature-protocol settings (experiments/real_model_curves.py): the committed files are
a fresh export of the committed measurements, every value is the mean over the measured seeds (to float rounding: the order of a sum), and the protocol loads
them."""

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import real_model_curves  # noqa: E402 - a script of experiments/, importable once that folder is on sys.path

from fadesim.lab.literature import load_curves, load_methods, load_training  # noqa: E402

pytestmark = pytest.mark.integration  # real_model imports the bridge's stack (torch, transformers)


def test_the_committed_export_is_a_fresh_export_of_the_measured_runs(tmp_path):
    assert real_model_curves.main(["--out", str(tmp_path)]) == 0
    for name in ("smollm2_curves.csv", "smollm2_methods.csv", "smollm2_training.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(real_model_curves.FOLDER / name))
    curves = load_curves(tmp_path / "smollm2_curves.csv")
    methods = load_methods(tmp_path / "smollm2_methods.csv")
    # every design's batch, as run: 8 prompts x 8 rollouts a step (real_model.FULL and PAPER)
    assert load_training(tmp_path / "smollm2_training.csv") == {setting: 64 for setting in curves.setting.unique()}
    assert curves.setting.nunique() == 3 and "GRPO" in methods
    measured = pd.read_csv(real_model_curves.FOLDER / "real_model_paper_measured.csv")
    paper = curves[curves.setting == "SmolLM2-135M / paper experiment, step 48"].set_index(["method", "k"]).pass_at_k
    for label, method in (("grpo", "GRPO"), ("sign_scaled:balance=-1", "sign_scaled:balance=-1@48"),
                          (real_model_curves.PAPER_FADE, f"{real_model_curves.PAPER_FADE}@48")):
        rows = measured[(measured.method == label) & (measured.step == 48)]
        assert len(rows) >= 3
        for k in (1, 8, 64):
            assert paper[(method, k)] == pytest.approx(rows[f"pass@{k}"].mean(), rel=1e-12)  # summation order
    assert paper[("base", 64)] == measured[(measured.step == 0)]["pass@64"].iloc[0]
    first = curves[curves.setting == "SmolLM2-135M / sums (issue 27), step 24"].set_index(["method", "k"]).pass_at_k
    runs = pd.read_csv(real_model_curves.FOLDER / "real_model_measured.csv")
    assert first[("nsr@24", 4)] == pytest.approx(
        runs[(runs.method == "nsr") & (runs.step == 24) & (runs.k == 4)].pass_at_k.mean(), rel=1e-12)
    assert set(methods["psr@24"].params) == set() and methods["psr@24"].advantage == "psr"


def test_the_clock_export_reads_every_checkpoint_at_its_multiple(tmp_path):
    """--clock: every checkpoint of each design, the first at 1x (GRPO there is the reference) and the later ones at
    their multiple of it; the committed files are a fresh export."""
    assert real_model_curves.main(["--out", str(tmp_path), "--clock"]) == 0
    for name in ("smollm2_clock_curves.csv", "smollm2_clock_methods.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(real_model_curves.FOLDER / name))
    methods = load_methods(tmp_path / "smollm2_clock_methods.csv")
    assert methods["GRPO"].steps_scale == 1 and methods["grpo@24"].steps_scale == 2
    assert methods["grpo@48"].steps_scale == 4 and methods["sign_scaled:balance=1@36"].steps_scale == 3
    curves = load_curves(tmp_path / "smollm2_clock_curves.csv")
    paper = curves[curves.setting == "SmolLM2-135M / paper experiment, steps 12-48"]
    measured = pd.read_csv(real_model_curves.FOLDER / "real_model_paper_measured.csv")
    for method, step in (("GRPO", 12), ("grpo@36", 36)):
        value = paper[(paper.method == method) & (paper.k == 1)].pass_at_k.item()
        rows = measured[(measured.method == "grpo") & (measured.step == step)]["pass@1"]
        assert value == pytest.approx(rows.mean(), rel=1e-12)


def test_the_beside_export_adds_the_arms_measured_beside_the_paper_experiment(tmp_path):
    """--beside: the paper setting alone, its arms and the arms measured beside it under its settings and seeds
    (experiments/real_model_beside.py), each the mean over its seeds at step 48, on the paper's own base."""
    assert real_model_curves.main(["--out", str(tmp_path), "--beside"]) == 0
    for name in ("smollm2_beside_curves.csv", "smollm2_beside_methods.csv", "smollm2_beside_training.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(real_model_curves.FOLDER / name))
    curves = load_curves(tmp_path / "smollm2_beside_curves.csv")
    methods = load_methods(tmp_path / "smollm2_beside_methods.csv")
    assert list(curves.setting.unique()) == ["SmolLM2-135M / paper experiment, step 48"]
    assert load_training(tmp_path / "smollm2_beside_training.csv") == {curves.setting.iloc[0]: 64}
    beside = pd.read_csv(real_model_curves.FOLDER / "real_model_beside_measured.csv")
    paper = pd.read_csv(real_model_curves.FOLDER / "real_model_paper_measured.csv")
    table = curves.set_index(["method", "k"]).pass_at_k
    for label in beside.method.unique():
        rows = beside[(beside.method == label) & (beside.step == 48)]
        assert len(rows) == 4 and methods[f"{label}@48"].steps_scale == 1
        for k in (1, 8, 64):
            assert table[(f"{label}@48", k)] == pytest.approx(rows[f"pass@{k}"].mean(), rel=1e-12)
    assert methods["risk_sensitive:beta=2@48"].advantage == "risk_sensitive"
    assert methods["risk_sensitive:beta=2@48"].params == {"beta": 2}
    # every paper arm is there as in the plain export, and the base is the paper experiment's
    plain = load_methods(real_model_curves.FOLDER / "smollm2_methods.csv")
    assert {m for m in plain if m.endswith("@48") or m == "GRPO"} <= set(methods)
    assert table[("base", 64)] == paper[paper.step == 0]["pass@64"].iloc[0]


def _on_another_base(folder, name, column):
    """The paper experiment's measured file and ``name`` copied into ``folder``, ``name``'s base moved by 0.01 in
    ``column``."""
    for part in ("real_model_paper_measured.csv", name):
        (folder / part).write_bytes((real_model_curves.FOLDER / part).read_bytes())
    runs = pd.read_csv(folder / name)
    runs.loc[runs.step == 0, column] += 0.01
    runs.to_csv(folder / name, index=False)


def test_the_beside_export_refuses_arms_scored_on_another_base(tmp_path):
    _on_another_base(tmp_path, "real_model_beside_measured.csv", "pass@4")
    with pytest.raises(ValueError, match="real_model_beside_measured.csv was scored against another base"):
        real_model_curves.export(tmp_path, beside=True)


def test_the_longer_export_adds_the_arms_trained_past_the_paper_experiments_length(tmp_path):
    """--longer: the paper setting alone at every checkpoint, the arms trained past its length at steps 72 and 96 read
    at 6x and 8x the first checkpoint (each the mean over the paper experiment's seeds there: a run on a further seed
    moves nothing), on the paper's own base; the committed files are a fresh export; another base, or longer without
    the clock or with beside, is refused."""
    assert real_model_curves.main(["--out", str(tmp_path), "--longer"]) == 0
    for name in ("smollm2_longer_clock_curves.csv", "smollm2_longer_clock_methods.csv",
                 "smollm2_longer_clock_training.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(real_model_curves.FOLDER / name))
    curves = load_curves(tmp_path / "smollm2_longer_clock_curves.csv")
    methods = load_methods(tmp_path / "smollm2_longer_clock_methods.csv")
    assert list(curves.setting.unique()) == ["SmolLM2-135M / paper experiment, steps 12-96"]
    longer = pd.read_csv(real_model_curves.FOLDER / "real_model_longer_measured.csv")
    table = curves.set_index(["method", "k"]).pass_at_k
    for label in longer.method.unique():
        for step, scale in ((72, 6), (96, 8)):
            rows = longer[(longer.method == label) & (longer.step == step) & (longer.seed < real_model_curves.PAPER.seeds)]
            assert len(rows) == 4 and methods[f"{label}@{step}"].steps_scale == scale
            assert table[(f"{label}@{step}", 1)] == pytest.approx(rows["pass@1"].mean(), rel=1e-12)
    clock = load_curves(real_model_curves.FOLDER / "smollm2_clock_curves.csv")  # the paper arms at steps 12-48
    paper = clock[clock.setting == "SmolLM2-135M / paper experiment, steps 12-48"].set_index(["method", "k"]).pass_at_k
    assert set(paper.index.get_level_values("method")) <= set(table.index.get_level_values("method"))
    assert (table.loc[paper.index] == paper).all()
    assert methods["grpo@48"].steps_scale == 4
    folder = tmp_path / "further"
    folder.mkdir()
    for part in ("real_model_paper_measured.csv", "real_model_longer_measured.csv"):
        (folder / part).write_bytes((real_model_curves.FOLDER / part).read_bytes())
    runs = pd.read_csv(folder / "real_model_longer_measured.csv")
    further = runs[(runs.seed == 0) & (runs.method == "grpo")].assign(seed=real_model_curves.PAPER.seeds)
    further.loc[further.step > 0, "pass@1"] = 0.0
    pd.concat([runs, further]).to_csv(folder / "real_model_longer_measured.csv", index=False)
    pd.testing.assert_frame_equal(real_model_curves.export(folder, clock=True, longer=True)[0], curves)
    _on_another_base(tmp_path, "real_model_longer_measured.csv", "pass@2")
    with pytest.raises(ValueError, match="real_model_longer_measured.csv was scored against another base"):
        real_model_curves.export(tmp_path, clock=True, longer=True)
    for bad in (dict(clock=False, longer=True), dict(clock=True, beside=True, longer=True)):
        with pytest.raises(ValueError, match="needs clock and not beside"):
            real_model_curves.export(real_model_curves.FOLDER, **bad)


def test_the_committed_part_export_is_a_fresh_export_of_the_part_alone_runs(tmp_path):
    assert real_model_curves.main(["--part", "--out", str(tmp_path)]) == 0
    for name in ("curves", "methods", "training"):
        path = f"smollm2_part1_clock_{name}.csv"
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / path), pd.read_csv(real_model_curves.FOLDER / path))
    measured = pd.read_csv(real_model_curves.FOLDER / real_model_curves.PART_FILE)
    curves = load_curves(tmp_path / "smollm2_part1_clock_curves.csv").set_index(["method", "k"]).pass_at_k
    for arm, label in (("grpo", "grpo@96"), ("focal:gamma=3", "focal:gamma=3@96")):  # each arm's mean over its seeds
        rows = measured[(measured.method == arm) & (measured.step == 96)]
        assert len(rows) == 4 and curves[(label, 64)] == pytest.approx(rows["pass@64"].mean(), rel=1e-12)
    assert curves[("base", 1)] == measured[measured.step == 0]["pass@1"].iloc[0]


def test_the_part_export_reads_the_part_trained_alone_at_its_multiples(tmp_path, capsys):
    """``--part``: the three-operand part trained alone, on its own questions; the first checkpoint is where GRPO's
    pass@1 fixes the length, the later ones at 2x, 3x and 6x it; each value the mean over the seeds; the paper's batch."""
    rows = [{"method": "grpo", "seed": seed, "step": step, "pass@1": 0.05 + 0.01 * step + 0.001 * seed,
             "pass@2": 0.1 + 0.01 * step, "entropy": 0.5} for seed in range(3) for step in (16, 32, 48, 96)]
    rows += [{"method": "grpo", "seed": seed, "step": 0, "pass@1": 0.05, "pass@2": 0.09, "entropy": 0.7}
             for seed in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / real_model_curves.PART_FILE, index=False)
    curves, methods = real_model_curves.export_part(tmp_path)
    setting = f"{real_model_curves.PART_SETTING}, steps 16-96"
    assert set(curves.setting) == {setting}
    assert dict(zip(methods.method, methods.steps_scale)) == {"GRPO": 1, "grpo@32": 2, "grpo@48": 3, "grpo@96": 6}
    table = curves.set_index(["method", "k"]).pass_at_k
    assert table[("base", 2)] == 0.09 and table[("GRPO", 1)] == pytest.approx(0.05 + 0.16 + 0.001)
    assert table[("grpo@96", 1)] == pytest.approx(0.05 + 0.96 + 0.001)
    assert real_model_curves.main(["--part", "--clock"]) == 2
    assert "--part is a setting of its own" in capsys.readouterr().err
    real_model_curves.training(curves).to_csv(tmp_path / "training.csv", index=False)
    assert load_training(tmp_path / "training.csv") == {setting: 64}  # the paper preset's 8 prompts x 8 rollouts
