"""Calibrate a task's difficulty distribution to a real model's pass@k curve.

A tabular task's initial pass@k is 1 - E[(1 - p)^k] over its prompts' pass rates p, whatever the prior inside
the correct and wrong sets (the prior splits a prompt's pass rate over its answers but does not change it), so
the curve identifies the difficulty distribution alone; ``zipf_exponent`` is not identifiable from pass@k and
is left as given. ``calibrate`` fits one of three families by least squares on the given k and reports the fit
error per k; ``make_task(..., regime="llm")`` builds tasks from the fit to a shipped published curve.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from scipy import optimize, special

from fadesim.data import CODEX_APPS, data_file
from fadesim.tasks.pass_rates import Beta, DifficultyDistribution, LogUniform, Mixture, PointMass

#: families: parameters and how an unconstrained vector maps onto them
FAMILIES = ("loguniform", "loguniform+unsolved", "beta", "beta+unsolved")

#: the published curve the llm regime is calibrated to (package data; fadesim/data/README.md gives its source)
PUBLISHED = data_file(*CODEX_APPS)

if TYPE_CHECKING:  # the task interface (docs/DESIGN.md section 6)
    from fadesim.tasks.protocol import Task


def estimate_pass_at_k(n: Any, c: Any, ks: Any) -> dict[int, float]:
    """Mean over prompts of the unbiased pass@k estimator 1 - C(n - c, k) / C(n, k) from n samples of which c are
    correct (arXiv 2107.03374, eq. 1), for each k in ``ks`` (k <= every n). Exact integer binomials."""
    from math import comb

    pairs = [(int(ni), int(ci)) for ni, ci in zip(np.asarray(n).ravel(), np.asarray(c).ravel())]
    if not pairs:
        raise ValueError("estimate_pass_at_k needs at least one prompt")
    out = {}
    for k in ks:
        k = int(k)
        if not 1 <= k <= min(ni for ni, _ in pairs):
            raise ValueError(f"pass@{k} needs 1 <= k <= the samples per prompt ({min(ni for ni, _ in pairs)})")
        out[k] = float(np.mean([1.0 - comb(ni - ci, k) / comb(ni, k) for ni, ci in pairs]))
    return out


def check_curve(pass_at_k: Mapping[int, float]) -> dict[int, float]:
    """A pass@k curve {k: value}: positive integer k, values in (0, 1), non-decreasing in k."""
    if not isinstance(pass_at_k, Mapping) or not pass_at_k:
        raise ValueError(f"a pass@k curve is a non-empty mapping {{k: pass@k}}; got {pass_at_k!r}")
    curve: dict[int, float] = {}
    for k, v in pass_at_k.items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"pass@k curve: k must be a positive integer; got {k!r}")
        v = float(v)
        if not (np.isfinite(v) and 0.0 < v < 1.0):
            raise ValueError(f"pass@k curve: pass@{k} = {v} is outside (0, 1)")
        curve[int(k)] = v
    ks = sorted(curve)
    for a, b in zip(ks, ks[1:]):
        if curve[b] < curve[a]:
            raise ValueError(f"pass@k curve is not non-decreasing in k: pass@{a} = {curve[a]} > pass@{b} = {curve[b]}")
    return {k: curve[k] for k in ks}


def _build(family: str, x: np.ndarray) -> tuple[DifficultyDistribution, dict[str, float]]:
    shape, _, unsolved_share = family.partition("+")  # "+unsolved": the shape plus a share at p = 0 (the last entry)
    dist: DifficultyDistribution
    if shape == "beta":
        a, b = (float(v) for v in np.exp(np.clip(x[:2], -9.0, 9.0)))
        dist, params = Beta(a, b), {"a": a, "b": b}
    else:
        high = float(np.clip(special.expit(x[0]), 1e-9, 1.0 - 1e-9))
        low = float(np.clip(high * special.expit(x[1]), 1e-12, high * (1.0 - 1e-9)))
        dist, params = LogUniform(low, high), {"low": low, "high": high}
    if not unsolved_share:
        return dist, params
    unsolved = float(special.expit(x[2]))
    return Mixture((dist, PointMass(0.0)), (1.0 - unsolved, unsolved)), {**params, "unsolved": unsolved}


_N_PARAMS = {"loguniform": 2, "loguniform+unsolved": 3, "beta": 2, "beta+unsolved": 3}


@dataclass(frozen=True)
class Calibration:
    """The fitted difficulty distribution, its parameters, and its exact pass@k against the target per k."""

    family: str
    params: Mapping[str, float]
    distribution: DifficultyDistribution
    target: Mapping[int, float]
    fitted: Mapping[int, float] = field(default_factory=dict)

    @property
    def errors(self) -> dict[int, float]:
        """fitted - target, per k."""
        return {k: self.fitted[k] - self.target[k] for k in self.target}

    @property
    def max_abs_error(self) -> float:
        return float(max(abs(e) for e in self.errors.values()))

    def table(self) -> list[dict[str, float]]:
        return [{"k": k, "target": self.target[k], "fitted": self.fitted[k], "error": self.errors[k]}
                for k in self.target]


def calibrate(pass_at_k: Mapping[int, float], family: str = "loguniform+unsolved") -> Calibration:
    """Fit a difficulty distribution whose exact pass@k matches ``pass_at_k`` at its k (least squares).

    Families: "loguniform" (log p ~ U(log low, log high)), "loguniform+unsolved" (that, plus a fraction
    ``unsolved`` of prompts at p = 0, the never-solved prompts real benchmarks have), "beta" (p ~ Beta(a, b)),
    "beta+unsolved" (the Beta plus such a fraction: a curve that flattens at large k, where the Beta alone rises to
    1 as k^-a).
    The curve needs at least as many k as the family has parameters. Six to twelve starts; the best fit is kept.
    """
    curve = check_curve(pass_at_k)
    if family not in FAMILIES:
        raise ValueError(f"unknown calibration family {family!r}; known: {', '.join(FAMILIES)}")
    if len(curve) < _N_PARAMS[family]:
        raise ValueError(f"family {family!r} has {_N_PARAMS[family]} parameters; the curve gives only "
                         f"{len(curve)} point(s)")
    ks = np.asarray(list(curve), dtype=float)
    target = np.asarray(list(curve.values()))

    def residuals(x: np.ndarray) -> np.ndarray:
        dist, _ = _build(family, x)
        return dist.pass_at_k(ks) - target

    if family == "beta":
        starts = [np.log([a, b]) for a in (0.1, 0.5, 2.0) for b in (0.5, 2.0, 10.0)]
    elif family == "beta+unsolved":
        starts = [np.array([np.log(a), np.log(b), u]) for a in (0.3, 1.0) for b in (0.5, 2.0, 8.0) for u in (-6.0, -2.0)]
    else:
        starts = [np.array([hx, lx, ux][: _N_PARAMS[family]])
                  for hx, lx in ((-2.0, -6.0), (0.0, -3.0), (2.0, -8.0)) for ux in (-2.0, 0.5)]
    best = None
    for x0 in starts:
        res = optimize.least_squares(residuals, x0, method="lm" if len(ks) >= len(x0) else "trf",
                                     xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=300 * len(x0))
        if best is None or res.cost < best.cost:
            best = res
    dist, params = _build(family, best.x)
    fitted = dict(zip(curve, (float(v) for v in dist.pass_at_k(ks))))
    return Calibration(family=family, params=params, distribution=dist, target=curve, fitted=fitted)


def load_pass_at_k(path: str | Path = PUBLISHED, **select: str) -> dict[int, float]:
    """Read a pass@k curve {k: value} from a CSV with columns k and pass_at_k, keeping the rows whose other
    columns equal ``select`` (e.g. split="introductory"); every k must appear once."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no pass@k curve at {path}")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    missing = [c for c in ("k", "pass_at_k", *select) if rows and c not in rows[0]]
    if missing or not rows:
        raise ValueError(f"{path}: needs columns k, pass_at_k and {list(select)}; missing {missing}")
    kept = [r for r in rows if all(r[c] == v for c, v in select.items())]
    if not kept:
        raise ValueError(f"{path}: no rows with {select}")
    curve: dict[int, float] = {}
    for r in kept:
        k = int(r["k"])
        if k in curve:
            raise ValueError(f"{path}: k = {k} appears twice for {select}; select one curve")
        curve[k] = float(r["pass_at_k"])
    return check_curve(curve)


def task_pass_at_k(task: Task, ks: Any) -> dict[int, float]:
    """A task's exact initial pass@k curve: mean over its prompts of 1 - (1 - p_n)^k."""
    p = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
    return {int(k): float(np.mean(1.0 - (1.0 - p) ** k)) for k in ks}
