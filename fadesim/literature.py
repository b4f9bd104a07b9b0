"""The literature protocol: calibrated to a real model's base pass@k, does the simulator predict what RL did to
that model in published runs?

Inputs are two CSV files (the shipped ones are ``experiments/data/literature/``; a user's own in the same schema):

- curves, columns exactly ``setting,source,method,k,pass_at_k``: one published pass@k (a fraction in [0, 1]) per
  row; each setting has ``base`` rows (the model before RL) at two k or more;
- methods, columns exactly ``method,advantage,params,steps_scale``: the name a method has in the curves, the
  registered fadesim advantage it corresponds to, its hyper-parameters as a JSON object, and a multiplier of the
  training length (2: a checkpoint trained twice as long as the reference). A method without a row is reported
  "not simulated" and left out of the score.

Per setting (``run_setting``):

a. **calibrate** the task's initial difficulty to the base rows alone (``fadesim.tasks.calibrate``, a Beta by
   default: two parameters, so two published k suffice);
b. **match the length**: the reference is the setting's method mapped to ``grpo`` with steps_scale 1 (exactly one,
   else an error naming the setting). Its simulated pass@1, averaged over the *tuning* seeds, is compared with its
   published pass@1 at every logged step; the training length T is the first step where the simulation reaches
   it, or, where it never does, the step where it comes closest (reported as such). This is the only post-RL
   number the simulation sees;
c. **train** every mapped method on the *held-out* seeds (``split_seeds``) and read it at steps_scale x T
   (the nearest logged step): the **matched step**, the published runs' own condition. With ``match="pass@1"``
   each method is read instead where its own held-out pass@1 first reaches the reference's published pass@1 (or
   comes closest): **matched pass@1**, the pass@k-vs-pass@1 frontier, which takes learning speed out of the
   comparison (steps_scale is then moot, and pass@1 itself is matched, so k = 1 is left out of the sign score);
d. **score**: for every k published for two rows of the setting (a method and base, or two methods) whose
   published difference is at least ``min_difference`` (0.01: the papers' evaluation noise), does the simulated
   difference (held-out mean) have the same sign? And the mean absolute error of pass@k over every published
   (method, k) that is simulated, base included.

``summary_line`` is the last line ``experiments/literature.py`` prints, exactly
``literature: A/B signs agree (P%) over S settings; pass@k mean abs error E``.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

CURVE_COLUMNS = ("setting", "source", "method", "k", "pass_at_k")
METHOD_COLUMNS = ("method", "advantage", "params", "steps_scale")
DATA = Path(__file__).resolve().parents[1] / "experiments" / "data" / "literature"
CURVES, METHODS = DATA / "curves.csv", DATA / "methods.csv"
BASE = "base"
#: how methods are compared: at the matched step (steps_scale x the reference's length: the published runs'
#: condition) or at matched pass@1 (each method read where its own held-out pass@1 first reaches the reference's
#: published pass@1: the pass@k-vs-pass@1 frontier, which takes learning speed out of the comparison)
MATCHES = ("step", "pass@1")
ENGINES = ("simulate", "first_order")


class LiteratureError(ValueError):
    """A problem in a curves or methods file, naming the file, the line and the value."""


# ----------------------------------------------------------------------------- reading
def _rows(path: str | Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    path = Path(path)
    if not path.is_file():
        raise LiteratureError(f"{path}: no such file")
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != columns:
            raise LiteratureError(f"{path}: the columns must be exactly {','.join(columns)}; got "
                                  f"{','.join(reader.fieldnames or ()) or 'none'}")
        rows = [(i + 2, row) for i, row in enumerate(reader)]  # line 1 is the header
    if not rows:
        raise LiteratureError(f"{path}: no rows")
    for line, row in rows:
        if None in row or any(v is None for v in row.values()):
            raise LiteratureError(f"{path}, line {line}: expected {len(columns)} fields ({','.join(columns)})")
    return rows


def load_curves(path: str | Path = CURVES) -> pd.DataFrame:
    """The published curves as a frame (setting, source, method, k, pass_at_k), validated: k a positive integer,
    pass_at_k a fraction in [0, 1], no duplicate (setting, method, k), each method's curve non-decreasing in k,
    and base rows at two k or more in every setting."""
    records = []
    seen: dict[tuple[str, str, int], int] = {}
    for line, row in _rows(path, CURVE_COLUMNS):
        where = f"{path}, line {line}"
        setting, method = row["setting"].strip(), row["method"].strip()
        if not setting or not method:
            raise LiteratureError(f"{where}: setting and method must not be empty")
        try:
            k = int(row["k"])
            if str(k) != row["k"].strip() or k < 1:
                raise ValueError
        except ValueError:
            raise LiteratureError(f"{where}: k must be a positive integer; got {row['k']!r}") from None
        try:
            value = float(row["pass_at_k"])
        except ValueError:
            raise LiteratureError(f"{where}: pass_at_k must be a number; got {row['pass_at_k']!r}") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise LiteratureError(f"{where}: pass_at_k = {row['pass_at_k']} is outside [0, 1] (a fraction, not a "
                                  "percentage)")
        key = (setting, method, k)
        if key in seen:
            raise LiteratureError(f"{where}: duplicate (setting, method, k) = ({setting!r}, {method!r}, {k}); "
                                  f"first at line {seen[key]}")
        seen[key] = line
        records.append({"setting": setting, "source": row["source"].strip(), "method": method, "k": k,
                        "pass_at_k": value, "line": line})
    df = pd.DataFrame(records)
    for (setting, method), part in df.groupby(["setting", "method"], sort=False):
        part = part.sort_values("k")
        drops = part[part.pass_at_k.diff() < 0]
        if len(drops):
            bad = drops.iloc[0]
            before = part[part.k < bad.k].iloc[-1]
            raise LiteratureError(f"{path}, line {int(bad.line)}: the curve of {method!r} in {setting!r} decreases in k: "
                                  f"pass@{int(before.k)} = {before.pass_at_k} > pass@{int(bad.k)} = {bad.pass_at_k}")
    for setting, part in df.groupby("setting", sort=False):
        n_base = int((part.method == BASE).sum())
        if n_base < 2:
            raise LiteratureError(f"{path}: setting {setting!r} has {n_base} '{BASE}' row(s); the protocol "
                                  f"calibrates to the base model's curve and needs at least two k")
    return df.drop(columns="line")


@dataclass(frozen=True)
class Method:
    """A published method's fadesim equivalent."""

    name: str
    advantage: str
    params: Mapping[str, Any] = field(default_factory=dict)
    steps_scale: float = 1.0


