"""The at-a-glance table of the results, generated from the committed tables in paper_figures/ so that its numbers
cannot drift from them.

Every number in the table is computed here from a committed CSV or verdict table (the file each row names); the same
block is written into README.md and paper_figures/README.md between the markers ``<!-- at-a-glance:start -->`` and
``<!-- at-a-glance:end -->``. ``--check`` (what tests/test_at_a_glance.py runs) exits with status 1, naming the
file, where a README's block differs from the one the tables give today.

    python experiments/at_a_glance.py            # rewrite both READMEs' tables
    python experiments/at_a_glance.py --check    # 0: both up to date; 1: which is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "paper_figures"
READMES = (ROOT / "README.md", FIGURES / "README.md")
START, END = "<!-- at-a-glance:start -->", "<!-- at-a-glance:end -->"


def _cells(path: Path, claim: str) -> pd.DataFrame:
    """One row per (task, family, metric, phase, column) of a claim's table in a sign-axis verdict file: the verdict
    word and the effect and interval it prints."""
    text = path.read_text()
    block = text.split(f"**{claim}**", 1)[1].split("\n**", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| task")]
    header = next(line for line in block.splitlines() if line.startswith("| task"))
    columns = [c.strip() for c in header.strip("|").split("|")][4:]
    rows = []
    for line in lines:
        parts = [c.strip() for c in line.strip("|").split("|")]
        for column, cell in zip(columns, parts[4:]):
            m = re.match(r"(CONFIRMED|not confirmed) \(([-+][\d.e+-]+) ± ([\d.e+-]+)\)", cell)
            rows.append({"task": parts[0], "family": parts[1], "metric": parts[2], "phase": parts[3],
                         "column": column, "ok": bool(m and m.group(1) == "CONFIRMED"), "measured": m is not None,
                         "effect": m.group(2) if m else None, "ci": m.group(3) if m else None})
    return pd.DataFrame(rows)


def sign_axis_entropy() -> tuple[str, str, str]:
    path = FIGURES / "sign_axis" / "sign_axis_verdicts_full.md"
    cells = _cells(path, "positive mass collapses entropy")
    cells = cells[cells.metric == "entropy"]
    step, matched = cells[cells.phase == "final"], cells[cells.phase == "final, matched pass@1"]
    where = lambda part: ", ".join(f"{r.column} {r.task} {r.family}" for r in part[part.ok].itertuples())  # noqa: E731
    math = cells[(cells.task == "sharpen") & (cells.family == "sign_scaled") & (cells.column == "math / adam")]
    at_step = math[math.phase == "final"].iloc[0]
    at_p1 = math[math.phase == "final, matched pass@1"].iloc[0]
    return ("Does positive mass collapse entropy (simulator, sign axis)?",
            f"At the final step CONFIRMED in {int(step.ok.sum())} of {int(step.measured.sum())} cells at the matched "
            f"step ({where(step)}) and {int(matched.ok.sum())} of {int(matched.measured.sum())} at matched pass@1 "
            f"({where(matched)}); in the math regime (sharpen, adam) b = 0 minus b = +1 is {at_step.effect} ± "
            f"{at_step.ci} nats (matched step) and {at_p1.effect} ± {at_p1.ci} (matched pass@1): reversed",
            "[sign_axis](paper_figures/sign_axis/README.md)")


def sign_axis_geometry() -> tuple[str, str, str]:
    cells = _cells(FIGURES / "sign_axis" / "sign_axis_verdicts_full.md", "negative mass damages geometry")
    final = cells[(cells.metric == "logit_norm") & (cells.phase == "final") & cells.measured]
    by_column = final.groupby("column", sort=False).ok.agg(["sum", "count"])
    return ("Does negative mass damage geometry (simulator, sign axis)?",
            f"Logit norm at the final step: CONFIRMED in {int(final.ok.sum())} of {len(final)} (task, family) cells; "
            "by regime / optimizer " + ", ".join(f"{c} {int(r['sum'])}/{int(r['count'])}" for c, r in by_column.iterrows()),
            "[sign_axis](paper_figures/sign_axis/README.md)")


def second_order() -> tuple[str, str, str]:
    t = pd.read_csv(FIGURES / "sign_axis" / "sign_axis_theory_full.csv")
    sgd = t[t.optimizer == "sgd"]
    inside = int((np.abs(sgd.measured - sgd.predicted) <= sgd.ci95).sum())
    return ("Does the second-order theory predict the sign axis' one-step drift?",
            f"Under plain SGD the predicted drift lies within the simulation's 95% interval at {inside} of {len(sgd)} "
            f"(regime, balance, quantity) points",
            "[sign_axis](paper_figures/sign_axis/README.md)")


def difficulty_mass() -> tuple[str, str, str]:
    t = pd.read_csv(FIGURES / "difficulty_axis" / "difficulty_axis_theory_full.csv")
    measured = t[t.metric.isin(["hardness", "ess_fraction"])].set_index(["difficulty", "gamma", "metric"]).value
    closed = t[t.metric == "closed form"].set_index(["difficulty", "gamma"])
    err = {m: float(max(abs(measured[(d, g, m)] - closed.loc[(d, g), m]) for d, g in closed.index)) for m in
           ("hardness", "ess_fraction")}
    rising = sum(1 for d in closed.index.get_level_values(0).unique()
                 if measured[(d, closed.loc[d].index.max(), "hardness")] > measured[(d, 0.0, "hardness")]
                 and measured[(d, closed.loc[d].index.max(), "ess_fraction")] < measured[(d, 0.0, "ess_fraction")])
    n = closed.index.get_level_values(0).nunique()
    return ("Does hard focus move mass to hard prompts and cost ESS (simulator, difficulty axis)?",
            f"In {rising} of {n} prompt sets the first batch's hardness rises and its ESS falls from gamma = 0 to "
            f"the largest gamma; the closed form is within {err['hardness']:.3f} (hardness) and "
            f"{err['ess_fraction']:.3f} (ESS per group) of it",
            "[difficulty_axis](paper_figures/difficulty_axis/README.md)")


def fade_speed() -> tuple[str, str, str]:
    frames = [pd.read_csv(p) for p in (FIGURES / "fade_vs_static" / "fade_vs_static_methods_full.csv",
                                      FIGURES / "fade_vs_static" / "math_regime" / "fade_vs_static_methods_full.csv")]
    t = pd.concat(frames, ignore_index=True)
    sooner, cells = 0, 0
    for _, part in t.groupby(["cell", "difficulty"]):
        best, fade = part[part.best_static], part[part.method == "fade"]
        if best.empty or fade.empty:
            continue
        cells += 1
        sooner += float(fade.steps_to_target.iloc[0]) < float(best.steps_to_target.iloc[0])
    return ("Does FADE reach the best static's peak pass@1 sooner (simulator)?",
            f"On average over held-out seeds in {sooner} of {cells} cells (toy, llm, math; a mean, not the paired "
            f"verdict, which the folder gives)",
            "[fade_vs_static](paper_figures/fade_vs_static/README.md)")


def ladder() -> tuple[str, str, str]:
    o = pd.read_csv(FIGURES / "ladder" / "ladder_orderings_full.csv")
    tabular = ("bandit", "linear_softmax", "chain")
    tab = o[o.source.str.split(" ").str[0].isin(tabular) & o.target.str.split(" ").str[0].isin(tabular)]
    c = pd.read_csv(FIGURES / "ladder" / "ladder_full.csv")
    c1p = c[(c.claim == "C1p") & (c.ok.astype(str) == "True")]
    return ("Do the rungs predict each other (bandit -> ... -> GPT-2)?",
            f"The tabular rungs predict {int(tab.predicted.sum())} of {len(tab)} orderings of the methods; all rungs "
            f"{int(o.predicted.sum())} of {len(o)}; at matched pass@1 positive mass collapses entropy (C1p) on "
            + (", ".join(f"{r.rung} ({r.regime})" for r in c1p.itertuples()) or "no rung"),
            "[ladder](paper_figures/ladder/README.md)")


def _literature_scores(stem: Path) -> tuple[int, int, float, int]:
    """(signs agreeing, signs, sum of |simulated - published| over the published pass@k, their number) of one
    committed literature-protocol run (its ``.csv`` table and ``.signs.csv``)."""
    table, signs = pd.read_csv(f"{stem}.csv"), pd.read_csv(f"{stem}.signs.csv")
    scored = table.dropna(subset=["simulated"])
    return int(signs.agree.sum()), len(signs), float((scored.simulated - scored.published).abs().sum()), len(scored)


def literature() -> tuple[str, str, str]:
    """The default family's committed runs, named as experiments/literature.py names them from ``CHOSEN`` (draw 0 in
    paper_figures/literature/, draws 1-3 with tag drawN in its reach_draws/ where the family's runs were moved there,
    those of the defaults from 2026-12-06 to the thirteenth session, else beside draw 0), so the row follows the
    default."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from literature import Settings, run_stem

    from fadesim.lab.literature import CHOSEN

    folder = FIGURES / "literature"
    out = {}
    for curves, part in (("shipped", ""), ("smollm2", "smollm2")):
        stems = [folder / run_stem(Settings(**CHOSEN, tag=part), "full")]
        for n in (1, 2, 3):
            stem = run_stem(Settings(**CHOSEN, tag="_".join(filter(None, (part, f"draw{n}")))), "full")
            moved = folder / "reach_draws" / stem
            stems.append(moved if moved.with_name(moved.name + ".csv").is_file() else folder / stem)
        agree, total, err, n = (sum(v) for v in zip(*(_literature_scores(stem) for stem in stems)))
        out[curves] = f"{agree}/{total} ({100 * agree / total:.1f}%), pass@k error {err / n:.4f}"
    return ("Calibrated to a real model's base pass@k, does the simulator predict the signs and sizes of RL's effects?",
            f"The default family (skill reach 256 misfiring on the unreached, noise-scale clock, matched on the held-out "
            f"seeds), pooled over 4 task "
            f"draws: {out['shipped']} on the shipped published settings; {out['smollm2']} on our three measured "
            "SmolLM2 designs; sizes not yet at the 0.03 target (issue 40)", "[literature](paper_figures/literature/README.md)")


