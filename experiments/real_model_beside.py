"""Advantages measured beside the paper experiment on SmolLM2 (issue 40): arms its design data lacked, trained under
the paper preset's settings exactly (``real_model.PAPER``: the graded task, 8 prompts x 8 rollouts a step, AdamW lr
1e-5, 48 steps, evaluated at steps 12, 24, 36 and 48) on the same seeds, so that each run pairs with the committed
GRPO run of its seed (same prompts drawn at the first step, same evaluation questions and base measurement)::

    python experiments/real_model_beside.py --phase train   # resumable; about 10 min a run on 2 cores
    python experiments/real_model_beside.py --phase score   # real_model_beside_{steps,measured,paired}.csv
    python experiments/real_model_beside.py --preset paper-quick --out /tmp/beside   # the pipeline, tiny GPT-2

The runs are result units under the paper experiment's own unit specification (``real_model.run_specs``), so a run
here is the run ``real_model.py --preset paper`` would have made of the same arm. The score phase writes the runs'
evaluations (``real_model.eval_table``: pass@k, pass@1_hard, entropy, margin, weight geometry) and step rows beside
the paper experiment's files, checks that the base it measures is the one the paper's committed runs were scored
against, and prints each arm's paired difference from GRPO (same seed) at every evaluation, with its 95% t interval
over the seeds. ``experiments/real_model_curves.py --beside`` then puts the arms into the literature protocol's schema
beside the paper experiment's, for ``experiments/literature.py`` to score. An arm scored now replaces its own rows in
those files and leaves the other arms' rows as they are (where they were scored on the same base), so an arm added
later is scored on its own without retraining the ones before it.

The prediction for each arm is the literature protocol's (``fadesim predict``), committed before its runs; the
design's README (``paper_figures/real_model/README.md``) holds the prediction and the outcome.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

from real_model import (PAPER, PRESETS, added_runs, added_runs_arguments, kept, parse_advantages,  # noqa: E402
                        same_base, step_rows)

from fadesim.lab.results import write_atomic  # noqa: E402
from fadesim.lab.stats import ci95_t  # noqa: E402

#: the arms measured beside the paper experiment: RS-GRPO at its paper's beta (arXiv 2509.24261; the registry default)
#: and Dr. GRPO (arXiv 2503.20783), RS's beta -> 0 limit, which separates its risk-seeking from its missing std
#: normalisation, and the analytic pass@K advantage (arXiv 2508.10751, K = 4 of G = 8), built to trade pass@1 for
#: pass@K. The score phase writes the rows of the arms it is given and keeps those of the other arms already in the
#: files (scored on the same base; their units may be gone, the committed files are their record)
DEFAULT_ARMS = "risk_sensitive:beta=2,dr_grpo,pass_at_k:K=4"
#: what the paired table reports (each arm minus GRPO of the same seed), besides pass@k at the largest k measured;
#: a metric the preset does not measure (pass@8 with 4 samples) is left out
PAIRED = ("pass@1", "pass@2", "pass@8", "pass@1_hard", "entropy", "weight_distance")


def arms(text: str, preset: str) -> list[tuple[str, str, dict]]:
    """The arms to train: parsed entries, none of them the paper experiment's own (those are measured already)."""
    s = PRESETS[preset]
    out = parse_advantages(text)
    taken = {label for label, _, _ in s.arms()}
    twice = [label for label, _, _ in out if label in taken]
    if twice:
        raise ValueError(f"real_model_beside: {', '.join(twice)} is already an arm of the paper experiment "
                         f"(--preset {preset}); measure only arms it lacks")
    if not out:
        raise ValueError("real_model_beside: --advantages names no arm")
    return out