def load_methods(path: str | Path = METHODS) -> dict[str, Method]:
    """method name -> Method, validated: a registered advantage, params a JSON object of its parameters inside
    their declared domains, steps_scale a positive finite number, no name twice."""
    from fadesim.advantages.registry import info

    out: dict[str, Method] = {}
    for line, row in _rows(path, METHOD_COLUMNS):
        where = f"{path}, line {line}"
        name = row["method"].strip()
        if not name:
            raise LiteratureError(f"{where}: method must not be empty")
        if name == BASE:
            raise LiteratureError(f"{where}: '{BASE}' is the model before RL, not a method to simulate")
        if name in out:
            raise LiteratureError(f"{where}: method {name!r} is listed twice")
        try:
            entry = info(row["advantage"].strip())
        except KeyError as err:
            raise LiteratureError(f"{where}: {err.args[0]}") from None
        try:
            params = json.loads(row["params"]) if row["params"].strip() else {}
        except json.JSONDecodeError as err:
            raise LiteratureError(f"{where}: params is not valid JSON ({err.msg}); got {row['params']!r}") from None
        if not isinstance(params, dict):
            raise LiteratureError(f"{where}: params must be a JSON object such as {{\"lam\": 0.1}}; got "
                                  f"{row['params']!r}")
        try:
            entry.check_params(**params)
        except ValueError as err:
            raise LiteratureError(f"{where}: {err}") from None
        try:
            scale = float(row["steps_scale"])
        except ValueError:
            raise LiteratureError(f"{where}: steps_scale must be a number; got {row['steps_scale']!r}") from None
        if not (math.isfinite(scale) and scale > 0):
            raise LiteratureError(f"{where}: steps_scale must be a positive number; got {row['steps_scale']!r}")
        out[name] = Method(name=name, advantage=entry.name, params=params, steps_scale=scale)
    return out


