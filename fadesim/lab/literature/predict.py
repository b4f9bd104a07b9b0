"""The protocol for a user's own model: what each advantage will do to a model whose base pass@k is known
(``predict``), and the whole grid of training lengths written before a run (``prediction_grid``, read after it
by ``read_prediction``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fadesim.lab.literature.protocol import (ProtocolSettings, advantage_clock, calibrated_task, common_fallback,
                                             fallen_back, match_length, match_on, matched_task, mean_half_width,
                                             nearest_step, read_path, sim_config)
from fadesim.lab.literature.published import BASE


# ----------------------------------------------------------------------------- prediction for a user's own model
def parse_advantages(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``"grpo,w_reinforce:lam=0.1,fade"`` -> [(label, name, params)], each checked against the registry and its
    parameters' declared domains (a ValueError naming the entry)."""
    from fadesim.advantages.domains import parse_assignments
    from fadesim.advantages.registry import info

    out = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, *items = entry.split(":")
        try:
            params = parse_assignments(items)
        except ValueError:
            raise ValueError(f"advantage entry {entry!r}: parameters are name:key=value[:key=value]") from None
        try:
            info(name).check_params(**params)
        except KeyError as err:
            raise ValueError(f"advantage entry {entry!r}: {err.args[0]}") from None
        except ValueError as err:
            raise ValueError(f"advantage entry {entry!r}: {err}") from None
        out.append((entry, name, params))
    if not out:
        raise ValueError("give at least one advantage, e.g. grpo,psr,fade")
    return out


def predict(base_curve: Mapping[int, float], advantages: Sequence[tuple[str, str, Mapping[str, Any]]],
            settings: ProtocolSettings, *, grpo_pass1: float | None = None, steps: float | None = None,
            rollouts_per_step: float | None = None, draws: pd.DataFrame | None = None) -> dict[str, Any]:
    """What each advantage will do to a model whose base pass@k is ``base_curve`` (k -> pass@k, two k or more).

    The protocol's steps a-c with a user's numbers: the task is calibrated to the base curve; the training length
    is either ``steps`` or the step where simulated GRPO (the tuning seeds, or the held-out ones under
    ``settings.match_seeds`` "held") reaches ``grpo_pass1``, the pass@1 the user reached with GRPO (exactly one of
    the two); each advantage is trained on the held-out seeds and read there.
    Returns the predicted pass@k table (label, k, pass_at_k, ci95; base is step 0), the held-out mean trajectories
    (label, step, pass@1, entropy) up to the length, the length and whether GRPO reached the target, and the match
    ``residual`` (the held-out simulated GRPO's pass@1 where it is read minus ``grpo_pass1``; NaN where no default
    ``grpo`` is among the advantages or a length was given), ``read_at`` (label -> the step it was read at) and
    ``reach_dropped`` (whether ``settings.reach_fallback`` dropped the skill's reach: ``matched_task``) and ``dropped``
    (the fallback the task was built with: "", "misfire" or "reach").
    With ``settings.readout == "interpolated"`` the length may fall between logged steps and every advantage is read
    there by linear interpolation. With ``settings.clock == "trainer"`` each advantage is read at the length x its
    trainer clock (``fadesim.theory.step_size.trainer_clock``) instead; with "noise", x its noise-scale clock at the
    user's ``rollouts_per_step`` (prompts a step x rollouts a prompt; ``noise_clock``), which that clock needs.
    With ``settings.task_draws`` > 1, every number is the mean over that many draws of the task, each predicted on
    its own (``_over_draws``); ``draws`` (with ``grpo_pass1``), the protocol's own match of each draw on that target
    (``run_setting``'s "draws": task_seed, length, reached, dropped), reads each draw there instead of matching it
    again (the same numbers: the protocol matched the same task on the same seeds)."""
    from fadesim.lab.stats import ci95, split_seeds
    from fadesim.sim import simulate

    if settings.task_draws > 1:
        return _over_draws(base_curve, advantages, settings, draws, grpo_pass1=grpo_pass1, steps=steps,
                           rollouts_per_step=rollouts_per_step)
    if draws is not None:
        raise ValueError("draws (the protocol's match of each task draw) go with settings.task_draws > 1")

    if (grpo_pass1 is None) == (steps is None):
        raise ValueError("give exactly one of grpo_pass1 (the pass@1 your GRPO run reached) and steps (a length)")
    if len(base_curve) < 2:
        raise ValueError("the base curve needs pass@k at two k or more")
    if settings.clock == "noise" and rollouts_per_step is None:
        raise ValueError("the noise-scale clock needs the run's rollouts a step (prompts a step x rollouts a prompt)")
    ks = sorted(int(k) for k in base_curve)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds), "fadesim predict")
    dropped = ""
    if grpo_pass1 is not None:
        if not 0.0 < grpo_pass1 < 1.0:
            raise ValueError(f"grpo_pass1 must lie in (0, 1); got {grpo_pass1}")
        task, cal, length, reached, _, dropped = matched_task(settings, base_curve, match_on(settings, tune, held),
                                                              grpo_pass1, ks)
    else:
        task, cal = calibrated_task(settings, base_curve)
        interpolated = settings.readout == "interpolated"
        if (isinstance(steps, bool) or not math.isfinite(float(steps)) or steps <= 0
                or (not interpolated and int(steps) != steps) or (not interpolated and steps < 1)):
            raise ValueError(f"steps must be a positive {'number' if interpolated else 'integer'}; got {steps!r}")
        length, reached = (float(steps) if interpolated else int(steps)), True
    base_rows, rows, paths, read_at = [], [], [], {}
    for label, name, params in advantages:
        want = length * advantage_clock(task, settings, name, params, rollouts_per_step)  # 1 on the simulator's
        run_steps = max(settings.log_every, int(math.ceil(max(want, length) / settings.log_every)) * settings.log_every)
        res = simulate(task, sim_config(settings, name, params, run_steps, ks), seeds=held)
        at = min(float(want), float(res.steps[-1])) if settings.readout == "interpolated" else \
            nearest_step(res.steps[1:], want)
        read_at[label] = at
        if not base_rows:  # step 0: the calibrated base, the same in every run
            base_rows = [{"label": BASE, "k": k, "pass_at_k": float(res.metrics[f"pass@{k}"][0, 0, 0]), "ci95": 0.0}
                         for k in ks]
        for k in ks:
            mean, half = ci95(read_path(res.steps, res.metrics[f"pass@{k}"][0], at))
            rows.append({"label": label, "k": k, "pass_at_k": mean, "ci95": half})
        keep = res.steps <= at
        paths.append(pd.DataFrame({"label": label, "step": res.steps[keep],
                                   "pass@1": res.metrics["pass@1"][0].mean(axis=0)[keep],
                                   "entropy": res.metrics["entropy"][0].mean(axis=0)[keep]}))
    table = pd.DataFrame(base_rows + rows)
    return {"table": table, "trajectories": pd.concat(paths, ignore_index=True), "length": length,
            "reached": bool(reached), "calibration": cal, "base_curve": dict(base_curve),
            "residual": _grpo_residual(table, advantages, grpo_pass1), "read_at": read_at,
            "reach_dropped": dropped == "reach", "dropped": dropped}


