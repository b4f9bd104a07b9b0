"""The paper experiment's runs trained past its length on SmolLM2 (issue 40, training length): an arm (GRPO by
default) under the paper preset's settings exactly (``real_model.PAPER``: the graded task, 8 prompts x 8 rollouts a
step, AdamW lr 1e-5, the same seeds) but for ``LONG_STEPS`` steps, evaluated at the paper's last step and beyond
(``LONG_EVAL_STEPS``), so that one calibration at the paper's length (step 48) is checked at 1.5x and 2x it::

    python experiments/real_model_longer.py --phase train   # resumable; about 11 min a run on 2 cores
    python experiments/real_model_longer.py --phase score   # real_model_longer_{measured,steps,time,groups,questions,parts}.csv
    python experiments/real_model_longer.py --preset paper-quick --out /tmp/longer   # the pipeline, tiny GPT-2

Nothing in the bridge depends on the total number of steps (no learning-rate schedule; each step's rollouts are
drawn with a seed of their own step, an evaluation with a generator of its own), so a run's first 48 steps are the
paper experiment's run of the same seed: the score phase says how far its step-48 evaluation is from the committed
one (``real_model_paper_measured.csv``), and takes every later evaluation's difference from step 48 within each seed,
with its 95% t interval over the seeds (``time``). The prediction (``fadesim predict`` at 1.5x and 2x the length
matched at step 48) is committed before the runs, in the design's README (``paper_figures/real_model/README.md``);
where its table is beside the files (``real_model_longer_prediction.csv``), the score phase draws the measured
pass@1 and pass@k at the largest k against it over the whole length (``real_model_longer.png``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

from real_model import (PAPER, PAPER_QUICK, added_runs, added_runs_arguments, base_counts, kept,  # noqa: E402
                        parse_advantages, part_labels, step_rows)

from fadesim.lab.results import ResultStore, write_atomic  # noqa: E402
from fadesim.lab.stats import ci95_t  # noqa: E402

#: twice the paper experiment's 48 steps, evaluated at its last step (the calibration) and at 1.5x and 2x it
LONG_STEPS, LONG_EVAL_STEPS = 96, "48,72,96"
PRESETS = {"paper": dataclasses.replace(PAPER, steps=LONG_STEPS, eval_steps=LONG_EVAL_STEPS, tag="paperlonger"),
           "paper-quick": dataclasses.replace(PAPER_QUICK, steps=8, eval_steps="4,6,8", tag="paperquicklonger")}
#: the paper preset each one extends (its committed measured file is what step 48 is compared with)
SHORT = {"paper": PAPER, "paper-quick": PAPER_QUICK}
#: the figure's name for a model (others by their settings' name, e.g. the tiny GPT-2's)
MODEL_NAMES = {"smollm2": "SmolLM2-135M-Instruct"}
#: what the time table reports, besides pass@k at every k measured
METRICS = ("pass@1_hard", "entropy", "margin", "weight_distance")


def over_time(evals: pd.DataFrame, start: int) -> pd.DataFrame:
    """Each arm's change from step ``start`` at every later evaluation, seed by seed: mean and 95% t interval over the
    seeds that hold both steps (the same run at two lengths, so the pair is within a seed)."""
    ks = sorted((c for c in evals.columns if c.startswith("pass@") and c[5:].isdigit()), key=lambda c: int(c[5:]))
    metrics = [*ks, *(m for m in METRICS if m in evals.columns)]
    rows = []
    for method, run in evals.groupby("method", sort=False):
        if not (run.step == start).any():
            raise ValueError(f"real_model_longer: {method} has no evaluation at step {start}")
        run = run.set_index(["seed", "step"])
        first = run.xs(start, level="step")
        for step in sorted(s for s in run.index.get_level_values("step").unique() if s > start):
            later = run.xs(step, level="step")
            seeds = sorted(set(later.index) & set(first.index))
            for metric in metrics:
                diff = (later.loc[seeds, metric] - first.loc[seeds, metric]).to_numpy(float)
                mean, half = ci95_t(diff)
                rows.append({"method": method, "step": int(step), "from": start, "metric": metric,
                             "seeds": len(seeds), "value": float(later.loc[seeds, metric].mean()),
                             "start": float(first.loc[seeds, metric].mean()), "diff": mean, "lo": mean - half,
                             "hi": mean + half})
    return pd.DataFrame(rows)


def reproduction(evals: pd.DataFrame, committed: pd.DataFrame, step: int) -> pd.DataFrame:
    """Per method and seed held by both: the largest absolute difference over the pass@k columns, entropy and weight
    distance between this run's evaluation at ``step`` and the committed shorter run's."""
    columns = [c for c in evals.columns if (c.startswith("pass@") or c in ("entropy", "weight_distance"))
               and c in committed.columns]
    mine = evals[evals.step == step].set_index(["method", "seed"])
    theirs = committed[committed.step == step].set_index(["method", "seed"])
    both = sorted(set(mine.index) & set(theirs.index))
    return pd.DataFrame([{"method": m, "seed": s, "max_abs_diff": float(np.max(np.abs(
        mine.loc[(m, s), columns].to_numpy(float) - theirs.loc[(m, s), columns].to_numpy(float))))}
        for m, s in both])


def groups(folder: Path, runs: list[tuple[str, int]]) -> pd.DataFrame | None:
    """Per run and training step, the fraction of the step's prompt groups whose rollouts all scored the same (all
    right, all wrong: no signal for a group-relative advantage) and the rest (mixed), from the rollout logs the
    training phase writes (``OUT/rollouts/METHOD_seedN.csv``; not committed). None where a run's log is missing."""
    frames = []
    for method, seed in runs:
        path = folder / f"{method}_seed{seed}.csv"
        if not path.is_file():
            return None
        g = pd.read_csv(path).groupby(["step", "group"]).reward.agg(["min", "max"]).reset_index()
        same = g["min"] == g["max"]
        g = g.assign(mixed=~same, all_right=same & (g["min"] >= 1.0), all_wrong=same & (g["max"] <= 0.0))
        frames.append(g.groupby("step")[["mixed", "all_right", "all_wrong"]].mean().reset_index()
                      .assign(method=method, seed=seed))
    return pd.concat(frames, ignore_index=True)[["method", "seed", "step", "mixed", "all_right", "all_wrong"]]


