"""Calibration of the llm regime: a published pass@k curve, the fitted difficulty distribution, and the task.

Target: Codex-12B, 1-shot, raw pass@k on the APPS test set (arXiv 2107.03374, Table 3; k = 1, 5, 1000 per
difficulty split; `fadesim/data/pass_at_k_codex_apps.csv`). For each split ``fadesim.tasks.calibrate`` fits
a LogUniform pass-rate distribution plus a fraction of never-solved prompts (3 parameters, 3 points) and reports
the fit error per k; the llm regime's tasks (`make_task(name, regime="llm")`) are built from the introductory
split's fit by stratified sampling, and their exact initial pass@k (k = 1..1024) is drawn next to the target.

    python experiments/calibration.py            # seconds; writes paper_figures/calibration/calibration.png and .csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fadesim.lab.plots import save_figure
from fadesim.lab.results import write_atomic
from fadesim.tasks import calibrate, load_pass_at_k, make_task, task_pass_at_k

ROOT = Path(__file__).resolve().parents[1]

SPLITS = ("introductory", "interview", "competition")
KS = [2**j for j in range(11)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", default=str(ROOT / "paper_figures" / "calibration"))
    ap.add_argument("--n-prompts", type=int, default=512, help="prompts of the llm-regime task drawn for comparison")
    args = ap.parse_args(argv)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    rows = []
    for i, split in enumerate(SPLITS):
        target = load_pass_at_k(split=split)
        fit = calibrate(target)
        print(f"{split}: fit {', '.join(f'{k} = {v:.4g}' for k, v in fit.params.items())}; error per k: "
              + ", ".join(f"pass@{k} {e:+.1e}" for k, e in fit.errors.items()))
        grid = np.unique(np.round(np.logspace(0, 10, 60, base=2)).astype(int))
        curve = fit.distribution.pass_at_k(grid)
        ax.plot(grid, curve, color=f"C{i}", label=f"{split}: fitted distribution")
        ax.plot(list(target), list(target.values()), "o", color=f"C{i}", ms=6, label=f"{split}: published (Table 3)")
        rows += [{"split": split, "k": int(k), "curve": "fitted distribution", "pass_at_k": float(v)}
                 for k, v in zip(grid, curve)]
        rows += [{"split": split, "k": k, "curve": "published", "pass_at_k": v} for k, v in target.items()]
    task = make_task("bandit", regime="llm", n_prompts=args.n_prompts, seed=0)
    got = task_pass_at_k(task, KS)
    ax.plot(KS, list(got.values()), "k--", marker="x", ms=5, label=f"llm-regime task ({args.n_prompts} prompts)")
    rows += [{"split": "introductory", "k": k, "curve": "llm-regime task", "pass_at_k": v} for k, v in got.items()]
    print("llm-regime task (introductory fit, stratified draws): " + ", ".join(f"pass@{k} {v:.4f}" for k, v in got.items()))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("pass@k")
    ax.set_title("Codex-12B on APPS (arXiv 2107.03374, Table 3) and its calibrated tasks", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    path = Path(args.figures) / "calibration.png"
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    write_atomic(path.with_suffix(".csv"), pd.DataFrame(rows))
    print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
