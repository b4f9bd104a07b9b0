"""Step d of the literature protocol: the sign of every published difference, the pass@k error, the summary line."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from fadesim.lab.literature.published import BASE


def sign_score(published: pd.DataFrame, simulated: pd.DataFrame, min_difference: float = 0.01) -> pd.DataFrame:
    """One row per comparison: for each k published for two rows (method vs base, and every pair of methods)
    whose published difference is at least ``min_difference``, whether the simulated difference has its sign.

    ``published`` and ``simulated``: columns method, k, pass_at_k (simulated: only the simulated methods and base).
    A simulated difference of exactly 0 agrees with no published sign."""
    pub = {(r.method, int(r.k)): float(r.pass_at_k) for r in published.itertuples()}
    sim = {(r.method, int(r.k)): float(r.pass_at_k) for r in simulated.itertuples()}
    rows = []
    for k in sorted({k for _, k in pub}):
        names = [m for (m, kk) in pub if kk == k and (m, k) in sim]
        for a, b in combinations(sorted(names, key=lambda m: (m != BASE, m)), 2):
            d_pub = pub[(a, k)] - pub[(b, k)]
            if abs(d_pub) < min_difference:
                continue
            d_sim = sim[(a, k)] - sim[(b, k)]
            rows.append({"k": k, "a": a, "b": b, "published": d_pub, "simulated": d_sim,
                         "agree": bool(np.sign(d_sim) == np.sign(d_pub) and d_sim != 0)})
    return pd.DataFrame(rows, columns=["k", "a", "b", "published", "simulated", "agree"])


def mean_abs_error(published: pd.DataFrame, simulated: pd.DataFrame) -> tuple[float, int]:
    """(mean |simulated - published| over the published (method, k) that were simulated, their number)."""
    merged = published.merge(simulated, on=["method", "k"], suffixes=("_pub", "_sim"))
    if merged.empty:
        return float("nan"), 0
    return float(np.mean(np.abs(merged.pass_at_k_sim - merged.pass_at_k_pub))), len(merged)


def summary_line(agree: int, total: int, settings: int, error: float) -> str:
    """The protocol's last line, exactly."""
    pct = 100.0 * agree / total if total else float("nan")
    return (f"literature: {agree}/{total} signs agree ({pct:.1f}%) over {settings} settings; "
            f"pass@k mean abs error {error:.4f}")
