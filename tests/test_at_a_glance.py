"""Results a reader can find: the at-a-glance table in README.md and paper_figures/README.md is what
experiments/at_a_glance.py computes from the committed tables (so a number cannot drift from them), the top READMEs
stay a page, and every relative link or image in the project's Markdown points to a file that exists."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import at_a_glance  # noqa: E402 - a script of experiments/, importable once that folder is on sys.path


def test_both_readmes_hold_the_table_the_committed_tables_give():
    assert at_a_glance.main(["--check"]) == 0
    for path in at_a_glance.READMES:
        block = path.read_text().split(at_a_glance.START)[1].split(at_a_glance.END)[0]
        assert block.count("\n| ") >= 8  # the header and a row per result


def test_a_drifted_number_is_caught(tmp_path, monkeypatch, capsys):
    copies = []
    for path in at_a_glance.READMES:
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
        copies.append(copy)
    monkeypatch.setattr(at_a_glance, "READMES", tuple(copies))
    monkeypatch.setattr(at_a_glance, "ROOT", tmp_path)  # (the tables read stay the committed ones, FIGURES)
    assert at_a_glance.main(["--check"]) == 0  # the copies as they are: up to date
    assert "258/308" in copies[1].read_text()
    copies[1].write_text(copies[1].read_text().replace("258/308", "259/308"))  # one number drifts
    assert at_a_glance.main(["--check"]) == 1
    assert "stale at-a-glance table in paper_figures/README.md" in capsys.readouterr().err
    assert at_a_glance.main([]) == 0 and "258/308" in copies[1].read_text()  # rewritten from the tables


def test_an_interval_end_near_zero_keeps_its_sign_and_its_size():
    assert at_a_glance.signed(-0.000277) == "-0.00028"  # not "-0.000", which reads as touching 0
    assert at_a_glance.signed(0.0004) == "+0.0004"
    assert at_a_glance.signed(-0.0992) == "-0.099" and at_a_glance.signed(0.0005) == "+0.001"
    assert at_a_glance.signed(0.0) == "+0.000"


def test_a_longer_runs_row_reads_its_last_step_and_change_from_the_calibration(tmp_path, monkeypatch):
    import pandas as pd

    folder = tmp_path / "real_model"
    folder.mkdir()
    monkeypatch.setattr(at_a_glance, "FIGURES", tmp_path)
    assert at_a_glance.longer_rows() == []  # nothing committed: no row
    rows = [{"method": "grpo", "step": step, "from": 48, "metric": metric, "seeds": 4, "value": v, "start": s0,
             "diff": v - s0, "lo": v - s0 - 0.01, "hi": v - s0 + 0.01}
            for step in (72, 96) for metric, s0 in (("pass@1", 0.78), ("pass@64", 0.865), ("entropy", 0.376))
            for v in [s0 + (0.02 if step == 96 else 0.01)]]
    pd.DataFrame(rows).to_csv(folder / "real_model_longer_time.csv", index=False)
    [(question, answer, link)] = at_a_glance.longer_rows()
    assert "grpo from step 48 to 96" in question and answer.startswith("4 seeds")
    assert "pass@1 0.780 -> 0.800 (+0.020, +0.010 to +0.030)" in answer
    assert "pass@64 0.865 -> 0.885" in answer and "entropy 0.376 -> 0.396" in answer


def test_a_part_alone_row_reads_the_last_matched_dose_and_step_of_each_subset(tmp_path, monkeypatch):
    import pandas as pd

    folder = tmp_path / "real_model"
    folder.mkdir()
    monkeypatch.setattr(at_a_glance, "FIGURES", tmp_path)
    assert at_a_glance.part_rows() == []  # nothing committed: no row
    rows = [{"method": "grpo", "match": match, "step": step, "mixture_step": 3 * step if match == "dose" else step,
             "subset": subset, "seeds": 4, "part_alone": 0.1 * step / 16 + (0.5 if subset == "a zero operand" else 0),
             "mixture": 0.05, "diff": 0.0, "lo": -0.1, "hi": 0.1}
            for match, steps in (("dose", (16, 32)), ("step", (48, 96))) for step in steps
            for subset in ("all", "a zero operand", "no zero operand")]
    pd.DataFrame(rows).to_csv(folder / "real_model_paperpart1_compare.csv", index=False)
    [(question, answer, link)] = at_a_glance.part_rows()
    assert "grpo on the graded task's three-operand part alone" in question and answer.startswith("4 seeds")
    assert "no zero operand, matched dose (step 32 against the mixture's 96): 0.200 against 0.050" in answer
    assert "a zero operand, matched step (step 96 against the mixture's 96): 1.100 against 0.050" in answer
    assert "(step 16" not in answer and "(step 48" not in answer  # the last of each match only


def test_the_top_readmes_are_a_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
    assert len((ROOT / "paper_figures" / "README.md").read_text().splitlines()) <= 150


def test_every_relative_link_in_the_markdown_resolves():
    files = [p for p in ROOT.rglob("*.md") if not {".venv", ".cache", "results", ".pytest_cache"} & set(p.parts)]
    broken = []
    for path in files:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("#") or not re.search(r"[./]", target):
                continue  # a web address, an anchor, or mathematics such as E[M+](p)
            if not (path.parent / target.split("#")[0]).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert len(files) > 15 and broken == []


def test_the_paper_rows_say_interim_while_runs_are_missing_and_name_each_cells_match(tmp_path, monkeypatch):
    import pandas as pd

    folder = tmp_path / "real_model"
    folder.mkdir()
    monkeypatch.setattr(at_a_glance, "FIGURES", tmp_path)
    assert at_a_glance.paper_rows() == []  # no verdict table committed: no rows
    verdicts = pd.DataFrame({"claim": ["c"] * 3, "comparison": ["a minus b"] * 3, "phase": ["early", "final", "final"], "step": [12, 48, 48],
                             "metric": ["entropy"] * 3, "matched": ["step", "step", "pass@1"],
                             "effect": [0.1, 0.2, float("nan")], "ci95": [0.01, 0.05, float("nan")], "n": [3, 3, 1],
                             "ok": [True, True, False], "predicted_ok": [True, False, False],
                             "runs_stored": [20] * 3, "runs_designed": [38] * 3})
    verdicts.to_csv(folder / "real_model_paper_verdicts.csv", index=False)
    pd.DataFrame({"agree": [3, 4], "total": [4, 4], "abs_error": [0.1, 0.2], "n_error": [1, 3]}).to_csv(
        folder / "real_model_paper_score.csv", index=False)
    (claim, cells, _), (_, score, _) = at_a_glance.paper_rows()
    assert claim.startswith("SmolLM2-135M-Instruct, graded sums, AdamW") and claim.endswith(": c?")
    assert cells == ("INTERIM (20 of 38 runs): entropy at matched step 48: CONFIRMED (+0.2 ± 0.05, 3 seeds), "
                     "not predicted; entropy at matched pass@1: n/a (under 2 seeds)")  # nothing to predict
    assert score == "INTERIM (20 of 38 runs): 7/8 (87.5%) over the four checkpoints; pass@k mean abs error 0.175"
    verdicts.assign(runs_stored=38).to_csv(folder / "real_model_paper_verdicts.csv", index=False)
    assert not at_a_glance.paper_rows()[0][1].startswith("INTERIM")
