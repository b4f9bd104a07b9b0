"""Step d of the literature protocol: the sign of every published difference, the pass@k error, the summary line."""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fadesim.lab.literature.published import BASE


def sign_score(published: pd.DataFrame, simulated: pd.DataFrame, min_difference: float = 0.01,
               per_seed: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per comparison: for each k published for two rows (method vs base, and every pair of methods)
    whose published difference is at least ``min_difference``, whether the simulated difference has its sign.

    ``published`` and ``simulated``: columns method, k, pass_at_k (simulated: only the simulated methods and base).
    A simulated difference of exactly 0 agrees with no published sign.

    ``per_seed`` (method, k, seed, pass_at_k, and draw where it pools task draws: each seed's value, whose mean is
    ``simulated``'s) adds two columns: ``ci95``, the half-width of the paired 95% Student-t interval of the
    difference over the seeds both rows share (``fadesim.lab.stats.ci95_t`` of the per-seed differences, a seed
    paired within its draw: the seeds' common noise cancels; inf with fewer than two shared seeds), and
    ``resolved``, whether the simulated difference lies outside it. The ``agree`` column and the summary line do not
    depend on it."""
    from fadesim.lab.stats import ci95_t

    pub = {(r.method, int(r.k)): float(r.pass_at_k) for r in published.itertuples()}
    sim = {(r.method, int(r.k)): float(r.pass_at_k) for r in simulated.itertuples()}
    seeds = None
    if per_seed is not None:
        missing = {"method", "k", "seed", "pass_at_k"} - set(per_seed.columns)
        if missing:
            raise ValueError(f"sign_score: per_seed lacks the column(s) {sorted(missing)}")
        key = ["draw", "seed"] if "draw" in per_seed.columns else "seed"  # over task draws: a seed within its draw
        seeds = {(m, int(k)): g.set_index(key).pass_at_k for (m, k), g in per_seed.groupby(["method", "k"])}
    rows = []
    for k in sorted({k for _, k in pub}):
        names = [m for (m, kk) in pub if kk == k and (m, k) in sim]
        for a, b in combinations(sorted(names, key=lambda m: (m != BASE, m)), 2):
            d_pub = pub[(a, k)] - pub[(b, k)]
            if abs(d_pub) < min_difference:
                continue
            d_sim = sim[(a, k)] - sim[(b, k)]
            row = {"k": k, "a": a, "b": b, "published": d_pub, "simulated": d_sim,
                   "agree": bool(np.sign(d_sim) == np.sign(d_pub) and d_sim != 0)}
            if seeds is not None:
                for m in (a, b):
                    if (m, k) not in seeds:
                        raise ValueError(f"sign_score: per_seed has no values for {m!r} at k = {k}, which simulated has")
                diff = (seeds[(a, k)] - seeds[(b, k)]).dropna()  # aligned on the seed
                half = ci95_t(diff)[1]
                row.update(ci95=half, resolved=bool(abs(d_sim) > half))
            rows.append(row)
    columns = ["k", "a", "b", "published", "simulated", "agree"] + (["ci95", "resolved"] if seeds is not None else [])
    return pd.DataFrame(rows, columns=columns)


def mean_abs_error(published: pd.DataFrame, simulated: pd.DataFrame) -> tuple[float, int]:
    """(mean |simulated - published| over the published (method, k) that were simulated, their number)."""
    merged = published.merge(simulated, on=["method", "k"], suffixes=("_pub", "_sim"))
    if merged.empty:
        return float("nan"), 0
    return float(np.mean(np.abs(merged.pass_at_k_sim - merged.pass_at_k_pub))), len(merged)


def resolved_line(comparisons: pd.DataFrame) -> str | None:
    """The line printed before the summary line where the comparisons carry their paired intervals (``sign_score``
    with ``per_seed``): how many of the resolved comparisons agree, and how many are resolved; None without them
    (the first-order path: no seeds; or where some comparison has none, as a ``--compare`` entry partly stored before
    the intervals)."""
    if "resolved" not in comparisons.columns or comparisons.resolved.isna().any():
        return None
    resolved = comparisons[comparisons.resolved.astype(bool)]
    agree, n = int(resolved.agree.sum()), len(resolved)
    pct = f" ({100.0 * agree / n:.1f}%)" if n else ""
    return (f"resolved: {agree}/{n} signs agree{pct} where the simulated difference is outside its paired 95% "
            f"interval over the seeds ({n} of {len(comparisons)} comparisons resolved)")


def length_line(comparisons: pd.DataFrame, methods: Mapping[str, Any]) -> str | None:
    """The line printed before the summary line where some setting reads a method at another length (a published
    method whose ``steps_scale`` is not 1: a training-length setting, issue 40): how many of those settings'
    comparisons agree, and of the comparisons that involve such a method; None where no setting does."""
    if comparisons.empty:
        return None
    longer = {name for name, m in methods.items() if m.steps_scale != 1}
    involved = comparisons.a.isin(longer) | comparisons.b.isin(longer)
    names = sorted(set(comparisons.setting[involved]))
    if not names:
        return None
    within, own = comparisons[comparisons.setting.isin(names)], comparisons[involved]

    def part(rows: pd.DataFrame) -> str:
        return f"{int(rows.agree.sum())}/{len(rows)} ({100.0 * rows.agree.mean():.1f}%)"

    return (f"training length: {part(within)} signs agree over the {len(names)} setting{'s' if len(names) > 1 else ''} "
            f"that read a method at another length (steps_scale != 1); {part(own)} of the comparisons involving one")


def summary_line(agree: int, total: int, settings: int, error: float) -> str:
    """The protocol's last line, exactly."""
    pct = 100.0 * agree / total if total else float("nan")
    return (f"literature: {agree}/{total} signs agree ({pct:.1f}%) over {settings} settings; "
            f"pass@k mean abs error {error:.4f}")