def real_model_first() -> tuple[str, str, str]:
    out = []
    for tag, what in (("", "the first design (free answer)"), ("prefilled_", "the answer prefilled")):
        s = pd.read_csv(FIGURES / "real_model" / f"real_model_{tag}score.csv")
        end = s[s["when"] == "end"]
        m = pd.read_csv(FIGURES / "real_model" / f"real_model_{tag}measured.csv")
        top = int(m.k.max())
        last = m[(m.k == top) & ((m.step == m.step.max()) | (m.method == "base"))].groupby("method").pass_at_k.mean()
        above = sum(v > last["base"] for name, v in last.items() if name != "base")
        out.append(f"{what}: {int(end.agree.sum())}/{len(end)} signs ({100 * end.agree.mean():.1f}%), {above} of "
                   f"{len(last) - 1} methods above the base at pass@{top}")
    return ("Calibrated to SmolLM2-135M's measured base pass@k, does the simulator predict GRPO, PSR, NSR, W-REINFORCE "
            "and FADE on it (CPU, 24 steps)?", "; ".join(out) + " (no crossover)",
            "[real_model](paper_figures/real_model/README.md)")


ROWS: tuple[Callable[[], tuple[str, str, str]], ...] = (
    sign_axis_entropy, sign_axis_geometry, second_order, difficulty_mass, fade_speed, ladder, literature,
    real_model_first)