def reference_method(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method]) -> Method:
    """The setting's one published method mapped to grpo with steps_scale 1 (the length is matched on it)."""
    published = set(curves[curves.setting == setting].method)
    refs = [m for name, m in methods.items() if name in published and m.advantage == "grpo" and m.steps_scale == 1
            and not m.params]
    if len(refs) != 1:
        names = ", ".join(m.name for m in refs) or "none"
        raise LiteratureError(f"setting {setting!r}: needs exactly one published method mapped to grpo with default "
                              f"parameters and steps_scale 1 (the reference whose pass@1 fixes the training length); "
                              f"found {names}")
    if not ((curves.setting == setting) & (curves.method == refs[0].name) & (curves.k == 1)).any():
        raise LiteratureError(f"setting {setting!r}: the reference {refs[0].name!r} has no published pass@1")
    return refs[0]


# ----------------------------------------------------------------------------- the protocol's pure steps
def match_length(steps: Sequence[int], simulated: Sequence[float], target: float) -> tuple[int, bool]:
    """(the first logged step whose simulated pass@1 reaches ``target``, True); where none does, (the step of the
    smallest |simulated - target|, False). Step 0 (before training) is never chosen: RL is at least one step."""
    steps, simulated = list(steps), [float(v) for v in simulated]
    candidates = [(s, v) for s, v in zip(steps, simulated) if s > 0]
    if not candidates:
        raise ValueError("match_length needs at least one logged step after step 0")
    for s, v in candidates:
        if v >= target:
            return int(s), True
    best = min(candidates, key=lambda sv: (abs(sv[1] - target), sv[0]))
    return int(best[0]), False


def nearest_step(steps: Sequence[int], want: float) -> int:
    """The logged step nearest ``want`` (ties: the earlier)."""
    return int(min(steps, key=lambda s: (abs(s - want), s)))


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