def _grpo_residual(table: pd.DataFrame, advantages: Sequence[tuple[str, str, Mapping[str, Any]]],
                   grpo_pass1: float | None) -> float:
    """The match residual of a ``predict`` table: the default ``grpo`` entry's (the last one's) held-out pass@1 where
    it was read minus ``grpo_pass1``; NaN where no such entry or no target."""
    labels = [label for label, name, params in advantages if name == "grpo" and not params]
    if not labels or grpo_pass1 is None:
        return float("nan")
    return float(table[(table.label == labels[-1]) & (table.k == 1)].pass_at_k.iloc[-1]) - float(grpo_pass1)


def _over_draws(base_curve: Mapping[int, float], advantages: Sequence[tuple[str, str, Mapping[str, Any]]],
                settings: ProtocolSettings, draws: pd.DataFrame | None = None, **given: Any) -> dict[str, Any]:
    """``predict`` on ``settings.task_draws`` draws of the task (``task_seed``, ``task_seed`` + 1, ...), each matched
    and read on its own, averaged (as ``fadesim.lab.literature.over_draws`` averages the protocol): the table's
    pass@k is the mean over the draws with the interval of a mean of independent draws (sqrt(sum h^2) / n); the
    trajectories the mean, at each logged step, over the draws run that far; "length", "read_at" and "residual" the
    draws' means, "reached" whether every draw reached, "dropped" the fallback every draw took ("mixed" where they
    differ), "calibration" the first draw's (the same fit on every draw); "draws" one row per draw (task_seed,
    length, reached, residual, dropped). With ``draws`` (the protocol's match of each draw) each is read there
    (``_matched_draw``) instead of being matched again."""
    each = [dataclasses.replace(settings, task_seed=settings.task_seed + i, task_draws=1)
            for i in range(settings.task_draws)]
    one = ([predict(base_curve, advantages, s, **given) for s in each] if draws is None
           else [_matched_draw(base_curve, advantages, s, draws, **given) for s in each])
    table = pd.concat([r["table"] for r in one]).groupby(["label", "k"], sort=False).agg(
        pass_at_k=("pass_at_k", "mean"), ci95=("ci95", mean_half_width)).reset_index()
    paths = (pd.concat([r["trajectories"] for r in one]).groupby(["label", "step"], sort=False)[["pass@1", "entropy"]]
             .mean().reset_index())
    common = common_fallback([r["dropped"] for r in one])
    first = one[0]
    return {"table": table, "trajectories": paths, "length": float(np.mean([r["length"] for r in one])),
            "reached": all(r["reached"] for r in one), "calibration": first["calibration"],
            "base_curve": dict(base_curve), "residual": float(np.mean([r["residual"] for r in one])),
            "read_at": {lab: float(np.mean([r["read_at"][lab] for r in one])) for lab in first["read_at"]},
            "reach_dropped": common == "reach", "dropped": common,
            "draws": pd.DataFrame([{"task_seed": settings.task_seed + i, "length": r["length"], "reached": r["reached"],
                                    "residual": r["residual"], "dropped": r["dropped"]} for i, r in enumerate(one)])}