def paper_rows() -> list[tuple[str, str, str]]:
    """The paper's experiments on SmolLM2, once their verdict table is committed (marked INTERIM while runs are
    missing from it)."""
    path = FIGURES / "real_model" / "real_model_paper_verdicts.csv"
    if not path.is_file():
        return []
    v = pd.read_csv(path)
    score = pd.read_csv(FIGURES / "real_model" / "real_model_paper_score.csv")
    stored, designed = (int(v.runs_stored.iloc[0]), int(v.runs_designed.iloc[0])) if "runs_stored" in v else (0, 0)
    interim = f"INTERIM ({stored} of {designed} runs): " if stored < designed else ""
    setting = "SmolLM2-135M-Instruct, graded sums, AdamW lr 1e-5, full fine-tuning"
    rows = []
    for claim, part in v.groupby("claim", sort=False):
        final = part[part.phase == "final"]
        cells = []
        for r in final.itertuples():
            effect = ("n/a (under 2 seeds)" if not np.isfinite(r.effect) else
                      f"{'CONFIRMED' if r.ok else 'not confirmed'} ({r.effect:+.3g} ± {r.ci95:.2g}, {r.n} seeds)")
            said = ("" if not np.isfinite(r.effect) else
                    f", {'PREDICTED' if r.predicted_ok == r.ok else 'not predicted'}")
            which = f"{r.comparison}, " if final.comparison.nunique() > 1 else ""
            cells.append(f"{which}{r.metric} at {'matched pass@1' if r.matched == 'pass@1' else f'matched step {r.step}'}: "
                         f"{effect}{said}")
        rows.append((f"{setting}: {claim}?", interim + "; ".join(cells),
                     "[real_model](paper_figures/real_model/README.md)"))
    agree, total = int(score.agree.sum()), int(score.total.sum())
    err = float((score.abs_error * score.n_error).sum() / score.n_error.sum())
    rows.append((f"{setting}: does the prediction (sharpen, Adam, GRPO's length matched at each checkpoint) get the "
                 "signs of the measured pass@k differences?",
                 f"{interim}{agree}/{total} ({100 * agree / max(total, 1):.1f}%) over the four checkpoints; pass@k mean "
                 f"abs error {err:.3f}", "[real_model](paper_figures/real_model/README.md)"))
    return rows


