"""Figure helpers for experiments/: one function per figure kind; each writes the PNG and the CSV behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fadesim.results import write_atomic  # noqa: E402


def mean_ci(frame: pd.DataFrame, by: Sequence[str], value: str) -> pd.DataFrame:
    """Mean and 95% normal-approximation confidence half-width of ``value`` over seeds, grouped by ``by``."""
    g = frame.groupby(list(by))[value]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["ci95"] = 1.96 * out["std"].fillna(0.0) / np.sqrt(out["count"])
    return out.rename(columns={"mean": value})


def _save(fig: plt.Figure, data: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_atomic(path.with_suffix(".csv"), data)
    return path


def tradeoff_figure(final: pd.DataFrame, *, x: str, x_label: str, panels: Sequence[tuple[str, str]],
                    hue: str, title: str, path: str | Path) -> Path:
    """A row of panels, each ``metric`` (mean +- 95% CI over seeds) against ``x``, one line per ``hue`` value."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.3), squeeze=False)
    rows = []
    for ax, (metric, label) in zip(axes[0], panels):
        for key, part in final.groupby(hue):
            if part[metric].isna().all():
                continue
            s = mean_ci(part, [x], metric)
            ax.errorbar(s[x], s[metric], yerr=s["ci95"], marker="o", ms=3, capsize=2, label=str(key))
            rows.append(s.assign(metric=metric, **{hue: key}).rename(columns={metric: "value"}))
        ax.set_xlabel(x_label)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0][0].legend(title=hue, fontsize=8, title_fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))


def over_time_figure(frame: pd.DataFrame, *, metric: str, label: str, line: str, line_label: str,
                     facet: str, title: str, path: str | Path) -> Path:
    """``metric`` against training step, one panel per ``facet`` value, one line per ``line`` value."""
    facets = list(dict.fromkeys(frame[facet]))
    fig, axes = plt.subplots(1, len(facets), figsize=(4.2 * len(facets), 3.3), squeeze=False)
    rows = []
    cmap = plt.get_cmap("coolwarm")
    values = sorted(frame[line].unique())
    for ax, fv in zip(axes[0], facets):
        part = frame[frame[facet] == fv]
        for i, lv in enumerate(values):
            s = mean_ci(part[part[line] == lv], ["step"], metric)
            color = cmap(i / max(1, len(values) - 1))
            ax.plot(s["step"], s[metric], color=color, label=f"{lv:g}")
            ax.fill_between(s["step"], s[metric] - s["ci95"], s[metric] + s["ci95"], color=color, alpha=0.15)
            rows.append(s.assign(**{facet: fv, line: lv}))
        ax.set_title(str(fv), fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(title=line_label, fontsize=7, title_fontsize=8, ncol=2)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))