def _matched_draw(base_curve: Mapping[int, float], advantages: Sequence[tuple[str, str, Mapping[str, Any]]],
                  settings: ProtocolSettings, draws: pd.DataFrame, *, grpo_pass1: float | None = None,
                  steps: float | None = None, rollouts_per_step: float | None = None) -> dict[str, Any]:
    """``predict`` on one task draw (``settings.task_seed``) read where the protocol matched it on ``grpo_pass1``
    (its row of ``draws``): the length and fallback are the protocol's, and so are "reached" and "dropped"; the
    residual is ``predict``'s (``_grpo_residual``)."""
    if grpo_pass1 is None or steps is not None:
        raise ValueError("draws (the protocol's match of each task draw) go with grpo_pass1, the target they matched")
    row = draws[draws.task_seed == settings.task_seed]
    if len(row) != 1:
        raise ValueError(f"draws has no single row for task draw {settings.task_seed}")
    row = row.iloc[0]
    out = predict(base_curve, advantages, fallen_back(settings, row.dropped), steps=float(row.length),
                  rollouts_per_step=rollouts_per_step)
    return {**out, "reached": bool(row.reached), "dropped": row.dropped, "reach_dropped": row.dropped == "reach",
            "residual": _grpo_residual(out["table"], advantages, grpo_pass1)}


def support(curves: pd.DataFrame, training: Mapping[str, int] | None = None) -> dict[str, tuple[float, float]]:
    """What a set of published settings (a curves frame, e.g. the shipped ``load_curves()``) supports: the range of
    k published, of the base pass@1 and of the reference's pass@1 gain over the base (how far RL moved pass@1), and,
    given their batches (``load_training()``), of the rollouts a step of those among them that have one.
    ``fadesim predict`` warns where a prediction lies outside it (an extrapolation in k, difficulty, length or
    batch)."""
    base = curves[(curves.method == BASE) & (curves.k == 1)].set_index("setting").pass_at_k
    post = curves[(curves.method != BASE) & (curves.k == 1)].groupby("setting").pass_at_k.max()
    gain = (post - base.reindex(post.index)).dropna()
    out = {"k": (float(curves.k.min()), float(curves.k.max())), "base pass@1": (float(base.min()), float(base.max())),
           "pass@1 gain": (float(gain.min()), float(gain.max()))}
    published = set(curves.setting)
    batches = [n for setting, n in (training or {}).items() if setting in published]
    if batches:
        out["rollouts a step"] = (float(min(batches)), float(max(batches)))
    return out


def extrapolations(base_curve: Mapping[int, float], supported: Mapping[str, tuple[float, float]],
                   grpo_pass1: float | None = None, rollouts_per_step: float | None = None) -> list[str]:
    """One sentence per way a prediction for ``base_curve`` (and a GRPO run reaching ``grpo_pass1``, with
    ``rollouts_per_step`` a step) leaves the support of the published settings (``support``); empty where it stays
    inside."""
    out = []
    if rollouts_per_step is not None and "rollouts a step" in supported:
        lo, hi = supported["rollouts a step"]
        if not lo <= rollouts_per_step <= hi:
            out.append(f"{rollouts_per_step:g} rollouts a step lies outside the published runs' {lo:g}-{hi:g} (batch: "
                       "the noise-scale clock)")
    ks = sorted(int(k) for k in base_curve)
    lo, hi = supported["k"]
    if ks[0] < lo or ks[-1] > hi:
        out.append(f"k {ks[0]}-{ks[-1]} goes beyond the published k {lo:g}-{hi:g}")
    if 1 in base_curve:
        p1 = float(base_curve[1])
        lo, hi = supported["base pass@1"]
        if not lo <= p1 <= hi:
            out.append(f"base pass@1 {p1:.3f} lies outside the published bases' {lo:.3f}-{hi:.3f} (difficulty)")
        if grpo_pass1 is not None:
            lo, hi = supported["pass@1 gain"]
            if not lo <= grpo_pass1 - p1 <= hi:
                out.append(f"a pass@1 gain of {grpo_pass1 - p1:+.3f} lies outside the published {lo:+.3f} to "
                           f"{hi:+.3f} (training length)")
    return out