# ----------------------------------------------------------------------------- simulation
@dataclass(frozen=True)
class ProtocolSettings:
    """The simulated side: one task family, optimizer and training grid for every setting."""

    task: str = "linear_softmax"
    family: str = "beta"  # calibration family (two parameters: two published k suffice)
    n_prompts: int = 128
    n_answers: int = 64
    n_correct: int = 4
    width: int = 16  # linear_softmax
    sharpen_scale: float = 1.0  # sharpen: how far one unit of the shared sharpness moves the logits
    skill_scale: float = 0.0  # sharpen: how far one unit of the shared skill raises every correct logit (0: none)
    prompts_per_step: int = 0  # sharpen: prompts drawn per step (0: every training prompt)
    eval_prompts: int = 0  # sharpen: prompts held out of training, on which pass@k is measured (0: measured on all)
    eval_split: str = "random"  # sharpen: "random" or "stratified" held-out prompts (fadesim.tasks.sharpen.EVAL_SPLITS)
    prior: str = "zipf"
    G: int = 8  # rollouts per prompt, as in the shipped settings' runs
    optimizer: str = "adam_shared"
    lr: float = 0.02
    max_steps: int = 400  # the reference's grid: 0 .. max_steps, every log_every
    log_every: int = 10
    seeds: int = 16  # the first half matches the length, the second half is scored
    min_difference: float = 0.01
    match: str = "step"  # "step": methods read at steps_scale x T; "pass@1": each where its pass@1 meets the target
    # "simulate": the jax simulator, seeds and all; "first_order": each run replaced by its mean-field Adam path
    # (``first_order_setting``: sharpen, adam, eval_prompts > 0 only), a prediction made without drawing a rollout
    engine: str = "simulate"
    # the task's own draw (answers, correct sets, held-out prompts) and the first rollout seed: a different one asks
    # whether a score survives another instance of the same family (0 and 0: every committed run)
    task_seed: int = 0
    seed_offset: int = 0

    def __post_init__(self) -> None:
        if (self.prompts_per_step or self.eval_prompts or self.skill_scale or self.eval_split != "random"
                ) and self.task != "sharpen":
            raise ValueError(f"prompts_per_step, eval_prompts, eval_split and skill_scale apply to the sharpen task "
                             f"only; got task {self.task!r}")
        if self.match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}; got {self.match!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {self.engine!r}")
        if self.engine == "first_order" and (self.task != "sharpen" or self.optimizer != "adam" or not self.eval_prompts):
            raise ValueError("the first_order engine needs task 'sharpen', optimizer 'adam' and eval_prompts > 0; got "
                             f"task {self.task!r}, optimizer {self.optimizer!r}, eval_prompts {self.eval_prompts}")


#: The family the protocol runs by default (``experiments/literature.py``, ``fadesim predict``): the entry chosen on
#: the shipped settings among nine skill-plus-sharpening entries (sharpness scale c = 1, one prompt a step, skill
#: scale d = 0.3, per-entry Adam, pass@k on 128 of 256 prompts held out of training, the held-out half stratified by
#: initial pass rate so that it keeps the calibrated base curve on every task draw): pooled over task draws 0-3,
#: 262/308 signs (85.1%) on the shipped settings; on two settings never designed on (AIME 2025 and AMC23 of arXiv
#: 2506.01347 Table 1, run separately) see paper_figures/README.md, "The stratified split".
#: ``ProtocolSettings()``'s own defaults stay the earlier linear_softmax family, which other tools build on.
CHOSEN: dict[str, Any] = {"task": "sharpen", "optimizer": "adam", "sharpen_scale": 1.0, "skill_scale": 0.3,
                          "prompts_per_step": 1, "n_prompts": 256, "eval_prompts": 128, "eval_split": "stratified",
                          "max_steps": 2000, "log_every": 20}
SHARPEN_ONLY = ("sharpen_scale", "skill_scale", "prompts_per_step", "eval_prompts", "eval_split")


def for_task(task: str) -> dict[str, Any]:
    """The sharpen-only settings a run of another task family resets (empty for sharpen): what a flag that picks
    another family implies, so that the default family's settings are not refused for it."""
    return {} if task == "sharpen" else {"sharpen_scale": 1.0, "skill_scale": 0.0, "prompts_per_step": 0,
                                         "eval_prompts": 0, "eval_split": "random"}


def describe_task(settings: ProtocolSettings) -> str:
    """The task family in words, for a printed or plotted axis: for sharpen its scale and, where set, its skill,
    prompts a step and held-out evaluation prompts."""
    if settings.task != "sharpen":
        return settings.task
    b = settings.prompts_per_step
    return (f"sharpen c = {settings.sharpen_scale:g}"
            + (f", skill d = {settings.skill_scale:g}" if settings.skill_scale else "")
            + (f", {b} prompt{'s' if b > 1 else ''} a step" if b else "")
            + (f", pass@k on {settings.eval_prompts} held-out prompts" if settings.eval_prompts else "")
            + (" (stratified)" if settings.eval_prompts and settings.eval_split == "stratified" else ""))


def calibrated_task(settings: ProtocolSettings, base_curve: Mapping[int, float], seed: int | None = None
                    ) -> tuple[Any, Any]:
    """(task, calibration): the task family with its initial difficulty fitted to the base curve (its draw
    ``seed``, default ``settings.task_seed``)."""
    seed = settings.task_seed if seed is None else seed
    from fadesim.tasks import Stratified, calibrate, make_task

    cal = calibrate({int(k): float(min(max(v, 1e-6), 1 - 1e-6)) for k, v in base_curve.items()}, settings.family)
    kw: dict[str, Any] = dict(n_prompts=settings.n_prompts, difficulty=Stratified(cal.distribution), seed=seed)
    if settings.task == "chain":
        kw.update(length=3, vocab=4, n_correct=settings.n_correct)
    else:
        kw.update(n_answers=settings.n_answers, n_correct=settings.n_correct, prior=settings.prior)
    if settings.task == "linear_softmax":
        kw["width"] = settings.width
    if settings.task == "sharpen":
        kw.update(sharpen_scale=settings.sharpen_scale, skill_scale=settings.skill_scale,
                  prompts_per_step=settings.prompts_per_step, eval_split=settings.eval_split,
                  eval_prompts=settings.eval_prompts)
    return make_task(settings.task, **kw), cal


def _pass_at_k_frame(res: Any, ks: Sequence[int]) -> pd.DataFrame:
    """(seed, step, k, pass_at_k) of a one-configuration SimResult."""
    rows = []
    for j, seed in enumerate(res.seeds):
        for i, step in enumerate(res.steps):
            for k in ks:
                rows.append({"seed": seed, "step": int(step), "k": int(k),
                             "pass_at_k": float(res.metrics[f"pass@{k}"][0, j, i])})
    return pd.DataFrame(rows)


def _sim_config(settings: ProtocolSettings, advantage: str, params: Mapping[str, Any], steps: int,
                ks: Sequence[int]) -> Any:
    """The simulated run of one advantage under the protocol's settings, logging pass@k at every k in ``ks``."""
    from fadesim.sim import SimConfig

    extra = tuple(k for k in ks if k & (k - 1) or k > 1024)  # the simulator logs powers of two up to 1024
    return SimConfig(advantage=advantage, advantage_params=dict(params), G=settings.G, steps=steps,
                     log_every=settings.log_every, optimizer=settings.optimizer, lr=settings.lr, extra_pass_at_k=extra)


def _match_reference(task: Any, settings: ProtocolSettings, tune: Sequence[int], target: float,
                     ks: Sequence[int]) -> tuple[int, bool, pd.DataFrame]:
    """Step b: GRPO on the tuning seeds for max_steps; (the length where its mean pass@1 meets ``target``, whether it
    was reached, the (step, pass@1) grid it was read from)."""
    from fadesim.sim import simulate

    grid = simulate(task, _sim_config(settings, "grpo", {}, settings.max_steps, ks), seeds=tune)
    p1 = grid.metrics["pass@1"][0].mean(axis=0)
    length, reached = match_length(grid.steps, p1, target)
    return length, reached, pd.DataFrame({"step": grid.steps, "pass@1": p1})


def run_setting(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method],
                settings: ProtocolSettings) -> dict[str, Any]:
    """The protocol (a-d) on one setting; returns its table, comparisons and chosen length (``settings.engine``
    "first_order": ``first_order_setting`` instead of the simulator)."""
    from fadesim.experiment import ci95, split_seeds
    from fadesim.sim import simulate

    if settings.engine == "first_order":
        return first_order_setting(setting, curves, methods, settings)
    pub = curves[curves.setting == setting]
    ks = sorted(int(k) for k in pub.k.unique())
    base_curve = {int(r.k): float(r.pass_at_k) for r in pub[pub.method == BASE].itertuples()}
    task, cal = calibrated_task(settings, base_curve)
    ref = reference_method(setting, curves, methods)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds),
                             "the literature protocol")
    published_names = [m for m in dict.fromkeys(pub.method) if m != BASE]
    simulated_names = [m for m in published_names if m in methods]
    target = float(pub[(pub.method == ref.name) & (pub.k == 1)].pass_at_k.iloc[0])
    length, reached, grid = _match_reference(task, settings, tune, target, ks)

    frames, read_at, entropy = [], {}, []
    for name in simulated_names:
        m = methods[name]
        want = m.steps_scale * length
        # the run's length depends on steps_scale and max_steps only, not on the setting's matched length, so one
        # compiled program serves every setting (the tasks share their shapes)
        steps = int(math.ceil(m.steps_scale * settings.max_steps / settings.log_every)) * settings.log_every
        res = simulate(task, _sim_config(settings, m.advantage, m.params, steps, ks), seeds=held)
        if settings.match == "pass@1":
            at, _ = match_length(res.steps, res.metrics["pass@1"][0].mean(axis=0), target)
        else:
            at = nearest_step(res.steps[1:], want)
        read_at[name] = int(at)
        df = _pass_at_k_frame(res, ks)
        frames.append(df[df.step == at].assign(method=name))
        nats = np.asarray(res.metrics["entropy"][0])  # (seeds, logged steps): the policy's mean entropy
        mean, half = ci95(nats[:, list(res.steps).index(at)])
        entropy.append({"method": name, "step": int(at), "entropy": mean, "ci95": half})
        if name == simulated_names[0]:
            frames.append(df[df.step == 0].assign(method=BASE))
            mean, half = ci95(nats[:, 0])
            entropy.insert(0, {"method": BASE, "step": 0, "entropy": mean, "ci95": half})
    runs = pd.concat(frames, ignore_index=True)
    table = runs.groupby(["method", "k"]).pass_at_k.agg(list).reset_index()
    table["simulated"] = table.pass_at_k.map(lambda v: ci95(v)[0])
    table["ci95"] = table.pass_at_k.map(lambda v: ci95(v)[1])
    return _scored_setting(setting, pub, table.drop(columns="pass_at_k"), settings, methods, cal, ref.name, target,
                           length, reached, read_at, grid, pd.DataFrame(entropy))