def signed(x: float) -> str:
    """``x`` to three decimals with its sign, or in two significant digits where three decimals would round it to
    zero: an interval's end at -0.0003 reads -0.00028, not -0.000, which a reader takes for 0 (inside the interval)."""
    return f"{x:+.3f}" if x == 0 or abs(x) >= 0.0005 else f"{x:+.2g}"


def _last_steps(name: str) -> list[tuple[str, pd.DataFrame, str]]:
    """(method, its rows at its last step indexed by metric, the largest k's pass@k) of each arm in the committed
    real_model table ``name`` (one row per method, step and metric); none where the table is not committed."""
    path = FIGURES / "real_model" / name
    if not path.is_file():
        return []
    out = []
    for method, part in pd.read_csv(path).groupby("method", sort=False):
        last = part[part.step == part.step.max()].set_index("metric")
        top = max((m for m in last.index if m.startswith("pass@") and m[5:].isdigit()), key=lambda m: int(m[5:]))
        out.append((method, last, top))
    return out


def _interval(row: pd.Series) -> str:
    """A row's difference and its 95% interval: "(+0.020, +0.010 to +0.030)"."""
    return f"({signed(row['diff'])}, {signed(row['lo'])} to {signed(row['hi'])})"


def beside_rows() -> list[tuple[str, str, str]]:
    """Each arm measured beside the paper experiment (experiments/real_model_beside.py), once its paired table is
    committed: its difference from GRPO of the same seed at the last evaluation, with the 95% t interval."""
    rows = []
    for method, last, top in _last_steps("real_model_beside_paired.csv"):
        cells = [f"{m} {last.loc[m, 'arm']:.3f} against {last.loc[m, 'grpo']:.3f} {_interval(last.loc[m])}"
                 for m in ("pass@1", top, "entropy", "weight_distance")]
        rows.append((f"SmolLM2-135M-Instruct, graded sums, AdamW lr 1e-5: {method} beside GRPO (the paper "
                     "experiment's settings and seeds)?",
                     f"at matched step {int(last.step.iloc[0])}, {int(last.seeds.max())} paired seeds, difference and 95% "
                     "interval: " + "; ".join(cells), "[real_model](paper_figures/real_model/README.md)"))
    return rows


