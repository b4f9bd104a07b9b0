"""FADE against every static advantage, each tuned on a grid (arXiv 2607.01490's headline claim).

Protocol. For each task x difficulty distribution, every static advantage in the registry gets its main
hyper-parameter tuned on a grid using *tuning* seeds (criterion: mean pass@1 over training, i.e. the area
under the learning curve). The best static baseline is the advantage whose tuned setting wins on the tuning
seeds. Everything is then re-run on disjoint *held-out* seeds and reported there: peak pass@1, steps to reach
95% of the best static's peak, final pass@k. FADE runs with its documented defaults, plus ablations without
its schedule (frozen at the explore or the exploit end), with the focal part the refined defaults leave out,
without its sign part, and the DESIGN.md section 5 constants (fade_design).

FADE is tuned like the baselines: its negative-weight schedule (lam_neg_explore -> lam_neg_exploit) gets a grid of
``len(FADE_GRID)`` = 4 settings, the size of the largest static grid (w_reinforce's lam), chosen on the same
tuning seeds by the same criterion. The ablations are variations of the registry defaults, not of the tuned
setting. Tuning and held-out seeds of one (cell, advantage) run in one compiled program (the seeds are vmapped;
a seed's run does not depend on which other seeds share it, up to float32 rounding on chain) and are split after.

Claims checked: FADE reaches peak pass@1 earlier than the best static baseline (a matched-step, speed claim), and
FADE keeps more coverage than it at matched pass@1: pass@256 where each held-out run first reaches 95% of the best
static's peak pass@1 (the pass@k-vs-pass@1 frontier, learning speed taken out). Every verdict names its regime
(``fadesim.tasks.regimes``: toy with easy / mixed / hard prompt sets, llm and math with their calibrated sets; in the
math regime the task is ``math_tasks``, sharpen, read on its held-out prompts), optimizer (adam_shared / adam) and
task; FADE and every baseline get the same tuning seeds and grid budget in each cell.

    python experiments/fade_vs_static.py            # --quick (default): bandit, 2 difficulties, main baselines
    python experiments/fade_vs_static.py --full     # bandit + chain, 3 difficulties, every static advantage
    python experiments/fade_vs_static.py --full --regime math --figures paper_figures/fade_vs_static/math_regime   # sharpen
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import fadesim
from fadesim.lab.regime_tasks import CALIBRATED_SETS, LLMRegimeSettings, regime_task, regime_task_names
from fadesim.lab.settings import check_axes, parse_settings
from fadesim.lab.stats import at_pass1, ci95, seed_ranges, verdict
from fadesim.lab.units import Executor, executor_from_args, LOCAL, run_units
from fadesim.lab.plots import method_comparison_figure, over_time_figure, pass_at_k_figure
from fadesim.lab.results import ResultStore
from fadesim.sim import SimConfig, simulate
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import REGIMES
from fadesim.tasks.softmax_policy import PASS_AT_K

ROOT = Path(__file__).resolve().parents[1]

#: the hyper-parameter grid of each static advantage (K is not vmappable: one run per value)
GRIDS: dict[str, dict[str, list[float]]] = {
    "grpo": {}, "dr_grpo": {}, "rloo": {}, "median": {}, "psr": {}, "nsr": {},
    "reinforce": {},
    "w_reinforce": {"lam": [0.05, 0.1, 0.3, 1.0]},
    "sign_balanced": {"balance": [-0.5, 0.0, 0.5]},
    "asymmetric": {"delta": [-0.1, 0.1, 0.3]},
    "focal": {"gamma": [0.5, 1.0, 2.0]},
    "risk_sensitive": {"beta": [0.5, 2.0, 5.0]},
    "unlikeliness": {"beta_rank": [0.1, 0.25, 0.5]},
    "pass_at_k": {"K": [2, 4]},
    "pkpo": {"K": [2, 4]},
}
#: FADE and its ablations: fixed parameter overrides of the registry defaults
_FADE = fadesim.info("fade").params
FADE_VARIANTS: dict[str, dict[str, float]] = {
    "fade": {},  # the refined defaults (see fade's docstring)
    "fade_design": {"gamma_explore": 2.0, "gamma_exploit": 0.0, "lam_neg_explore": 1.0, "lam_neg_exploit": 0.25},
    # no schedule: one end of the default schedule throughout
    "fade_frozen_explore": {"gamma_exploit": _FADE["gamma_explore"], "lam_neg_exploit": _FADE["lam_neg_explore"]},
    "fade_frozen_exploit": {"gamma_explore": _FADE["gamma_exploit"], "lam_neg_explore": _FADE["lam_neg_exploit"]},
    "fade_with_focal": {"gamma_explore": 2.0},  # the focal part the refined default leaves out
    "fade_no_sign": {"lam_neg_explore": 1.0, "lam_neg_exploit": 1.0},  # no sign weighting
}
#: FADE's tuning grid: (lam_neg_explore, lam_neg_exploit) pairs, zipped; the registry default is the second
FADE_GRID: tuple[tuple[float, float], ...] = ((0.1, 0.5), (0.25, 0.75), (0.5, 1.0), (1.0, 0.25))
QUICK_BASELINES = ("grpo", "dr_grpo", "w_reinforce", "focal", "risk_sensitive", "pass_at_k")


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    regimes: tuple[str, ...] = ("toy",)
    optimizers: tuple[str, ...] = ("adam_shared",)
    tasks: str = "bandit"
    difficulties: str = "mixed,hard"  # the toy regime's prompt sets; the llm and math regimes use their calibrated ones
    math_tasks: str = "sharpen"  # the math regime's (its preset's sizes)
    baselines: str = ",".join(QUICK_BASELINES)
    tune_seeds: int = 2
    eval_seeds: int = 8
    n_prompts: int = 128
    n_answers: int = 32
    n_correct: int = 3
    chain_length: int = 4  # the toy chain of this experiment is T = 4, V = 8 (the toy regime's preset: T = 3, V = 4)
    chain_vocab: int = 8
    G: int = 16
    steps: int = 300
    log_every: int = 20
    lr: float = 0.02

    def __post_init__(self) -> None:
        check_axes("fade_vs_static", regimes=(self.regimes, REGIMES), optimizers=(self.optimizers, OPTIMIZERS))


QUICK = Settings()
FULL = Settings(regimes=("toy", "llm"), optimizers=("adam_shared", "adam"), tasks="bandit,chain",
                difficulties="easy,mixed,hard", baselines=",".join(n for n in GRIDS), tune_seeds=4, eval_seeds=8,
                n_prompts=256, steps=600, log_every=25)
LLM_SET, MATH_SET = CALIBRATED_SETS["llm"], CALIBRATED_SETS["math"]  # Codex-12B on APPS; Qwen2.5-Math-7B on MATH


def _task(name: str, difficulty: str, s: Settings, regime: str = "toy"):
    """The llm regime's task (its calibrated difficulty), or the toy regime's at this experiment's sizes and the
    prompt set ``difficulty``."""
    return regime_task(s, name, regime, difficulty=difficulty)


def _prompt_sets(s: Settings, regime: str) -> list[str]:
    return [CALIBRATED_SETS[regime]] if regime in CALIBRATED_SETS else s.difficulties.split(",")



def _fade_configs() -> list[tuple[str, dict[str, float]]]:
    """FADE's configurations, in order: the tuning grid (method "fade"), then each ablation (its own method)."""
    grid = [("fade", {"lam_neg_explore": a, "lam_neg_exploit": b}) for a, b in FADE_GRID]
    return grid + [(name, overrides) for name, overrides in FADE_VARIANTS.items() if name != "fade"]


