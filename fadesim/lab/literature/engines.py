"""The protocol (steps a-d) on one setting, by one of its two engines: the jax simulator (``run_setting``) or the
mean-field Adam path of the shared directions (``first_order_setting``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fadesim.lab.literature.protocol import (ProtocolSettings, calibrated_task, common_fallback, crossing_point,
                                             fallbacks, falls_short, match_length, match_on, matched_task, mean_half_width,
                                             method_clocks, nearest_step, read_path, scored_setting, sim_config,
                                             simulate_once)
from fadesim.lab.literature.published import BASE, Method, reference_method


def _run_length(settings: ProtocolSettings, method: Method, clock: float) -> int:
    """How long a method's run goes (both engines): steps_scale x max(clock, 1) x max_steps, up to a logged step. It
    depends on steps_scale, the clock and max_steps only, not on the setting's matched length, so one compiled
    program serves every setting under the simulator's clock (the tasks share their shapes)."""
    return int(math.ceil(method.steps_scale * max(clock, 1.0) * settings.max_steps / settings.log_every)
               ) * settings.log_every


def run_setting(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method],
                settings: ProtocolSettings, training: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The protocol (a-d) on one setting; returns its table, comparisons and chosen length (``settings.engine``
    "first_order": ``first_order_setting`` instead of the simulator). ``training``: setting -> its published run's
    rollouts a step (``load_training``), which the noise-scale clock reads (a setting without one: clock 1); the
    result's "clocks" are each method's clock, "rollouts_per_step" the batch used (None: unknown), "per_seed" each
    held-out seed's pass@k where each method was read (method, k, seed, pass_at_k; None from the first-order engine).
    With ``settings.task_draws`` > 1, ``over_draws``."""
    from fadesim.lab.stats import ci95, split_seeds

    if settings.task_draws > 1:
        return over_draws(setting, curves, methods, settings, training)
    if settings.engine == "first_order":
        return first_order_setting(setting, curves, methods, settings, training)
    pub = curves[curves.setting == setting]
    ks = sorted(int(k) for k in pub.k.unique())
    base_curve = {int(r.k): float(r.pass_at_k) for r in pub[pub.method == BASE].itertuples()}
    ref = reference_method(setting, curves, methods)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds),
                             "the literature protocol")
    published_names = [m for m in dict.fromkeys(pub.method) if m != BASE]
    simulated_names = [m for m in published_names if m in methods]
    target = float(pub[(pub.method == ref.name) & (pub.k == 1)].pass_at_k.iloc[0])
    runs: dict[Any, Any] = {}  # the reference's match, which under match_seeds="held" is its held-out run
    task, cal, length, reached, grid, dropped = matched_task(settings, base_curve, match_on(settings, tune, held),
                                                             target, ks, runs)

    interpolated = settings.readout == "interpolated"
    frames, read_at, entropy = [], {}, []
    rollouts = (training or {}).get(setting)
    clocks = method_clocks(task, settings, methods, simulated_names, rollouts)
    for name in simulated_names:
        m = methods[name]
        want = m.steps_scale * length * clocks[name]
        steps = _run_length(settings, m, clocks[name])
        res = simulate_once(task, sim_config(settings, m.advantage, m.params, steps, ks), held, runs)
        if settings.match == "pass@1":
            at, _ = (crossing_point if interpolated else match_length)(res.steps, res.metrics["pass@1"][0].mean(axis=0),
                                                                     target)
        else:
            at = min(float(want), float(res.steps[-1])) if interpolated else nearest_step(res.steps[1:], want)
        read_at[name] = float(at) if interpolated else int(at)
        nats = np.asarray(res.metrics["entropy"][0])  # (seeds, logged steps): the policy's mean entropy
        for point, label in ([(at, name), (0.0, BASE)] if name == simulated_names[0] else [(at, name)]):
            for k in ks:  # each seed's pass@k at the point (a logged step, or interpolated between two)
                values = read_path(res.steps, res.metrics[f"pass@{k}"][0], point)
                frames.append(pd.DataFrame({"seed": list(res.seeds), "k": k, "pass_at_k": values, "method": label}))
            mean, half = ci95(read_path(res.steps, nats, point))
            row = {"method": label, "step": float(point) if interpolated else int(point), "entropy": mean,
                   "ci95": half}
            entropy.insert(0, row) if label == BASE else entropy.append(row)
    runs = pd.concat(frames, ignore_index=True)
    table = runs.groupby(["method", "k"]).pass_at_k.agg(list).reset_index()
    table["simulated"] = table.pass_at_k.map(lambda v: ci95(v)[0])
    table["ci95"] = table.pass_at_k.map(lambda v: ci95(v)[1])
    return {**scored_setting(setting, pub, table.drop(columns="pass_at_k"), settings, methods, cal, ref.name, target,
                             length, reached, read_at, grid, pd.DataFrame(entropy), runs),
            "clocks": clocks, "rollouts_per_step": rollouts, "reach_dropped": dropped == "reach", "dropped": dropped,
            "per_seed": runs}


def over_draws(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method], settings: ProtocolSettings,
               training: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The protocol on ``settings.task_draws`` draws of the task (``task_seed``, ``task_seed`` + 1, ...), each run as
    ``run_setting`` runs one (its own match, fallbacks and clocks), and every simulated number averaged over them:
    a prediction of the family rather than of one instance of it (its answers, correct sets and held-out prompts).
    Measured in paper_figures/literature/README.md, "Fresh task draws 4-7": on draws 4-7 it adds signs on the SmolLM2
    designs and none on the shipped settings, so the default stays on one draw. Same keys as ``run_setting``: the table's simulated pass@k is the mean over every draw's held-out
    seeds (each draw has as many, so the mean of the draws' means) with its 95% interval over them, the comparisons
    are scored on that mean with each seed paired within its draw, and the match residual is the mean reference's
    minus the published; "length", "read_at" and "clocks" are the draws' means, "reached" whether every draw reached,
    "dropped" the fallback every draw took ("mixed" where they differ: ``draws`` says which), "grid" the first
    draw's, "entropy" the mean over the draws with the interval of a mean of independent draws; "draws" one row per
    draw (task_seed, length, reached, residual, dropped, agree, total, error)."""
    from fadesim.lab.stats import ci95

    one = [run_setting(setting, curves, methods,
                       dataclasses.replace(settings, task_seed=settings.task_seed + i, task_draws=1), training)
           for i in range(settings.task_draws)]
    pub = curves[curves.setting == setting]
    if all(r["per_seed"] is not None for r in one):
        per_seed = pd.concat([r["per_seed"].assign(draw=i) for i, r in enumerate(one)], ignore_index=True)
        simulated = per_seed.groupby(["method", "k"]).pass_at_k.agg(list).reset_index()
        simulated["simulated"] = simulated.pass_at_k.map(lambda v: ci95(v)[0])
        simulated["ci95"] = simulated.pass_at_k.map(lambda v: ci95(v)[1])
        simulated = simulated.drop(columns="pass_at_k")
    else:  # the first-order path: exact per draw, no seeds
        per_seed = None
        simulated = (pd.concat([r["table"].dropna(subset=["simulated"]) for r in one])
                     .groupby(["method", "k"], as_index=False).simulated.mean().assign(ci95=float("nan")))
    entropy = pd.concat([r["entropy"] for r in one]).groupby("method", sort=False).agg(
        step=("step", "mean"), entropy=("entropy", "mean"),
        ci95=("ci95", mean_half_width)).reset_index()
    first = one[0]
    out = scored_setting(setting, pub, simulated, settings, methods, first["calibration"], first["reference"],
                         first["target"], float(np.mean([r["length"] for r in one])), all(r["reached"] for r in one),
                         {m: float(np.mean([r["read_at"][m] for r in one])) for m in first["read_at"]}, first["grid"],
                         entropy, per_seed)
    draws = pd.DataFrame([{"task_seed": settings.task_seed + i, "length": r["length"], "reached": r["reached"],
                           "residual": r["residual"], "dropped": r["dropped"], "agree": int(r["comparisons"].agree.sum()),
                           "total": len(r["comparisons"]), "error": r["error"]} for i, r in enumerate(one)])
    common = common_fallback([r["dropped"] for r in one])
    return {**out, "clocks": {m: float(np.mean([r["clocks"][m] for r in one])) for m in first["clocks"]},
            "rollouts_per_step": first["rollouts_per_step"], "reach_dropped": common == "reach", "dropped": common,
            "per_seed": per_seed, "draws": draws}