def longer_rows() -> list[tuple[str, str, str]]:
    """Each arm trained past the paper experiment's length (experiments/real_model_longer.py), once its time table is
    committed: pass@1 and the largest k's pass@k at the last step, each with its change from the calibration step
    within the seeds and the 95% t interval."""
    rows = []
    for method, last, top in _last_steps("real_model_longer_time.csv"):
        cells = [f"{m} {last.loc[m, 'start']:.3f} -> {last.loc[m, 'value']:.3f} {_interval(last.loc[m])}"
                 for m in ("pass@1", top, "entropy")]
        start, step = int(last["from"].iloc[0]), int(last.step.iloc[0])
        rows.append((f"SmolLM2-135M-Instruct, graded sums, AdamW lr 1e-5: {method} from step {start} to {step} (the "
                     "paper experiment's settings, trained past its length)?",
                     f"{int(last.seeds.max())} seeds, change within each seed and 95% interval: " + "; ".join(cells),
                     "[real_model](paper_figures/real_model/README.md)"))
    return rows


def part_rows() -> list[tuple[str, str, str]]:
    """Each arm trained on one part of the graded task alone (experiments/real_model_part.py), once its comparison
    table is committed: the part's questions with no zero operand, then those with one, against the mixture's runs at
    the last matched dose and the last matched step, each with its Welch 95% interval."""
    path = FIGURES / "real_model" / "real_model_paperpart1_compare.csv"
    if not path.is_file():
        return []
    rows = []
    for method, part in pd.read_csv(path).groupby("method", sort=False):
        cells = []
        for subset in ("no zero operand", "a zero operand"):
            for match in ("dose", "step"):
                rows_ = part[(part.match == match) & (part.subset == subset)]
                last = rows_[rows_.step == rows_.step.max()].iloc[0]
                cells.append(f"{subset}, matched {match} (step {int(last.step)} against the mixture's "
                             f"{int(last.mixture_step)}): {last.part_alone:.3f} against {last.mixture:.3f} "
                             f"{_interval(last)}")
        rows.append((f"SmolLM2-135M-Instruct, AdamW lr 1e-5: {method} on the graded task's three-operand part alone "
                     "against the mixture of all three parts (does the mixture stop what is not learned)?",
                     f"{int(part.seeds.max())} seeds each, 95% Welch interval: " + "; ".join(cells),
                     "[real_model](paper_figures/real_model/README.md)"))
    return rows


def table(relative_to: Path) -> str:
    """The Markdown block, links relative to the README's folder."""
    rows = [f() for f in ROWS] + paper_rows() + beside_rows() + longer_rows() + part_rows()
    lines = [START, "| question | at a glance (every number from the named folder's committed tables) | where |",
             "|---|---|---|"]
    for question, answer, link in rows:
        if relative_to.name == FIGURES.name:  # paper_figures/README.md: links into its own folders
            link = link.replace("(paper_figures/", "(")
        lines.append(f"| {question} | {answer} | {link} |")
    return "\n".join(lines + [END])


def rewrite(path: Path) -> str:
    text = path.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{path}: no {START} ... {END} block")
    head, rest = text.split(START, 1)
    return head + table(path.parent) + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 where a README's table is stale; write nothing")
    args = ap.parse_args(argv)
    stale = []
    for path in READMES:
        new = rewrite(path)
        if new != path.read_text():
            stale.append(path)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print("stale at-a-glance table in " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
              + ": python experiments/at_a_glance.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