def paired(evals: pd.DataFrame, reference: pd.DataFrame, labels: list[str], metrics: list[str] | None = None
           ) -> pd.DataFrame:
    """Each arm minus GRPO of the same seed at every evaluation step: mean and 95% t interval over the seeds both
    hold (``reference``: the paper experiment's measured rows, GRPO's among them). ``metrics``: the columns compared
    (default ``PAIRED`` with pass@k at the largest k measured, those both tables hold)."""
    grpo = reference[reference.method == "grpo"].set_index(["seed", "step"])
    if metrics is None:
        top = max(int(c[5:]) for c in evals.columns if c.startswith("pass@") and c[5:].isdigit())
        metrics = [m for m in (*PAIRED[:3], f"pass@{top}", *PAIRED[3:]) if m in evals.columns and m in grpo.columns]
        metrics = list(dict.fromkeys(metrics))
    rows = []
    for label in labels:
        run = evals[(evals.method == label) & (evals.step > 0)].set_index(["seed", "step"])
        for step in sorted(run.index.get_level_values("step").unique()):
            seeds = sorted(set(run.xs(step, level="step").index) & set(grpo.xs(step, level="step").index))
            for metric in metrics:
                diff = np.array([run.loc[(seed, step), metric] - grpo.loc[(seed, step), metric] for seed in seeds])
                mean, half = ci95_t(diff)  # half-width inf for one seed
                rows.append({"method": label, "step": int(step), "metric": metric, "seeds": len(diff),
                             "arm": float(run.xs(step, level="step").loc[seeds, metric].mean()),
                             "grpo": float(grpo.xs(step, level="step").loc[seeds, metric].mean()),
                             "diff": mean, "lo": mean - half, "hi": mean + half})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--preset", choices=sorted(PRESETS), default="paper",
                    help="the paper experiment's settings the arms run under (default paper)")
    ap.add_argument("--advantages", default=DEFAULT_ARMS, help=f"the arms (default {DEFAULT_ARMS})")
    added_runs_arguments(ap, "real_model_beside", "where the paper experiment's files are and these are written")
    args = ap.parse_args(argv)
    s = PRESETS[args.preset]
    try:
        chosen = arms(args.advantages, args.preset)
        _, figures, table, evals = added_runs(s, args, chosen, s is PAPER, "real_model_beside")
    except (ValueError, FileNotFoundError) as err:
        print(err, file=sys.stderr)
        return 2
    if evals is None:  # the train phase
        return 0
    steps = step_rows(table)
    try:  # the arms not scored now stay in the files, if they were scored on this base
        measured = kept(figures / "real_model_beside_measured.csv", evals)
        steps = kept(figures / "real_model_beside_steps.csv", steps)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    reference_path = figures / s.file("measured.csv")
    if reference_path.is_file():
        reference = pd.read_csv(reference_path)
        if not same_base(evals, reference):
            print(f"real_model_beside: the base measured now is not the one {reference_path} was scored against; "
                  "these runs do not pair with the paper experiment's", file=sys.stderr)
            return 2
        pairs = paired(evals, reference, [label for label, _, _ in chosen])
        pairs = kept(figures / "real_model_beside_paired.csv", pairs)
        write_atomic(figures / "real_model_beside_paired.csv", pairs)
        show = pairs.assign(cell=[f"{a:.3f} ({d:+.3f}, {lo:+.3f} to {hi:+.3f})" for a, d, lo, hi in
                                  zip(pairs.arm, pairs["diff"], pairs.lo, pairs.hi)])
        print("each arm (its difference from GRPO of the same seed, 95% t interval over the seeds):")
        print(show.pivot_table(index=["method", "step"], columns="metric", values="cell", aggfunc="first",
                               sort=False).to_string())
    else:
        print(f"real_model_beside: no paper experiment measured at {reference_path}; nothing to pair with",
              file=sys.stderr)
    write_atomic(figures / "real_model_beside_measured.csv", measured)
    write_atomic(figures / "real_model_beside_steps.csv", steps)
    print(f"wrote {figures / 'real_model_beside_measured.csv'} and _steps.csv ({len(table.groupby(['method', 'seed']))} runs scored now)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