def prediction_grid(base_curve: Mapping[int, float], advantages: Sequence[tuple[str, str, Mapping[str, Any]]],
                    settings: ProtocolSettings, metrics: Sequence[str] = ()) -> pd.DataFrame:
    """The protocol's prediction over every training length, made before a run: what each advantage does to a model
    whose base pass@k is ``base_curve``, at each logged step 0 .. ``settings.max_steps``.

    The task is calibrated to the base curve (step a); GRPO runs on the tuning seeds (its pass@1 path is where a
    measured GRPO pass@1 is later matched, step b: rows with ``seeds == "tune"``, k = 1 only) and every advantage
    runs on the held-out seeds (rows with ``seeds == "held"``: the values compared, step c). Columns: label, seeds,
    step, k, pass_at_k (mean over seeds), ci95, entropy (mean policy entropy, nats), then one column per name in
    ``metrics`` (further simulator metrics, mean over seeds: e.g. ``logit_norm``, ``pass@1_hard``).
    ``read_prediction`` picks the point of the grid that a measured GRPO pass@1 selects."""
    from fadesim.lab.stats import ci95, split_seeds
    from fadesim.sim import simulate

    if len(base_curve) < 2:
        raise ValueError("the base curve needs pass@k at two k or more")
    if settings.match_seeds != "tuning":
        raise ValueError(f"prediction_grid matches a measured pass@1 on the tuning seeds' GRPO path (written before the "
                         f"run, rows seeds == 'tune'); match_seeds {settings.match_seeds!r} is not served here")
    ks = sorted(int(k) for k in base_curve)
    task, _ = calibrated_task(settings, base_curve)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds),
                             "the prediction grid")
    runs = [("grpo", "tune", "grpo", {}, tune)] + [(label, "held", name, params, held)
                                                  for label, name, params in advantages]
    rows = []
    for label, which, name, params, seeds in runs:
        res = simulate(task, sim_config(settings, name, params, settings.max_steps, ks), seeds=seeds)
        entropy = res.metrics["entropy"][0].mean(axis=0)
        extra = {name: res.metric(name)[0].mean(axis=0) for name in metrics}
        for i, step in enumerate(res.steps):
            for k in ks if which == "held" else [1]:
                mean, half = ci95(res.metrics[f"pass@{k}"][0, :, i])
                rows.append({"label": label, "seeds": which, "step": int(step), "k": k, "pass_at_k": mean,
                             "ci95": half, "entropy": float(entropy[i]),
                             **{name: float(values[i]) for name, values in extra.items()}})
    return pd.DataFrame(rows)


def read_prediction(grid: pd.DataFrame, grpo_pass1: float, reference: str = "grpo") -> tuple[pd.DataFrame, int, bool]:
    """(the held-out rows of ``prediction_grid``'s table at the step where the tuning seeds' simulated
    ``reference`` pass@1 first reaches ``grpo_pass1`` (``match_length``), that step, whether it was reached).
    Step 0's rows are the calibrated base (label ``base``)."""
    path = grid[(grid.label == reference) & (grid.seeds == "tune") & (grid.k == 1)].sort_values("step")
    if path.empty:
        raise ValueError(f"the grid has no tuning-seed {reference!r} pass@1 path to match on")
    step, reached = match_length(path.step.tolist(), path.pass_at_k.tolist(), float(grpo_pass1))
    held = grid[grid.seeds == "held"]
    at = held[held.step == step][["label", "k", "pass_at_k", "ci95", "entropy"]]
    base = held[(held.step == 0) & (held.label == held.label.iloc[0])][["label", "k", "pass_at_k", "ci95", "entropy"]]
    base = base.assign(label=BASE, ci95=0.0)
    return pd.concat([base, at], ignore_index=True), int(step), bool(reached)
