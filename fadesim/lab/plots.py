"""Figure helpers for experiments/: one function per figure kind; each writes the PNG and the CSV behind it."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fadesim.lab.results import write_atomic, write_file_atomic


def mean_ci(frame: pd.DataFrame, by: Sequence[str], value: str) -> pd.DataFrame:
    """Mean and 95% normal-approximation confidence half-width of ``value`` over seeds, grouped by ``by``."""
    g = frame.groupby(list(by))[value]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["ci95"] = 1.96 * out["std"].fillna(0.0) / np.sqrt(out["count"])
    return out.rename(columns={"mean": value})


def save_figure(fig: plt.Figure, path: str | Path, **savefig: Any) -> Path:
    """Save ``fig`` atomically (the format from the suffix; a crash leaves the old figure or none) and close it."""
    path = Path(path)
    try:
        write_file_atomic(path, lambda fh: fig.savefig(fh, format=path.suffix.lstrip(".") or "png", **savefig),
                          binary=True)
    finally:
        plt.close(fig)
    return path


def _save(fig: plt.Figure, data: pd.DataFrame, path: Path) -> Path:
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    write_atomic(path.with_suffix(".csv"), data)
    return path


#: panels per row of a faceted figure: more facets wrap onto further rows (16 cells in one row are unreadable)
MAX_FACET_COLUMNS = 4


def _facet_axes(n: int, width: float, height: float, **kw) -> tuple[plt.Figure, list[plt.Axes]]:
    """A grid of ``n`` panels, at most MAX_FACET_COLUMNS a row (one row when n <= MAX_FACET_COLUMNS); the unused
    cells of the last row are removed. Returns the figure and the n axes in reading order."""
    cols = min(n, MAX_FACET_COLUMNS)
    rows = -(-n // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kw)
    axes = list(grid.ravel())
    for ax in axes[n:]:
        ax.remove()
    return fig, axes[:n]


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
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    # outside the axes, so it never hides a curve
    fig.legend(handles, labels, title=hue, fontsize=8, title_fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))


def pass_at_k_figure(final: pd.DataFrame, *, line: str, line_label: str, facet: str, title: str,
                     path: str | Path, base: pd.DataFrame | None = None) -> Path:
    """The pass@k spectrum: pass@k (mean +- 95% CI over seeds) against k on a log2 axis, one panel per ``facet``
    value, one line per ``line`` value (the accuracy-diversity trade-off: pass@1 at the left, coverage at the right).
    ``base``: rows of the policy before training, with the same ``facet`` column: drawn per panel as a black dashed
    line (its mean), so a curve that crosses below it at large k shows (its CSV rows have ``line`` "base")."""
    ks = sorted(int(c.split("@")[1]) for c in final.columns if c.startswith("pass@") and c.split("@")[1].isdigit())
    facets = list(dict.fromkeys(final[facet]))
    fig, axes = _facet_axes(len(facets), 4.2, 3.4, sharey=True)
    rows = []
    values = sorted(final[line].unique())
    cmap = plt.get_cmap("coolwarm")
    for ax, fv in zip(axes, facets):
        part = final[final[facet] == fv]
        for i, lv in enumerate(values):
            sub = part[part[line] == lv]
            if sub.empty:
                continue
            stats = [mean_ci(sub.assign(_k=k), ["_k"], f"pass@{k}").rename(columns={f"pass@{k}": "value"})
                     for k in ks]
            st = pd.concat(stats, ignore_index=True)
            # one colour per line value in every panel: a colour map over numbers, tab10 over names
            colour = (cmap(i / max(1, len(values) - 1)) if np.issubdtype(np.asarray(values).dtype, np.number)
                      else plt.get_cmap("tab10")(i % 10))
            ax.errorbar(st["_k"], st["value"], yerr=st["ci95"], marker="o", ms=2.5, capsize=2, color=colour,
                        label=f"{lv:g}" if isinstance(lv, (int, float, np.floating)) else str(lv))
            rows.append(st.rename(columns={"_k": "k"}).assign(**{facet: fv, line: lv}))
        start = None if base is None else base[base[facet] == fv]
        if start is not None and not start.empty:
            ref = [float(start[f"pass@{k}"].mean()) for k in ks]
            ax.plot(ks, ref, "k--", lw=1.2, label="base (step 0)")
            rows.append(pd.DataFrame({"k": ks, "value": ref, facet: fv, line: "base"}))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k (samples)")
        ax.set_title(str(fv), fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[::MAX_FACET_COLUMNS]:
        ax.set_ylabel("pass@k")
    legend = {}  # every line value drawn in any panel (a panel may lack some: e.g. each cell's own best method)
    for ax in axes:
        for handle, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, handle)
    labels, handles = list(legend), list(legend.values())
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.legend(handles, labels, title=line_label, fontsize=8, title_fontsize=8, loc="center left",
               bbox_to_anchor=(1.0, 0.5))
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))


def over_time_figure(frame: pd.DataFrame, *, metric: str, label: str, line: str, line_label: str,
                     facet: str, title: str, path: str | Path) -> Path:
    """``metric`` against training step, one panel per ``facet`` value, one line per ``line`` value (numbers or
    names: the legend shows either)."""
    facets = list(dict.fromkeys(frame[facet]))
    fig, axes = _facet_axes(len(facets), 4.2, 3.3)
    rows = []
    cmap = plt.get_cmap("coolwarm")
    values = sorted(frame[line].unique())
    for ax, fv in zip(axes, facets):
        part = frame[frame[facet] == fv]
        for i, lv in enumerate(values):
            s = mean_ci(part[part[line] == lv], ["step"], metric)
            color = cmap(i / max(1, len(values) - 1))
            ax.plot(s["step"], s[metric], color=color, label=f"{lv:g}" if isinstance(lv, numbers.Real) else str(lv))
            ax.fill_between(s["step"], s[metric] - s["ci95"], s[metric] + s["ci95"], color=color, alpha=0.15)
            rows.append(s.assign(**{facet: fv, line: lv}))
        ax.set_title(str(fv), fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].legend(title=line_label, fontsize=7, title_fontsize=8, ncol=2)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))


def advantage_card_figure(prof, a: float, b: float, path: str | Path) -> Path:
    """Four panels: A+-(k); E[M+-](p); balance and ESS per group vs p; mass density under Beta(a, b)."""
    p = np.linspace(0.0, 1.0, 201)
    kk = np.arange(prof.G + 1)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    axes[0].plot(kk, prof.a_pos, "o-", color="tab:green", label="A+ (correct)")
    axes[0].plot(kk, prof.a_neg, "s-", color="tab:red", label="A- (incorrect)")
    axes[0].axhline(0, color="k", lw=0.5)
    axes[0].set(xlabel=f"correct rollouts k of G = {prof.G}", ylabel="advantage")
    pos, neg = prof.expected_positive_mass(p), prof.expected_negative_mass(p)
    axes[1].plot(p, pos, color="tab:green", label="E[M+]")
    axes[1].plot(p, neg, color="tab:red", label="E[M-]")
    axes[1].set(xlabel="prompt pass rate p", ylabel="expected mass per group")
    axes[2].plot(p, prof.balance(p), color="tab:purple", label="sign balance")
    axes[2].plot(p, prof.ess_fraction(p), color="tab:gray", ls="--", label="ESS per group")
    axes[2].set(xlabel="prompt pass rate p", ylabel="balance / ESS fraction", ylim=(-1.05, 1.05))
    inner = p[1:-1]
    axes[3].plot(inner, prof.mass_density(inner, a, b), color="tab:blue", label=f"p ~ Beta({a:g}, {b:g})")
    axes[3].axvline(prof.peak(), color="k", ls=":", label=f"peak p* = {prof.peak():.2f}")
    axes[3].set(xlabel="prompt pass rate p", ylabel="mass density over difficulty")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"advantage card: {prof.name} {dict(prof.params) or ''} (G = {prof.G})", fontsize=11)
    fig.tight_layout()
    data = pd.DataFrame({"p": p, "expected_positive_mass": pos, "expected_negative_mass": neg,
                         "balance": prof.balance(p), "ess_fraction": prof.ess_fraction(p)})
    return _save(fig, data, Path(path))


def simulation_figure(frame: pd.DataFrame, path: str | Path, title: str) -> Path:
    """pass@1, entropy, signed masses and logit norm over training (mean +- 95% CI over seeds)."""
    panels = [("pass@1", "pass@1"), ("entropy", "policy entropy (nats)"),
              ("positive_mass", "mass per prompt"), ("logit_norm", "logit norm")]
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.2))
    rows = []
    for ax, (metric, label) in zip(axes, panels):
        metrics = [metric, "negative_mass"] if metric == "positive_mass" else [metric]
        for m in metrics:
            s = mean_ci(frame.dropna(subset=[m]), ["step"], m)
            ax.plot(s["step"], s[m], label=m.replace("_", " "))
            ax.fill_between(s["step"], s[m] - s["ci95"], s[m] + s["ci95"], alpha=0.2)
            rows.append(s.rename(columns={m: "value"}).assign(metric=m))
        ax.set(xlabel="training step", ylabel=label)
        ax.grid(alpha=0.3)
        if len(metrics) > 1:
            ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return _save(fig, pd.concat(rows, ignore_index=True), Path(path))


def method_comparison_figure(table: pd.DataFrame, *, facet: str, panels: Sequence[tuple[str, str, str]],
                             title: str, path: str | Path) -> Path:
    """Categorical comparison: one row of panels per facet value, each ``metric`` (+- its CI column) per method."""
    facets = list(dict.fromkeys(table[facet]))
    fig, axes = plt.subplots(len(facets), len(panels), figsize=(4.8 * len(panels), 2.6 * len(facets) + 0.6),
                             squeeze=False)
    for i, fv in enumerate(facets):
        part = table[table[facet] == fv].reset_index(drop=True)
        for j, (metric, err, label) in enumerate(panels):
            ax = axes[i][j]
            colors = ["tab:orange" if m.startswith("fade") else "tab:blue" for m in part.method]
            yerr = part[err].replace(np.inf, np.nan).fillna(0.0)
            ax.bar(np.arange(len(part)), part[metric].replace(np.inf, np.nan), yerr=yerr, color=colors, capsize=2)
            ax.set_xticks(np.arange(len(part)), part.method, rotation=60, ha="right", fontsize=7)
            ax.set_ylabel(label, fontsize=8)
            ax.set_title(str(fv), fontsize=9)
            ax.grid(alpha=0.3, axis="y")
    # the title in a band 0.45 inch tall above the first row, whatever the number of rows (the default y = 0.98 of
    # a tall figure lands on the first row's titles)
    height = fig.get_figheight()
    fig.suptitle(title, fontsize=11, y=1 - 0.1 / height, va="top")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))
    return _save(fig, table, Path(path))


def prediction_figure(table: pd.DataFrame, *, x: str, x_label: str, panels: Sequence[tuple[str, str]], facet: str,
                      title: str, path: str | Path) -> Path:
    """Predicted (line) next to measured (points, 95% CI) against ``x``: one row per ``facet`` value, one panel
    per quantity. ``table`` has columns facet, x, quantity, measured, ci95 and predicted (NaN: no prediction)."""
    facets = list(dict.fromkeys(table[facet]))
    fig, axes = plt.subplots(len(facets), len(panels), figsize=(3.5 * len(panels), 3.0 * len(facets)), squeeze=False)
    for row, fv in zip(axes, facets):
        for ax, (quantity, label) in zip(row, panels):
            part = table[(table[facet] == fv) & (table["quantity"] == quantity)].sort_values(x)
            ax.errorbar(part[x], part["measured"], yerr=part["ci95"], fmt="o", ms=3, capsize=2, color="C0",
                        label="simulated (mean, 95% CI)")
            if part["predicted"].notna().any():
                ax.plot(part[x], part["predicted"], color="C3", label="second-order theory")
            ax.set_title(f"{fv}", fontsize=9)
            ax.set_xlabel(x_label)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    legend = {}
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.legend(legend.values(), legend.keys(), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2)
    return _save(fig, table, Path(path))


def forecast_figure(table: pd.DataFrame, trajectories: pd.DataFrame, published: pd.DataFrame, path: str | Path,
                    title: str) -> Path:
    """``fadesim predict``'s figure: predicted pass@k against log k per advantage (solid, 95% CI; base black),
    the given (published or the user's) rows dashed with dots, and each advantage's entropy over training up to the predicted length.
    ``table``: label, k, pass_at_k, ci95; ``trajectories``: label, step, entropy; ``published``: method, k,
    pass_at_k. The CSV beside the PNG holds ``table``."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    labels = list(dict.fromkeys(table.label))
    colors = {lab: ("black" if lab == "base" else f"C{i % 10}") for i, lab in enumerate(labels)}
    for lab in labels:
        part = table[table.label == lab].sort_values("k")
        left.plot(part.k, part.pass_at_k, "-", color=colors[lab], label=f"{lab} (predicted)" if lab != "base"
                  else "base (calibrated)")
        left.fill_between(part.k, part.pass_at_k - part.ci95, part.pass_at_k + part.ci95, color=colors[lab],
                          alpha=0.15)
    for i, (method, part) in enumerate(published.groupby("method", sort=False)):
        part = part.sort_values("k")
        color = "black" if method == "base" else f"C{(len(labels) + i) % 10}"
        left.plot(part.k, part.pass_at_k, "--", marker="o", ms=3, color=color, alpha=0.8, label=f"{method} (given)")
    left.set_xscale("log", base=2)
    left.set(xlabel="k (log scale)", ylabel="pass@k", title="pass@k at the predicted length")
    left.grid(alpha=0.3)
    left.legend(fontsize=7, loc="lower right")
    for lab in labels:
        if lab == "base":
            continue
        part = trajectories[trajectories.label == lab]
        right.plot(part.step, part.entropy, color=colors[lab], label=lab)
    right.set(xlabel="training step", ylabel="policy entropy (nats)", title="entropy during training")
    right.grid(alpha=0.3)
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, table, Path(path))