def _scored_setting(setting: str, pub: pd.DataFrame, simulated: pd.DataFrame, settings: ProtocolSettings,
                    methods: Mapping[str, Method], cal: Any, reference: str, target: float, length: int, reached: bool,
                    read_at: Mapping[str, int], grid: pd.DataFrame, entropy: pd.DataFrame) -> dict[str, Any]:
    """Step d and the result of one setting: ``simulated`` (method, k, simulated, ci95) beside the published rows,
    every sign compared and the pass@k error; ``entropy`` (method, step, entropy, ci95) where each method was read
    (base at step 0), the policy's mean entropy in nats over the prompts its metrics average (the held-out ones
    where the task holds some out)."""
    table = simulated.merge(pub[["method", "k", "pass_at_k"]].rename(columns={"pass_at_k": "published"}),
                            on=["method", "k"], how="right")
    sim = table.dropna(subset=["simulated"]).rename(columns={"simulated": "pass_at_k"})[["method", "k", "pass_at_k"]]
    scored = pub[pub.k != 1] if settings.match == "pass@1" else pub
    comparisons = sign_score(scored[["method", "k", "pass_at_k"]], sim, settings.min_difference)
    error, n_error = mean_abs_error(pub[["method", "k", "pass_at_k"]], sim)
    published_names = [m for m in dict.fromkeys(pub.method) if m != BASE]
    return {"setting": setting, "table": table.sort_values(["method", "k"]).reset_index(drop=True),
            "comparisons": comparisons, "length": length, "reached": reached, "target": target,
            "reference": reference, "calibration": cal, "error": error, "n_error": n_error, "read_at": dict(read_at),
            "not_simulated": [m for m in published_names if m not in methods], "grid": grid,
            "entropy": entropy.reset_index(drop=True)}