def questions(table: pd.DataFrame) -> pd.DataFrame:
    """Each evaluation question's count of correct samples at every evaluation of every run (the runs' ``eval`` rows:
    method, seed, step, prompt, correct, n), what pass@k and ``churn`` are computed from."""
    evals = table[table.kind == "eval"]
    out = evals[["method", "seed", "step", "prompt", "correct", "n"]].astype({"seed": int, "step": int, "prompt": int,
                                                                            "correct": int, "n": int})
    return out.sort_values(["method", "seed", "step", "prompt"]).reset_index(drop=True)


def churn(per_question: pd.DataFrame, start: int, threshold: float = 0.25) -> pd.DataFrame:
    """Per arm and later step, how its evaluation questions moved from step ``start``, each question paired with itself
    in the same seed: the mean pass rate and E[p (1 - p)] (= pass@2 - pass@1: how far the rates sit from 0 and 1) at
    both steps, the share of questions at p >= 0.9 and at p = 0, and how many rose or fell by more than ``threshold``
    (a net change near 0 with many moves both ways is churn, not a stop)."""
    rows = []
    for method, part in per_question.groupby("method", sort=False):
        rate = part.assign(p=part.correct / part.n).pivot_table(index=["seed", "prompt"], columns="step", values="p")
        if start not in rate.columns:
            raise ValueError(f"real_model_longer: {method} has no evaluation at step {start}")
        for step in sorted(c for c in rate.columns if c > start):
            pair = rate[[start, step]].dropna()
            a, b = pair[start], pair[step]
            rows.append({"method": method, "from": start, "step": int(step), "questions": len(pair),
                         "mean_from": float(a.mean()), "mean_to": float(b.mean()),
                         "spread_from": float((a * (1 - a)).mean()), "spread_to": float((b * (1 - b)).mean()),
                         "solved_from": float((a >= 0.9).mean()), "solved_to": float((b >= 0.9).mean()),
                         "never_from": float((a == 0).mean()), "never_to": float((b == 0).mean()),
                         "up": int((b - a > threshold).sum()), "down": int((a - b > threshold).sum()),
                         "mean_abs_change": float((b - a).abs().mean())})
    return pd.DataFrame(rows)


