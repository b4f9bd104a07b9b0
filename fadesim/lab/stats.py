"""How the experiments judge: 95% intervals over seeds, readings at matched pass@1, tuning and held-out seeds, the
verdict word."""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd


def ci95(values: Iterable[float]) -> tuple[float, float]:
    """Mean and 95% normal-approximation half-width (inf for a single value)."""
    values = np.asarray(list(values), dtype=float)
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.inf
    return float(values.mean()), float(half)


def ci95_t(values: Iterable[float]) -> tuple[float, float]:
    """Mean and 95% Student-t half-width, t(0.975, n - 1) x sd / sqrt(n) (inf for a single value): for a handful of
    seeds (the real model's 2-4), where the normal approximation's 1.96 is far too narrow (t is 12.71 at n = 2, 4.30
    at 3, 3.18 at 4)."""
    from scipy.stats import t

    values = np.asarray(list(values), dtype=float)
    if len(values) < 2:
        return float(values.mean()) if len(values) else float("nan"), float("inf")
    return float(values.mean()), float(t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))


def at_pass1(run: pd.DataFrame, target: float, metric: str) -> float:
    """``metric`` of one logged run (columns step, pass@1 and ``metric``) where its pass@1 first reaches ``target``:
    linear interpolation between the two logged steps around the first crossing; NaN where it never does, and NaN
    where the run starts at or above it (a reading at the start says nothing about what training did, and would
    make two methods equal there by construction). Reading each method there compares them at matched pass@1 (the entropy-vs-pass@1 or
    pass@k-vs-pass@1 frontier), which takes learning speed out of the comparison."""
    run = run.sort_values("step")
    p, m = run["pass@1"].to_numpy(dtype=float), run[metric].to_numpy(dtype=float)
    if not np.isfinite(target):
        raise ValueError(f"the matched pass@1 target must be a finite number; got {target!r}")
    hit = np.flatnonzero(p >= target)
    if hit.size == 0:
        return float("nan")
    i = int(hit[0])
    if i == 0:
        return float("nan")
    w = (target - p[i - 1]) / (p[i] - p[i - 1])  # p[i - 1] < target <= p[i]
    return float(m[i - 1] + w * (m[i] - m[i - 1]))


def paired_at_pass1(a: pd.DataFrame, b: pd.DataFrame, target: float, metric: str) -> tuple[list[float], int]:
    """(a minus b of ``metric`` at matched pass@1, one per seed where both runs reach ``target`` during training;
    how many seeds ``a`` has). ``a`` and ``b``: logged runs with columns seed, step, pass@1 and ``metric``, each
    seed's run read by ``at_pass1``."""
    read_a = {seed: at_pass1(run, target, metric) for seed, run in a.groupby("seed")}
    read_b = {seed: at_pass1(run, target, metric) for seed, run in b.groupby("seed")}
    pairs = [read_a[s] - read_b[s] for s in read_a if np.isfinite(read_a[s]) and np.isfinite(read_b.get(s, np.nan))]
    return pairs, len(read_a)


def split_seeds(seeds: Iterable[int], experiment: str = "this experiment") -> tuple[list[int], list[int]]:
    """(tuning seeds, held-out seeds): the first half of the distinct seeds picks a setting, the second half judges
    it, so a verdict is not decided by the same noise that chose the setting."""
    distinct = sorted({int(x) for x in seeds})
    if len(distinct) < 2:
        raise ValueError(f"{experiment} needs at least 2 seeds (half pick the settings, half judge them); "
                         f"got {distinct}")
    half = len(distinct) // 2
    return distinct[:half], distinct[half:]


#: where held-out seeds start when an experiment declares tuning and held-out seed counts separately
HELD_OUT_START = 1000


def seed_ranges(n_tune: int, n_held: int, experiment: str = "this experiment") -> tuple[list[int], list[int]]:
    """(tuning seeds, held-out seeds) for an experiment that sets the two counts separately: ``0 .. n_tune - 1``
    and ``HELD_OUT_START ..``, disjoint by construction (checked). ``split_seeds`` is the form for one seed list
    halved."""
    if n_tune < 1 or n_held < 1:
        raise ValueError(f"{experiment} needs at least one tuning and one held-out seed; got {n_tune}, {n_held}")
    if n_tune > HELD_OUT_START:
        raise ValueError(f"tune_seeds = {n_tune} would overlap the held-out seeds, which start at {HELD_OUT_START}")
    return list(range(n_tune)), list(range(HELD_OUT_START, HELD_OUT_START + n_held))


def verdict(ok: bool) -> str:
    return "CONFIRMED" if ok else "NOT CONFIRMED"