def first_order_setting(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method],
                        settings: ProtocolSettings) -> dict[str, Any]:
    """The protocol (a-d) on one setting with each simulated run replaced by its first-order path
    (``fadesim.theory.crossing.adam_path``: the shared sharpness and skill moved at Adam's expected speed, the SNR
    of each read exactly), read on the held-out evaluation prompts, whose pass@k is then an exact function of the
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
        for t, sv, gv in zip(path["step"], path["s"], path["g"]):
            prm = {"s": np.float64(sv), "theta": theta, **({"g": np.float64(gv)} if task.skill_scale else {})}
            exact = task.exact(prm, np)
            p, nats = np.asarray(exact["pass_rate"])[held], float(np.mean(np.asarray(exact["entropy"])[held]))
            rows += [{"step": int(t), "k": k, "pass_at_k": float(np.mean(1 - (1 - p) ** k)), "entropy": nats}
                     for k in ks]
        return pd.DataFrame(rows)

    grid = curve("grpo", {}, settings.max_steps)
    p1 = grid[grid.k == 1]
    length, reached = match_length(p1.step, p1.pass_at_k, target)
    published_names = [m for m in dict.fromkeys(pub.method) if m != BASE]
    simulated_names = [m for m in published_names if m in methods]
    frames, read_at = [grid[grid.step == 0].assign(method=BASE)], {}
    entropy = [{"method": BASE, "step": 0, "entropy": float(grid[grid.step == 0].entropy.iloc[0]), "ci95": float("nan")}]
    for name in simulated_names:
        m = methods[name]
        steps = int(math.ceil(m.steps_scale * settings.max_steps / settings.log_every)) * settings.log_every
        df = curve(m.advantage, m.params, steps)
        if settings.match == "pass@1":
            q = df[df.k == 1]
            at, _ = match_length(q.step, q.pass_at_k, target)
        else:
            at = nearest_step(sorted(set(df.step))[1:], m.steps_scale * length)
        read_at[name] = int(at)
        frames.append(df[df.step == at].assign(method=name))
        entropy.append({"method": name, "step": int(at), "entropy": float(df[df.step == at].entropy.iloc[0]),
                        "ci95": float("nan")})
    simulated = pd.concat(frames, ignore_index=True)[["method", "k", "pass_at_k"]].rename(
        columns={"pass_at_k": "simulated"}).assign(ci95=float("nan"))
    return _scored_setting(setting, pub, simulated, settings, methods, cal, ref.name, target, length, reached,
                           read_at, p1[["step", "pass_at_k"]].rename(columns={"pass_at_k": "pass@1"}).reset_index(
                               drop=True), pd.DataFrame(entropy))


# ----------------------------------------------------------------------------- comparing task families
@dataclass(frozen=True)
class Candidate:
    """One simulated side to compare on the published settings: a task family, an optimizer and (for ``sharpen``)
    its sharpen_scale and, optionally, its prompts a step (0: all) and skill_scale (0: none). Written
    ``task:optimizer``, ``sharpen:optimizer:scale``, ``sharpen:optimizer:scale:prompts_per_step`` or
    ``sharpen:optimizer:scale:prompts_per_step:skill_scale``."""

    task: str
    optimizer: str
    sharpen_scale: float = 1.0
    prompts_per_step: int = 0
    skill_scale: float = 0.0

    @property
    def label(self) -> str:
        if self.task != "sharpen":
            return f"{self.task}:{self.optimizer}"
        if self.skill_scale:
            return f"sharpen:{self.optimizer}:{self.sharpen_scale:g}:{self.prompts_per_step}:{self.skill_scale:g}"
        return f"sharpen:{self.optimizer}:{self.sharpen_scale:g}" + (
            f":{self.prompts_per_step}" if self.prompts_per_step else "")


def parse_candidates(text: str, tasks: Sequence[str], optimizers: Sequence[str]) -> list[Candidate]:
    """``"bandit:adam,sharpen:adam:0.3"`` -> candidates, each checked (a clear error naming the bad entry)."""
    out = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        parts = entry.split(":")
        if len(parts) not in (2, 3, 4, 5):
            raise ValueError(f"--compare entry {entry!r} must be task:optimizer or sharpen:optimizer:scale"
                             f"[:prompts_per_step[:skill_scale]]")
        task, optimizer = parts[0], parts[1]
        if task not in tasks:
            raise ValueError(f"--compare entry {entry!r}: unknown task {task!r}; known: {', '.join(tasks)}")
        if optimizer not in optimizers:
            raise ValueError(f"--compare entry {entry!r}: unknown optimizer {optimizer!r}; known: {', '.join(optimizers)}")
        if len(parts) >= 3 and task != "sharpen":
            raise ValueError(f"--compare entry {entry!r}: only the sharpen task takes a scale")
        try:
            scale = float(parts[2]) if len(parts) >= 3 else 1.0
        except ValueError:
            raise ValueError(f"--compare entry {entry!r}: the scale must be a number") from None
        if not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"--compare entry {entry!r}: the scale must be a finite number >= 0")
        batch = parts[3] if len(parts) >= 4 else "0"
        if not batch.isdigit():
            raise ValueError(f"--compare entry {entry!r}: prompts_per_step must be a whole number >= 0")
        try:
            skill = float(parts[4]) if len(parts) == 5 else 0.0
        except ValueError:
            raise ValueError(f"--compare entry {entry!r}: the skill scale must be a number") from None
        if not (math.isfinite(skill) and skill >= 0):
            raise ValueError(f"--compare entry {entry!r}: the skill scale must be a finite number >= 0")
        out.append(Candidate(task, optimizer, scale, int(batch), skill))
    if not out:
        raise ValueError("--compare needs at least one task:optimizer entry")
    return out


def setting_score(res: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one ``run_setting`` result that the comparison pools over settings."""
    c = res["comparisons"]
    return {"setting": res["setting"], "agree": int(c.agree.sum()), "total": int(len(c)),
            "abs_error_sum": float(res["error"] * res["n_error"]) if res["n_error"] else 0.0,
            "n_error": int(res["n_error"]), "length": int(res["length"]), "reached": bool(res["reached"])}