def _fade_sweep() -> dict[str, list[float]]:
    """The schedule constants of each FADE configuration (registry defaults plus its overrides), zipped in the
    order of ``_fade_configs``: configuration i of the FADE unit is entry i."""
    configs = _fade_configs()
    keys = sorted({k for _, overrides in configs for k in overrides})
    return {k: [float(overrides.get(k, _FADE[k])) for _, overrides in configs] for k in keys}


def tune_seeds(s: Settings) -> list[int]:
    return seed_ranges(s.tune_seeds, s.eval_seeds, "fade_vs_static")[0]


def eval_seeds(s: Settings) -> list[int]:
    """Held-out seeds: disjoint from the tuning seeds by construction (``seed_ranges``: they start at 1000)."""
    return seed_ranges(s.tune_seeds, s.eval_seeds, "fade_vs_static")[1]


def _runs(s: Settings) -> list[dict]:
    """One unit per (regime, optimizer, task, prompt set, advantage, static K), tuning and held-out seeds together."""
    units = []
    for regime in s.regimes:
        for optimizer in s.optimizers:
            for task in regime_task_names(s, regime):
                for diff in _prompt_sets(s, regime):
                    cell = {"regime": regime, "optimizer": optimizer, "task": task, "difficulty": diff}
                    for adv in s.baselines.split(","):
                        grid = GRIDS[adv]
                        statics = [{"K": K} for K in grid["K"]] if "K" in grid else [{}]
                        for static in statics:
                            units.append({**cell, "advantage": adv, "static": static,
                                          "sweep": {k: v for k, v in grid.items() if k != "K"}})
                    # FADE's grid and its ablations differ only in numeric schedule constants: one unit, one
                    # compiled program, the configurations zipped along its vmapped sweep axis
                    units.append({**cell, "advantage": "fade", "variants": [m for m, _ in _fade_configs()],
                                  "static": {}, "sweep": _fade_sweep()})
    return [dict(u, settings=dataclasses.asdict(s)) for u in units]


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    tasks: dict[tuple[str, str, str], object] = {}

    def compute(spec: dict) -> pd.DataFrame:
        key = (spec["task"], spec["difficulty"], spec["regime"])
        if key not in tasks:
            tasks[key] = _task(key[0], key[1], s, key[2])
        seeds = tune_seeds(s) + eval_seeds(s)
        cfg = SimConfig(advantage=spec["advantage"], advantage_params=spec["static"], G=s.G, steps=s.steps,
                        log_every=s.log_every, optimizer=spec["optimizer"], lr=s.lr)
        cell = f"{spec['regime']} regime, {spec['task']}, {spec['optimizer']}"
        df = simulate(tasks[key], cfg, seeds=seeds, sweep=spec["sweep"]).to_frame(
            {"difficulty": spec["difficulty"], "method": spec["advantage"], "regime": spec["regime"], "cell": cell})
        df["split"] = np.where(df.seed.isin(tune_seeds(s)), "tune", "eval")
        hp = [f"{k}={v}" for k, v in spec["static"].items()]
        sweep_cols = list(spec["sweep"])
        if spec["advantage"] == "fade":  # configuration i is entry i of _fade_configs
            df["method"] = np.asarray(spec["variants"])[df.config_index.to_numpy()]
            tuned = df.method == "fade"
            df["setting"] = "default"
            df.loc[tuned, "setting"] = [f"lam_neg_explore={a:g},lam_neg_exploit={b:g}" for a, b in
                                        zip(df.lam_neg_explore[tuned], df.lam_neg_exploit[tuned])]
            return df
        df["setting"] = df.apply(lambda row: ",".join(hp + [f"{c}={row[c]:g}" for c in sweep_cols]) or "default", axis=1)
        return df

    return run_units(_runs(s), compute, store, "fade-vs-static sweep", executor)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per held-out run: peak pass@1, area under pass@1, final pass@k; best setting chosen on tuning seeds."""
    auc = df.groupby(["cell", "difficulty", "split", "method", "setting", "seed"])["pass@1"].mean().rename("auc")
    tuned = auc.xs("tune", level="split").groupby(["cell", "difficulty", "method", "setting"]).mean()
    best_setting = tuned.groupby(["cell", "difficulty", "method"]).idxmax().map(lambda idx: idx[-1])
    held = df[df.split == "eval"]
    keep = held.set_index(["cell", "difficulty", "method"]).index.map(best_setting.to_dict().get) == held.setting.values
    held = held[keep]
    rows = []
    for (cell, diff, method, seed), run in held.groupby(["cell", "difficulty", "method", "seed"]):
        run = run.sort_values("step")
        rows.append({"cell": cell, "difficulty": diff, "method": method, "seed": seed,
                     "setting": run.setting.iloc[0], "peak": run["pass@1"].max(), "auc": run["pass@1"].mean(),
                     "final_pass@1": run["pass@1"].iloc[-1], "final_pass@16": run["pass@16"].iloc[-1],
                     "final_pass@256": run["pass@256"].iloc[-1], "curve_steps": run.step.values,
                     **{f"pass@{k}": run[f"pass@{k}"].iloc[-1] for k in PASS_AT_K},
                     "curve": run["pass@1"].values, "curve256": run["pass@256"].values,
                     "tune_auc": tuned.loc[(cell, diff, method, run.setting.iloc[0])]})
    return pd.DataFrame(rows)


def steps_to(curve_steps: np.ndarray, curve: np.ndarray, target: float) -> float:
    hit = np.flatnonzero(curve >= target)
    return float(curve_steps[hit[0]]) if hit.size else np.inf


def verdicts(summary: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    lines, table = [], []
    statics = set(GRIDS)
    for (cell, diff), part in summary.groupby(["cell", "difficulty"], sort=False):
        tune = part[part.method.isin(statics)].groupby("method").tune_auc.first()
        best = tune.idxmax()
        target = 0.95 * part[part.method == best].peak.mean()
        at_target = {}  # method -> seed -> pass@256 where the run's pass@1 first reaches the target (matched pass@1)
        for method, runs in part.groupby("method"):
            at_target[method] = {r.seed: at_pass1(pd.DataFrame({"step": r.curve_steps, "pass@1": r.curve,
                                                                  "pass@256": r.curve256}), target, "pass@256")
                                 for r in runs.itertuples()}
            matched = [v for v in at_target[method].values() if np.isfinite(v)]
            t = [steps_to(r.curve_steps, r.curve, target) for r in runs.itertuples()]
            table.append({"cell": cell, "difficulty": diff, "method": method, "setting": runs.setting.iloc[0],
                          "peak_pass@1": runs.peak.mean(), "peak_ci": ci95(runs.peak)[1],
                          "steps_to_target": float(np.mean(t)), "steps_ci": ci95(t)[1] if np.all(np.isfinite(t)) else np.inf,
                          "final_pass@256": runs["final_pass@256"].mean(),
                          "pass256_ci": ci95(runs["final_pass@256"])[1],
                          "pass@256_at_target": float(np.mean(matched)) if matched else np.nan,
                          "at_target_seeds": len(matched), "best_static": method == best})
        # a run that never reaches the target is censored at the horizon (counted as one log interval past it)
        horizon = float(part.curve_steps.iloc[0][-1] + (part.curve_steps.iloc[0][1] - part.curve_steps.iloc[0][0]))
        fade_t = {r.seed: steps_to(r.curve_steps, r.curve, target) for r in part[part.method == "fade"].itertuples()}
        best_t = {r.seed: steps_to(r.curve_steps, r.curve, target) for r in part[part.method == best].itertuples()}
        reached = sum(np.isfinite(v) for v in fade_t.values())
        m, h = ci95([min(best_t[s], horizon) - min(fade_t[s], horizon) for s in fade_t])
        fade_peak, best_peak = part[part.method == "fade"].peak.mean(), part[part.method == best].peak.mean()
        lines.append(f"[{cell}, {diff}] FADE reaches peak pass@1 earlier than the best static ({best}): "
                     f"{verdict(m - h > 0)} (steps to 95% of the best static's peak, a matched-pass@1 reading of speed: "
                     f"best static minus FADE = "
                     f"{m:+.1f} +- {h:.1f}, FADE reached it in {reached}/{len(fade_t)} held-out seeds, "
                     f"censored at {horizon:g}; peak pass@1 FADE {fade_peak:.3f} vs {best_peak:.3f})")
        # the accuracy-diversity side at matched pass@1: coverage where each run first reaches the same pass@1
        pairs = [at_target["fade"][s] - at_target[best][s] for s in at_target["fade"]
                 if np.isfinite(at_target["fade"][s]) and np.isfinite(at_target[best].get(s, np.nan))]
        if len(pairs) >= 2:
            m, h = ci95(pairs)
            lines.append(f"[{cell}, {diff}] FADE keeps more coverage than the best static ({best}) at matched "
                         f"pass@1: {verdict(m - h > 0)} (pass@256 where each run first reaches pass@1 {target:.3f}, "
                         f"FADE minus {best} = {m:+.4f} +- {h:.4f} over {len(pairs)}/{len(at_target['fade'])} "
                         f"held-out seeds)")
        else:
            lines.append(f"[{cell}, {diff}] FADE keeps more coverage than the best static ({best}) at matched "
                         f"pass@1: not measurable (pass@1 {target:.3f} reached during training by both in {len(pairs)} seeds)")
    return lines, pd.DataFrame(table)


def make_figures(summary: pd.DataFrame, table: pd.DataFrame, figures: Path, suffix: str) -> list[Path]:
    rows = []
    for r in summary.itertuples():
        for st, v in zip(r.curve_steps, r.curve):
            rows.append({"cell": r.cell, "difficulty": r.difficulty, "method": r.method, "seed": r.seed,
                         "step": st, "pass@1": v})
    curves = pd.DataFrame(rows)
    best = table[table.best_static][["cell", "difficulty", "method"]]
    shown = curves.merge(pd.concat([best, best.assign(method="fade")]), on=["cell", "difficulty", "method"])
    shown["facet"] = shown.cell + " / " + shown.difficulty
    shown["is_fade"] = (shown.method == "fade").astype(float)
    paths = [over_time_figure(shown, metric="pass@1", label="pass@1 (held-out seeds)", line="is_fade",
                              line_label="FADE (1) vs best static (0)", facet="facet",
                              title=f"FADE vs the best tuned static advantage ({suffix})",
                              path=figures / f"fade_vs_static_curves_{suffix}.png")]
    # the pass@k spectrum (held-out, final step): FADE, the best static and GRPO in each cell
    spec = summary.merge(best.rename(columns={"method": "best"}), on=["cell", "difficulty"])
    spec = spec[(spec.method == "fade") | (spec.method == spec.best) | (spec.method == "grpo")]
    spec = spec.assign(facet=spec.cell + " / " + spec.difficulty,
                       line=np.where(spec.method == spec.best, spec.method + " (best static)", spec.method))
    paths.append(pass_at_k_figure(spec, line="line", line_label="method", facet="facet",
                                  title=f"FADE vs the best static: final pass@k spectrum, held-out seeds ({suffix})",
                                  path=figures / f"fade_vs_static_passk_{suffix}.png"))
    table = table.assign(facet=table.cell + " / " + table.difficulty)
    paths.append(method_comparison_figure(
        table, facet="facet", title=f"FADE, its ablations and every tuned static advantage ({suffix}; orange = FADE)",
        panels=[("peak_pass@1", "peak_ci", "peak pass@1 (held-out)"),
                ("steps_to_target", "steps_ci", "steps to 95% of best static's peak"),
                ("final_pass@256", "pass256_ci", "final pass@256")],
        path=figures / f"fade_vs_static_methods_{suffix}.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "fade_vs_static")
    executor = executor_from_args(args)
    df = run_sweep(settings, ResultStore(Path(args.out) / suffix), executor)
    summary = summarise(df)
    lines, table = verdicts(summary)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:8.3f}"))
    for line in lines:
        print(line)
    for path in [] if args.no_figures else make_figures(summary, table, Path(args.figures), suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
