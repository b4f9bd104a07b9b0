"""One part of the paper experiment's graded task trained alone on SmolLM2 (issue 40: what the model does not learn,
and why): the paper preset's settings exactly (``real_model.PAPER``: 8 prompts x 8 rollouts a step, AdamW lr 1e-5,
the answer's start prefilled, the same 48 evaluation questions of all three parts, the same seeds) but every training
prompt drawn from one part (``--part``, default 1: the one-digit three-operand sums, the part no arm of the paper
experiment learned past its questions with a zero operand), for 96 steps, evaluated at 16, 32, 48 and 96::

    python experiments/real_model_part.py --phase train   # resumable; about 12 min a run on 2 cores
    python experiments/real_model_part.py --phase score   # real_model_paperpart1_{measured,steps,questions,parts,...}.csv
    python experiments/real_model_part.py --preset paper-quick --out /tmp/part   # the pipeline, tiny GPT-2

In the paper experiment each training prompt comes from one of the three parts with equal probability, so by step 3t a
run has trained on as many prompts of the part, in expectation, as this run has by step t: step 16 here is the
mixture's step 48 in the part's prompts and step 32 its step 96 (the **dose**). The score phase sets the part's
evaluation questions side by side with the mixture's runs of the same arm (``real_model_longer_questions.csv``: the
paper experiment's runs trained to 96 steps) at the matched dose and at the matched step, the questions with a zero
operand (sums of fewer operands in disguise) apart from the others (``compare``: the mean pass rate over seeds with
its 95% t interval, and the part-alone minus mixture difference with a Welch interval: different runs, not pairs).
Where the part alone learns what the mixture did not at the same dose, the mixture kept it from learning
(interference); where it does not, the model does not learn it under these settings (a limit of the model).
``trained_part_measured``: pass@k etc. on the trained part's questions alone (the base at step 0), which
``real_model_curves.py --part`` exports as a literature-protocol setting.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

from real_model import (GRADED_PARTS, PAPER, PAPER_QUICK, Settings, added_runs,  # noqa: E402
                        added_runs_arguments, base_counts, eval_table, kept, parse_advantages, part_labels, step_rows,
                        tasks)
from real_model_beside import paired as pair_with_grpo  # noqa: E402
from real_model_longer import MODEL_NAMES, by_part, groups, questions  # noqa: E402

from fadesim.lab.results import ResultStore, write_atomic  # noqa: E402
from fadesim.lab.stats import ci95_t  # noqa: E402

#: the runs' length and evaluations: twice the paper experiment's 48 steps; 16 and 32 are the mixture's 48 and 96 in
#: the part's prompts
PART_STEPS, PART_EVAL_STEPS = 96, "16,32,48,96"
QUICK_STEPS, QUICK_EVAL_STEPS = 8, "2,4,8"
#: the mixture's runs each preset is set beside: its parts, drawn with equal probability
MIXTURE = {"paper": PAPER, "paper-quick": PAPER_QUICK}


def settings(preset: str, part: int) -> Settings:
    """The preset's settings with every training prompt drawn from ``part`` (an index into GRADED_PARTS), run to
    ``PART_STEPS`` (``QUICK_STEPS`` for paper-quick), files tagged ``{preset's tag}part{part}``."""
    if not 0 <= part < len(GRADED_PARTS):
        raise ValueError(f"real_model_part: --part must lie in 0..{len(GRADED_PARTS) - 1}; got {part}")
    quick = preset != "paper"
    return dataclasses.replace(MIXTURE[preset], parts=str(part), steps=QUICK_STEPS if quick else PART_STEPS,
                               eval_steps=QUICK_EVAL_STEPS if quick else PART_EVAL_STEPS,
                               tag=f"{MIXTURE[preset].tag}part{part}")


def operands(prompt: str) -> list[int]:
    """The operands of an arithmetic question's prompt ("What is 3 + 0 + 5? ..." -> [3, 0, 5]); a ValueError where
    the prompt holds no such question."""
    found = re.search(r"What is (\d+(?: [+-] \d+)+)\?", prompt)
    if not found:
        raise ValueError(f"real_model_part: no arithmetic question in {prompt!r}")
    return [int(x) for x in re.split(r" [+-] ", found.group(1))]


def question_groups(s: Settings) -> pd.DataFrame:
    """Each evaluation question (prompt index, in the evaluation's order): its part's label and whether one of its
    operands is 0 (a sum of fewer operands in disguise)."""
    _, problems = tasks(s, lambda question: question)  # the same draws as under any template: the raw questions
    labels = part_labels(s)
    per_part = len(problems) // len(labels)
    return pd.DataFrame([{"prompt": i, "part": labels[i // per_part], "zero_operand": 0 in operands(p.prompt)}
                         for i, p in enumerate(problems)])


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(mean(a) - mean(b), its 95% Welch t half-width); nan half-width where either side has one value."""
    diff = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return diff, float("nan")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return diff, 0.0
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return diff, float(stats.t.ppf(0.975, dof) * np.sqrt(va + vb))


def compare(part_alone: pd.DataFrame, mixture: pd.DataFrame, groups_: pd.DataFrame, part_label: str, shares: int
            ) -> pd.DataFrame:
    """The part's evaluation questions under the part alone against the mixture (per-question tables: method, seed,
    step, prompt, correct, n), for every arm in both: each part-alone evaluation at step t beside the mixture's at
    step ``shares`` x t (the matched dose: the mixture draws the part with probability 1 / ``shares``) and at step t
    (the matched step), where the mixture has it. Per subset of the part's questions (all, a zero operand, none):
    the mean over seeds of each seed's mean pass rate, with its 95% t half-width, and the difference part alone minus
    mixture with a Welch half-width."""
    chosen = groups_[groups_.part == part_label]
    subsets = {"all": chosen.prompt, "a zero operand": chosen[chosen.zero_operand].prompt,
               "no zero operand": chosen[~chosen.zero_operand].prompt}

    def per_seed(table: pd.DataFrame, method: str, step: int, prompts: pd.Series) -> np.ndarray:
        rows = table[(table.method == method) & (table.step == step) & table.prompt.isin(prompts)]
        return (rows.correct / rows.n).groupby(rows.seed).mean().to_numpy(float)

    out = []
    for method in sorted(set(part_alone.method) & set(mixture.method)):
        for step in sorted(part_alone[part_alone.method == method].step.unique()):
            for match, other in (("dose", shares * step), ("step", step)):
                for subset, prompts in subsets.items():
                    a, b = per_seed(part_alone, method, step, prompts), per_seed(mixture, method, other, prompts)
                    if not len(a) or not len(b) or not len(prompts):
                        continue
                    (ma, ha), (mb, hb) = ci95_t(a), ci95_t(b)
                    diff, half = _welch(a, b)
                    out.append({"method": method, "match": match, "step": int(step), "mixture_step": int(other),
                                "subset": subset, "questions": len(prompts), "seeds": len(a), "mixture_seeds": len(b),
                                "part_alone": ma, "part_alone_ci95": ha, "mixture": mb, "mixture_ci95": hb,
                                "diff": diff, "lo": diff - half, "hi": diff + half})
    return pd.DataFrame(out)


def figure(alone: pd.DataFrame, mixture: pd.DataFrame, groups_: pd.DataFrame, base: pd.DataFrame, part_label: str,
           shares: int, prompts_per_step: int, path: Path, title: str) -> Path:
    """The part's questions, by subset (no zero operand, a zero operand), against the number of the part's prompts
    trained on (the part alone: ``prompts_per_step`` x step; the mixture: that over ``shares``, in expectation): each
    arm's mean pass rate over seeds with its 95% t interval, alone (solid) and in the mixture (dashed); the base's
    mean (grey, dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fadesim.lab.plots import save_figure

    chosen = groups_[groups_.part == part_label]
    subsets = (("no zero operand", chosen[~chosen.zero_operand].prompt),
               ("a zero operand", chosen[chosen.zero_operand].prompt))
    fig, axes = plt.subplots(1, len(subsets), figsize=(11, 3.9), squeeze=False)
    for ax, (subset, prompts) in zip(axes[0], subsets):
        for i, method in enumerate(sorted(set(alone.method))):
            for table, share, style, where in ((alone, 1, "-o", "alone"), (mixture, shares, "--s", "in the mixture")):
                rows = table[(table.method == method) & table.prompt.isin(prompts)]
                if rows.empty:
                    continue
                per_seed = (rows.correct / rows.n).groupby([rows.step, rows.seed]).mean()
                cells = [(step, *ci95_t(g.to_numpy(float))) for step, g in per_seed.groupby(level=0)]
                steps, mean, half = (np.array(c, dtype=float) for c in zip(*cells))
                ax.errorbar(steps * prompts_per_step / share, mean, yerr=np.where(np.isfinite(half), half, 0.0),
                            fmt=style, color=f"C{i}", capsize=3, ms=4, label=f"{method}, {where}")
        rate = base[base.prompt.isin(prompts)]
        ax.axhline(float((rate.correct / rate.n).mean()), color="grey", linestyle=":", label="base")
        ax.set_xlabel(f"prompts of the part trained on ({part_label}; mixture: expected)")
        ax.set_ylabel("mean pass rate (95% t over seeds)")
        ax.set_title(f"{len(prompts)} evaluation questions with {subset}")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)


def on_questions(s: Settings, table: pd.DataFrame, base: pd.DataFrame, prompts: pd.Series) -> pd.DataFrame:
    """``real_model.eval_table`` (one row per method, seed and step, the base at step 0) on the evaluation questions
    ``prompts`` alone, e.g. the trained part's: what the literature protocol's export reads as the part's own setting
    (``experiments/real_model_curves.py --part``)."""
    keep = set(int(i) for i in prompts)
    evals = table.kind == "eval"
    return eval_table(s, table[~evals | table.prompt.isin(keep)], base[base.prompt.isin(keep)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--preset", choices=sorted(MIXTURE), default="paper")
    ap.add_argument("--part", type=int, default=1, help="the part trained alone (index into the graded task's parts; "
                    "default 1, the one-digit three-operand sums)")
    ap.add_argument("--advantages", default="grpo", help="the arms (default grpo)")
    added_runs_arguments(ap, "real_model_part", "where the mixture's longer runs' files are and these are written")
    args = ap.parse_args(argv)
    try:
        s = settings(args.preset, args.part)
        out, figures, table, evals = added_runs(s, args, parse_advantages(args.advantages),
                                                MIXTURE[args.preset] is PAPER, "real_model_part")
    except (ValueError, FileNotFoundError) as err:
        print(err, file=sys.stderr)
        return 2
    if evals is None:  # the train phase
        return 0
    name = s.file
    try:
        measured = kept(figures / name("measured.csv"), evals)
        steps = kept(figures / name("steps.csv"), step_rows(table))
        per_question = kept(figures / name("questions.csv"), questions(table))
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    write_atomic(figures / name("measured.csv"), measured)
    write_atomic(figures / name("steps.csv"), steps)
    write_atomic(figures / name("questions.csv"), per_question)
    labels = part_labels(s)
    base = base_counts(s, ResultStore(out))
    parts = by_part(per_question, base, labels, s.eval_prompts)
    write_atomic(figures / name("parts.csv"), parts)
    groups_ = question_groups(s)
    trained = on_questions(s, table, base, groups_[groups_.part == labels[args.part]].prompt)
    try:
        trained = kept(figures / name("trained_part_measured.csv"), trained)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    write_atomic(figures / name("trained_part_measured.csv"), trained)
    nine = per_question.merge(groups_, on="prompt")
    nine = nine[(nine.part == labels[args.part]) & ~nine.zero_operand]
    nine = (nine.correct / nine.n).groupby([nine.method, nine.seed, nine.step]).mean().rename(
        "pass_rate_no_zero_operand").reset_index()
    top = f"pass@{s.ks()[-1]}"
    others = [m for m in dict.fromkeys(trained.method) if m != "grpo"]
    if others:  # each arm against GRPO of the same seed (real_model_beside's pairing)
        both_arms = trained.merge(nine, on=["method", "seed", "step"], how="left")
        paired = pair_with_grpo(both_arms, both_arms, others, ["pass@1", top, "pass_rate_no_zero_operand", "entropy"])
        write_atomic(figures / name("paired.csv"), paired)
        print("on the trained part's questions, each arm minus GRPO within each seed (95% t over seeds):")
        print(paired.assign(cell=[f"{a:.3f} vs {b:.3f} ({d:+.3f}, {lo:+.3f} to {hi:+.3f})" for a, b, d, lo, hi in
                                  zip(paired.arm, paired.grpo, paired["diff"], paired.lo, paired.hi)])
              .pivot_table(index=["method", "step"], columns="metric", values="cell", aggfunc="first", sort=False)
              .to_string())
    print(f"trained on {labels[args.part]} alone; each part of the task (pass rate; solved: at least once in "
          f"{s.eval_samples} samples):")
    print(parts.pivot_table(index=["method", "step"], columns="part", values=["pass_rate", "solved"], sort=False)
          .round(3).to_string())
    signal = groups(out / "rollouts", sorted({(m, int(seed)) for m, seed in zip(table.method, table.seed)}))
    if signal is not None:
        signal = kept(figures / name("groups.csv"), signal)
        write_atomic(figures / name("groups.csv"), signal)
        bins = signal.assign(steps=(signal.step - 1) // 16 * 16 + 1).groupby(["method", "steps"], sort=False)[
            ["mixed", "all_right", "all_wrong"]].mean()
        print("prompt groups a step, by 16 steps (mixed: the only ones a group-relative advantage learns from):")
        print(bins.round(3).to_string())
    mixture_path = figures / "real_model_longer_questions.csv"
    if not mixture_path.is_file():
        print(f"no {mixture_path.name} beside these files: the comparison with the mixture is not made")
        return 0
    mixture = pd.read_csv(mixture_path)
    both = compare(per_question, mixture, groups_, labels[args.part], len(GRADED_PARTS))
    write_atomic(figures / name("compare.csv"), both)
    drawn = figure(per_question, mixture, groups_, base, labels[args.part], len(GRADED_PARTS), s.prompts_per_step,
                   figures / name("compare.png"), f"{MODEL_NAMES.get(s.model, s.model)}: {labels[args.part]} trained alone against the mixture "
                   f"of all {len(GRADED_PARTS)} parts ({s.prompts_per_step} prompts x {s.G} rollouts a step, AdamW lr "
                   f"{s.lr:g})")
    print(f"figure: {drawn}")
    show = both.assign(cell=[f"{a:.3f} vs {b:.3f} ({d:+.3f}, {lo:+.3f} to {hi:+.3f})" for a, b, d, lo, hi in
                             zip(both.part_alone, both.mixture, both["diff"], both.lo, both.hi)])
    print(f"{labels[args.part]}: the part alone at step t against the mixture at the matched dose ({len(GRADED_PARTS)}t) "
          "and step (t); mean pass rate over seeds, difference and 95% Welch interval:")
    print(show.pivot_table(index=["method", "match", "step", "mixture_step"], columns="subset", values="cell",
                           aggfunc="first", sort=False).to_string())
    print(f"wrote {figures / name('compare.csv')} and the measured, steps, questions, parts and groups files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