def first_order_setting(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method],
                        settings: ProtocolSettings, training: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The protocol (a-d) on one setting with each simulated run replaced by its first-order path
    (``fadesim.theory.crossing.adam_path``: the shared sharpness, skill and shortcut moved at Adam's expected speed,
    the SNR of each read exactly), read on the held-out evaluation prompts, whose pass@k is then an exact function of the
    path. A prediction of what ``run_setting`` will measure, made without drawing a rollout: the sharpen task under
    per-entry ``adam`` with ``eval_prompts`` > 0 only (elsewhere the per-prompt logits, which the path leaves out,
    move what is measured). Same keys as ``run_setting`` (the table's ci95 empty: no seeds)."""
    from fadesim.theory.crossing import adam_path

    dataclasses.replace(settings, engine="first_order")  # refuses a task, optimizer or evaluation it cannot serve
    pub = curves[curves.setting == setting]
    ks = sorted(int(k) for k in pub.k.unique())
    base_curve = {int(r.k): float(r.pass_at_k) for r in pub[pub.method == BASE].itertuples()}
    task, cal = calibrated_task(settings, base_curve)
    held = np.asarray(task.evaluated(), dtype=bool)
    ref = reference_method(setting, curves, methods)
    target = float(pub[(pub.method == ref.name) & (pub.k == 1)].pass_at_k.iloc[0])

    def curve(advantage: str, params: Mapping[str, Any], steps: int) -> pd.DataFrame:
        """(step, k, pass_at_k, entropy) on the held-out prompts along the advantage's path."""
        path = adam_path(task, advantage, settings.G, steps, settings.lr, settings.prompts_per_step,
                         settings.log_every, **params)
        theta = np.zeros(task.logits0.shape)
        rows = []
        for t, sv, gv, hv in zip(path["step"], path["s"], path["g"], path["h"]):
            prm = {"s": np.float64(sv), "theta": theta, **({"g": np.float64(gv)} if task.skill_scale else {}),
                   **({"h": np.float64(hv)} if task.shortcut_scale else {})}
            exact = task.exact(prm, np)
            p, nats = np.asarray(exact["pass_rate"])[held], float(np.mean(np.asarray(exact["entropy"])[held]))
            rows += [{"step": int(t), "k": k, "pass_at_k": float(np.mean(1 - (1 - p) ** k)), "entropy": nats}
                     for k in ks]
        return pd.DataFrame(rows)

    interpolated = settings.readout == "interpolated"
    for dropped, used in fallbacks(settings):  # matched_task's fallbacks on the path (the same held-out split)
        if dropped:
            task, cal = calibrated_task(used, base_curve)
        grid = curve("grpo", {}, settings.max_steps)
        p1 = grid[grid.k == 1]
        length, reached = (crossing_point if interpolated else match_length)(p1.step, p1.pass_at_k, target)
        if not falls_short(reached, float(p1[p1.step == 0].pass_at_k.iloc[0]), target):
            break
    published_names = [m for m in dict.fromkeys(pub.method) if m != BASE]
    simulated_names = [m for m in published_names if m in methods]
    frames, read_at = [grid[grid.step == 0].assign(method=BASE)], {}
    entropy = [{"method": BASE, "step": 0, "entropy": float(grid[grid.step == 0].entropy.iloc[0]), "ci95": float("nan")}]
    rollouts = (training or {}).get(setting)
    clocks = method_clocks(task, settings, methods, simulated_names, rollouts)
    for name in simulated_names:
        m = methods[name]
        steps = _run_length(settings, m, clocks[name])
        df = curve(m.advantage, m.params, steps)
        q = df[df.k == 1]
        if settings.match == "pass@1":
            at, _ = (crossing_point if interpolated else match_length)(q.step, q.pass_at_k, target)
        else:
            want = m.steps_scale * length * clocks[name]
            at = min(float(want), float(q.step.max())) if interpolated else nearest_step(sorted(set(df.step))[1:], want)
        read_at[name] = float(at) if interpolated else int(at)
        for k in ks:
            path = df[df.k == k]
            frames.append(pd.DataFrame({"method": [name], "k": [k], "pass_at_k": [float(read_path(path.step,
                                                                                             path.pass_at_k, at))]}))
        entropy.append({"method": name, "step": read_at[name], "entropy": float(read_path(q.step, q.entropy, at)),
                        "ci95": float("nan")})
    simulated = pd.concat(frames, ignore_index=True)[["method", "k", "pass_at_k"]].rename(
        columns={"pass_at_k": "simulated"}).assign(ci95=float("nan"))
    return {**scored_setting(setting, pub, simulated, settings, methods, cal, ref.name, target, length, reached,
                             read_at, p1[["step", "pass_at_k"]].rename(columns={"pass_at_k": "pass@1"}).reset_index(
                                 drop=True), pd.DataFrame(entropy)),
            "clocks": clocks, "rollouts_per_step": rollouts, "reach_dropped": dropped == "reach", "dropped": dropped,
            "per_seed": None}