def by_part(per_question: pd.DataFrame, base: pd.DataFrame, labels: list[str], per_part: int) -> pd.DataFrame:
    """Per arm, evaluation and part of the task (``labels``: the parts in the questions' order, ``per_part`` questions
    each): the mean pass rate, the share of questions solved at least once in their n samples (pass@n, the largest k
    measured) and the share at p >= 0.9, over every question x seed; the base model's evaluation (``base``: prompt,
    correct, n) first as method "base" at step 0. Where the arms' large-k values differ, this says in which part."""
    if len(labels) * per_part != base.prompt.nunique() or base.prompt.max() >= len(labels) * per_part:
        raise ValueError(f"real_model_longer: {len(labels)} parts x {per_part} questions do not cover the "
                         f"{base.prompt.nunique()} evaluation questions")
    rows = pd.concat([base[["prompt", "correct", "n"]].assign(method="base", seed=0, step=0),
                      per_question[["method", "seed", "step", "prompt", "correct", "n"]]], ignore_index=True)
    p = rows.correct / rows.n
    rows = rows.assign(part=[labels[i] for i in rows.prompt // per_part], pass_rate=p, solved=rows.correct > 0,
                       high=p >= 0.9)
    out = rows.groupby(["method", "step", "part"], sort=False).agg(
        questions=("prompt", "size"), seeds=("seed", "nunique"), pass_rate=("pass_rate", "mean"),
        solved=("solved", "mean"), high=("high", "mean")).reset_index()
    order = {label: i for i, label in enumerate(labels)}
    rank = {"method": lambda c: c.where(c == "base", "~" + c), "part": lambda c: c.map(order)}  # base first
    return out.sort_values(["method", "step", "part"], key=lambda c: rank.get(c.name, lambda x: x)(c),
                           kind="stable").reset_index(drop=True)


def figure(measured: pd.DataFrame, prediction: pd.DataFrame, path: Path, ks: tuple[int, ...], *, title: str,
           steps_label: str, questions: int) -> Path:
    """pass@k against the training step, one panel per k: each arm's measured mean over seeds with its 95% t interval
    (``measured``: the shorter design's evaluations and the longer runs', one table) and the simulator's prediction
    (``prediction``: method, step, k, simulated, ci95) at the steps it was made for."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fadesim.lab.plots import save_figure

    fig, axes = plt.subplots(1, len(ks), figsize=(5.2 * len(ks), 3.8), squeeze=False)
    for ax, k in zip(axes[0], ks):
        for method, part in measured.groupby("method", sort=False):
            cells = [(step, *ci95_t(g[f"pass@{k}"].to_numpy(float))) for step, g in part.groupby("step")]
            steps, mean, half = (np.array(c, dtype=float) for c in zip(*cells))
            half = np.where(np.isfinite(half), half, 0.0)
            ax.errorbar(steps, mean, yerr=half, marker="o", capsize=3, label=f"{method}: measured (95% t over seeds)")
            sim = prediction[(prediction.method == method) & (prediction.k == k)].sort_values("step")
            if len(sim):
                ax.errorbar(sim.step, sim.simulated, yerr=sim.ci95, marker="s", linestyle="--", capsize=3,
                            label=f"{method}: simulated, matched at step {int(sim.step.min())}")
        ax.set_xlabel(f"training step ({steps_label})")
        ax.set_ylabel(f"pass@{k} on the {questions} evaluation questions")
        ax.set_title(f"pass@{k}")
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    # below the panels, clear of the curves and the axis labels, however many arms there are
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, frameon=False)
    return save_figure(fig, path, dpi=110, bbox_inches="tight")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--preset", choices=sorted(PRESETS), default="paper")
    ap.add_argument("--advantages", default="grpo", help="the arms (default grpo)")
    added_runs_arguments(ap, "real_model_longer", "where the shorter runs' files are and these are written")
    args = ap.parse_args(argv)
    s, short = PRESETS[args.preset], SHORT[args.preset]
    try:
        out, figures, table, evals = added_runs(s, args, parse_advantages(args.advantages), short is PAPER,
                                                "real_model_longer")
    except (ValueError, FileNotFoundError) as err:
        print(err, file=sys.stderr)
        return 2
    if evals is None:  # the train phase
        return 0
    start = short.steps
    time = over_time(evals[evals.step > 0], start)
    committed_path = figures / short.file("measured.csv")
    shorter = pd.read_csv(committed_path) if committed_path.is_file() else None
    if shorter is not None:
        same = reproduction(evals, shorter, start)
        if len(same):
            print(f"step {start} against the committed {committed_path.name} (same arm, seed and first {start} "
                  f"steps): largest absolute difference {same.max_abs_diff.max():.3g} over "
                  f"{len(same)} runs")
            time = time.assign(reproduced=float(same.max_abs_diff.max()))
    # an arm scored now replaces its own rows; the other arms' stay (their units may be gone: the files are their
    # record), refused where they were scored on another base
    try:
        measured = kept(figures / "real_model_longer_measured.csv", evals)
        steps = kept(figures / "real_model_longer_steps.csv", step_rows(table))
        time_all = kept(figures / "real_model_longer_time.csv", time)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    write_atomic(figures / "real_model_longer_measured.csv", measured)
    write_atomic(figures / "real_model_longer_steps.csv", steps)
    write_atomic(figures / "real_model_longer_time.csv", time_all)
    per_question = kept(figures / "real_model_longer_questions.csv", questions(table))
    write_atomic(figures / "real_model_longer_questions.csv", per_question)
    parts = by_part(per_question, base_counts(s, ResultStore(out)), part_labels(s), s.eval_prompts)
    write_atomic(figures / "real_model_longer_parts.csv", parts)
    print(f"each part of the task (pass rate; solved: at least once in {s.eval_samples} samples; high: p >= 0.9):")
    print(parts.pivot_table(index=["method", "step"], columns="part", values=["pass_rate", "solved"], sort=False)
          .round(3).to_string())
    moved = churn(per_question, start)
    print(f"evaluation questions from step {start}, each paired with itself (spread: E[p (1 - p)]; up / down: moved "
          "by more than 0.25):")
    print(moved.round(3).to_string(index=False))
    signal = groups(out / "rollouts", sorted({(m, int(s)) for m, s in zip(table.method, table.seed)}))
    if signal is not None:
        signal = kept(figures / "real_model_longer_groups.csv", signal)
        write_atomic(figures / "real_model_longer_groups.csv", signal)
        bins = signal.assign(steps=(signal.step - 1) // 12 * 12 + 1).groupby(["method", "steps"], sort=False)[
            ["mixed", "all_right", "all_wrong"]].mean()
        print("prompt groups a step, by 12 steps (mixed: the only ones a group-relative advantage learns from):")
        print(bins.round(3).to_string())
    show = time_all.assign(cell=[f"{v:.3f} ({d:+.3f}, {lo:+.3f} to {hi:+.3f})" for v, d, lo, hi in
                             zip(time_all.value, time_all["diff"], time_all.lo, time_all.hi)])
    print(f"each arm at a later step (its change from step {start} within each seed, 95% t interval over the seeds):")
    print(show.pivot_table(index=["method", "step"], columns="metric", values="cell", aggfunc="first",
                           sort=False).to_string())
    print(f"wrote {figures / 'real_model_longer_measured.csv'}, _steps.csv and _time.csv "
          f"({len(measured.groupby(['method', 'seed']))} runs, {len(table.groupby(['method', 'seed']))} scored now)")
    prediction_path = figures / "real_model_longer_prediction.csv"
    if prediction_path.is_file():  # the committed prediction (fadesim predict at 1x, 1.5x and 2x): the figure
        early = shorter[shorter.method.isin(measured.method) & (shorter.step < start)] if shorter is not None else None
        both = (pd.concat([early, measured[measured.step > 0]], ignore_index=True) if early is not None
                else measured)
        both = both[both.seed < short.seeds]  # every arm's course over the design's own seeds (as the export reads it)
        drawn = figure(both, pd.read_csv(prediction_path), figures / "real_model_longer.png", (1, s.ks()[-1]),
                       title=f"{MODEL_NAMES.get(s.model, s.model)}, the {args.preset} preset trained to {s.steps} steps ({short.steps} in its "
                       "design)", steps_label=f"{s.prompts_per_step} prompts x {s.G} rollouts, AdamW lr {s.lr:g}",
                       questions=int(per_question.prompt.nunique()))
        print(f"figure: {drawn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