def pooled_scores(scores: pd.DataFrame, configs: Sequence[str] | None = None) -> pd.DataFrame:
    """Per config (``configs``' order, default first-listed in ``scores``): agree, total, the agreeing fraction and
    the pooled pass@k mean abs error, summed over the settings of ``scores`` (one row per config and setting: agree,
    total, abs_error_sum, n_error); a config with no rows there has zero totals."""
    out = scores.groupby("config", sort=False)[["agree", "total", "abs_error_sum", "n_error"]].sum()
    if configs is not None:
        out = out.reindex(list(configs), fill_value=0)
    out["frac"] = (out.agree / out.total).where(out.total > 0)
    out["error"] = (out.abs_error_sum / out.n_error).where(out.n_error > 0)
    return out


def best_config(scores: pd.DataFrame, configs: Sequence[str] | None = None) -> str:
    """The config (among ``configs``, default those in ``scores``) with the highest pooled sign agreement (ties: the
    lower pooled pass@k error, then the first listed; a config with nothing compared or no error ranks last on
    that key)."""
    pooled = pooled_scores(scores, configs)
    ranked = pooled.assign(frac=pooled.frac.fillna(-1.0), error=pooled.error.fillna(float("inf")))
    return str(ranked.sort_values(["frac", "error"], ascending=[False, True], kind="stable").index[0])


def leave_one_setting_out(scores: pd.DataFrame) -> pd.DataFrame:
    """For each setting: the config (column ``config``) that ``best_config`` picks on the *other* settings, and its
    score on the held-out setting.

    ``scores``: one row per (config, setting) with columns agree, total, abs_error_sum, n_error. The held-out rows'
    agree / total summed over settings is the leave-one-setting-out estimate of how well choosing among these
    configs generalises to a setting the choice never saw."""
    configs, rows = list(dict.fromkeys(scores.config)), []
    for held in dict.fromkeys(scores.setting):
        chosen = best_config(scores[scores.setting != held], configs)
        mine = scores[(scores.setting == held) & (scores.config == chosen)].iloc[0]
        rows.append({"held_out": held, "chosen": chosen, "agree": int(mine.agree), "total": int(mine.total)})
    return pd.DataFrame(rows, columns=["held_out", "chosen", "agree", "total"])


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
            settings: ProtocolSettings, *, grpo_pass1: float | None = None, steps: int | None = None
            ) -> dict[str, Any]:
    """What each advantage will do to a model whose base pass@k is ``base_curve`` (k -> pass@k, two k or more).

    The protocol's steps a-c with a user's numbers: the task is calibrated to the base curve; the training length
    is either ``steps`` or the step where simulated GRPO (tuning seeds) reaches ``grpo_pass1``, the pass@1 the user
    reached with GRPO (exactly one of the two); each advantage is trained on the held-out seeds and read there.
    Returns the predicted pass@k table (label, k, pass_at_k, ci95; base is step 0), the held-out mean trajectories
    (label, step, pass@1, entropy) up to the length, the length and whether GRPO reached the target."""
    from fadesim.experiment import ci95, split_seeds
    from fadesim.sim import simulate

    if (grpo_pass1 is None) == (steps is None):
        raise ValueError("give exactly one of grpo_pass1 (the pass@1 your GRPO run reached) and steps (a length)")
    if len(base_curve) < 2:
        raise ValueError("the base curve needs pass@k at two k or more")
    ks = sorted(int(k) for k in base_curve)
    task, cal = calibrated_task(settings, base_curve)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds), "fadesim predict")
    if grpo_pass1 is not None:
        if not 0.0 < grpo_pass1 < 1.0:
            raise ValueError(f"grpo_pass1 must lie in (0, 1); got {grpo_pass1}")
        length, reached, _ = _match_reference(task, settings, tune, grpo_pass1, ks)
    else:
        if isinstance(steps, bool) or int(steps) != steps or steps < 1:
            raise ValueError(f"steps must be a positive integer; got {steps!r}")
        length, reached = int(steps), True
    run_steps = max(settings.log_every, int(math.ceil(length / settings.log_every)) * settings.log_every)
    base_rows, rows, paths = [], [], []
    for label, name, params in advantages:
        res = simulate(task, _sim_config(settings, name, params, run_steps, ks), seeds=held)
        at = nearest_step(res.steps[1:], length)
        i = list(res.steps).index(at)
        if not base_rows:  # step 0: the calibrated base, the same in every run
            base_rows = [{"label": BASE, "k": k, "pass_at_k": float(res.metrics[f"pass@{k}"][0, 0, 0]), "ci95": 0.0}
                         for k in ks]
        for k in ks:
            mean, half = ci95(res.metrics[f"pass@{k}"][0, :, i])
            rows.append({"label": label, "k": k, "pass_at_k": mean, "ci95": half})
        keep = res.steps <= at
        paths.append(pd.DataFrame({"label": label, "step": res.steps[keep],
                                   "pass@1": res.metrics["pass@1"][0].mean(axis=0)[keep],
                                   "entropy": res.metrics["entropy"][0].mean(axis=0)[keep]}))
    table = pd.DataFrame(base_rows + rows)
    return {"table": table, "trajectories": pd.concat(paths, ignore_index=True), "length": int(length),
            "reached": bool(reached), "calibration": cal, "base_curve": dict(base_curve)}


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
    from fadesim.experiment import ci95, split_seeds
    from fadesim.sim import simulate

    if len(base_curve) < 2:
        raise ValueError("the base curve needs pass@k at two k or more")
    ks = sorted(int(k) for k in base_curve)
    task, _ = calibrated_task(settings, base_curve)
    tune, held = split_seeds(range(settings.seed_offset, settings.seed_offset + settings.seeds),
                             "the prediction grid")
    runs = [("grpo", "tune", "grpo", {}, tune)] + [(label, "held", name, params, held)
                                                  for label, name, params in advantages]
    rows = []
    for label, which, name, params, seeds in runs:
        res = simulate(task, _sim_config(settings, name, params, settings.max_steps, ks), seeds=seeds)
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
