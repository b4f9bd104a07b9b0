"""Difficulty axis (arXiv 2607.01490): sweep F-GRPO's focal exponent gamma (medium -> hard focus) on easy,
mixed and hard prompt sets (toy regime) and on the llm and math regimes' calibrated prompt sets.

Every verdict names its regime (``fadesim.tasks.regimes``: toy, llm, math), optimizer (adam_shared: one second
moment, the LLM-like normaliser; adam: one per logit), task and prompt set.

Claim checked: hard focus sharpens the signal on hard prompts but costs effective sample size.
Measured per gamma: where the realised mass sits (mass-weighted hardness), the ESS of the batch, the
progress on initially hard prompts (pass@1_hard) and overall (pass@1). The closed-form curves of
fadesim.theory (derivations/difficulty_tradeoff.py) are overlaid on the first batch's measurements.

In the math regime (``--regime math``: the literature protocol's family, calibrated to Qwen2.5-Math-7B on MATH) the
tasks are ``math_tasks``: sharpen, whose one prompt a step makes a first batch of one group and whose metrics are
read on its held-out prompts (hard = initially hard *held-out* prompts, which move only through the shared
directions), and its bandit control (full batch, the same prompts), which carries the closed-form check.

    python experiments/difficulty_axis.py            # --quick (default)
    python experiments/difficulty_axis.py --full     # toy and llm regimes (the committed figures)
    python experiments/difficulty_axis.py --full --regime math --figures paper_figures/difficulty_axis/math_regime
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import fadesim
from fadesim.lab.regime_tasks import CALIBRATED_SETS, LLMRegimeSettings, regime_task, regime_task_names
from fadesim.lab.settings import check_advantage_values, check_axes, parse_settings
from fadesim.lab.stats import ci95, split_seeds, verdict
from fadesim.lab.units import Executor, executor_from_args, LOCAL, run_units
from fadesim.lab.plots import mean_ci, save_figure, tradeoff_figure
from fadesim.lab.results import ResultStore, write_atomic
from fadesim.sim import SimConfig, simulate
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import REGIMES, as_distribution, regime_kwargs
from fadesim.tasks.protocol import groups_per_step as task_groups_per_step

ROOT = Path(__file__).resolve().parents[1]

DIFFICULTIES = ("easy", "mixed", "hard")  # the toy regime's prompt sets; the llm and math regimes have their own
LLM_SET, MATH_SET = CALIBRATED_SETS["llm"], CALIBRATED_SETS["math"]  # Codex-12B on APPS; Qwen2.5-Math-7B on MATH
CALIBRATED = {name: regime for regime, name in CALIBRATED_SETS.items()}  # prompt set -> the regime it is calibrated in


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    gammas: str = "0,0.5,1,2,3,5"
    seeds: int = 4  # the first half picks the best gamma, the second half judges it
    regimes: tuple[str, ...] = ("toy", "llm")
    optimizers: tuple[str, ...] = ("adam_shared",)
    n_prompts: int = 256
    n_answers: int = 32
    n_correct: int = 3
    G: int = 16
    steps: int = 200
    log_every: int = 20
    lr: float = 0.02
    tasks: str = "bandit,linear_softmax"
    math_tasks: str = "sharpen,bandit"  # the math regime's (its preset's sizes)

    def __post_init__(self) -> None:
        check_axes("difficulty_axis", regimes=(self.regimes, REGIMES), optimizers=(self.optimizers, OPTIMIZERS))
        check_advantage_values("difficulty_axis", "focal", gamma=("gammas", self.gammas))


QUICK = Settings()
FULL = Settings(seeds=16, n_prompts=512, llm_n_prompts=128, steps=600, log_every=25,
                optimizers=("adam_shared", "adam"))


def prompt_sets(regime: str) -> tuple[str, ...]:
    return (CALIBRATED_SETS[regime],) if regime in CALIBRATED_SETS else DIFFICULTIES


def difficulty_of(prompt_set: str):
    """A prompt set's difficulty distribution: a calibrated regime's, or a named toy distribution."""
    if prompt_set in CALIBRATED:
        return regime_kwargs(CALIBRATED[prompt_set], "bandit")["difficulty"]
    return as_distribution(prompt_set)


@lru_cache(maxsize=None)
def groups_per_step(s: Settings, regime: str, task: str, prompt_set: str) -> int:
    """How many groups one step's batch of this cell's task holds (``fadesim.tasks.protocol.groups_per_step``): the
    batch ESS is out of this many."""
    return task_groups_per_step(build_task(s, regime, task, prompt_set))


def build_task(s: "Settings", regime: str, task: str, prompt_set: str):
    return regime_task(s, task, regime, difficulty=prompt_set)


def gammas(s: Settings) -> list[float]:
    return [float(g) for g in s.gammas.split(",")]


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per (regime, optimizer, task, prompt set, seed, phase): all gammas vmapped. Phase 'first' is one step
    (the theory overlay)."""
    tasks: dict[tuple[str, str, str], object] = {}

    def compute(spec: dict) -> pd.DataFrame:
        key = (spec["regime"], spec["task"], spec["difficulty"])
        if key not in tasks:
            tasks[key] = build_task(s, *key)
        one_step = spec["phase"] == "first"
        cfg = SimConfig(advantage="focal", G=s.G, steps=1 if one_step else s.steps,
                        log_every=1 if one_step else s.log_every, optimizer=spec["optimizer"], lr=s.lr)
        res = simulate(tasks[key], cfg, seeds=[spec["seed"]], sweep={"gamma": gammas(s)})
        return res.to_frame({"regime": spec["regime"], "difficulty": spec["difficulty"], "phase": spec["phase"]})

    specs = [{"experiment": "difficulty_axis", "regime": r, "optimizer": o, "task": t, "difficulty": d, "seed": seed,
              "phase": phase, **dataclasses.asdict(s)}
             for r in s.regimes for o in s.optimizers for t in regime_task_names(s, r) for phase in ("first", "train")
             for d in prompt_sets(r) for seed in range(s.seeds)]
    return run_units(specs, compute, store, "difficulty-axis sweep", executor)


def theory_table(s: Settings) -> pd.DataFrame:
    """Closed-form hardness and ESS per group of F-GRPO's mass under each prompt set's difficulty distribution."""
    rows = []
    for d in [d for r in s.regimes for d in prompt_sets(r)]:
        weights = difficulty_of(d).k_weights(s.G)
        for g in gammas(s):
            m = fadesim.profile("focal", s.G, gamma=g).under(weights)
            rows.append({"difficulty": d, "gamma": g, "hardness": m.hardness, "ess_fraction": m.ess_fraction})
    return pd.DataFrame(rows)


def verdicts(df: pd.DataFrame, theory: pd.DataFrame, s: Settings) -> list[str]:
    """Per task and difficulty: (1) mass structure: hard focus concentrates the realised mass on hard prompts
    (hardness up) at the cost of ESS (down), gamma_min -> gamma_max on the first batch; (2) learning: the gain
    on initially hard prompts (pass@1_hard) at the best gamma > 0 exceeds gamma = 0's, paired over seeds: the best
    gamma picked on the first half of the seeds, the gain judged on the second half (``split_seeds``)."""
    g_lo, g_hi = min(gammas(s)), max(gammas(s))
    lines = []
    for (regime, opt, task, d), sub in df.groupby(["regime", "optimizer", "task", "difficulty"], sort=False):
        n_prompts = groups_per_step(s, regime, task, d)
        tag = f"[{regime} regime, {task}, {opt}, {d}]"
        train = sub[sub.phase == "train"]
        last, fb = train[train.step == train.step.max()], sub[(sub.phase == "first") & (sub.step == 1)]

        def paired(frame: pd.DataFrame, metric: str, a: float, b: float) -> tuple[float, float]:
            x = frame.set_index(["seed", "gamma"])[metric]
            return ci95([x.loc[(seed, b)] - x.loc[(seed, a)] for seed in frame.seed.unique()])

        if n_prompts == 1:  # one group a step: its mass-weighted hardness and ESS share do not depend on gamma
            lines.append(f"{tag} hard focus moves the mass to hard prompts and costs sample size: not measurable "
                         f"here (one group a step: focal reweights whole steps, not groups within one; see the "
                         f"regime's full-batch control)")
        else:
            dh, hh = paired(fb, "hardness", g_lo, g_hi)
            de, he = paired(fb, "ess", g_lo, g_hi)
            lines.append(f"{tag} hard focus moves the mass to hard prompts and costs sample size: "
                         f"{verdict(dh - hh > 0 and de + he < 0)} (gamma {g_lo:g} -> {g_hi:g}: mass hardness "
                         f"{dh:+.3f} +- {hh:.3f}, batch ESS {de:+.1f} +- {he:.1f} of {n_prompts} groups a step)")
        start = train[train.step == 0].set_index(["seed", "gamma"])["pass@1_hard"]
        gain = (last.set_index(["seed", "gamma"])["pass@1_hard"] - start).rename("gain").reset_index()
        by_gamma = gain.groupby("gamma").gain.mean()
        # the best gamma > 0 is picked on the tuning seeds and judged against gamma_min on the held-out ones
        tune, held = split_seeds(gain.seed, "difficulty_axis")
        best = float(gain[gain.seed.isin(tune)].groupby("gamma").gain.mean().drop(g_lo).idxmax())
        m, h = paired(gain[gain.seed.isin(held)], "gain", g_lo, best)
        lines.append(f"{tag} hard focus speeds up learning on hard prompts: {verdict(m - h > 0)} "
                     f"(matched step {int(train.step.max())}: pass@1 gain on initially hard prompts, gamma = "
                     f"{best:g} (best on tuning seeds "
                     f"{tune[0]}-{tune[-1]}) minus gamma = {g_lo:g} on held-out seeds {held[0]}-{held[-1]}: "
                     f"{m:+.4f} +- {h:.4f}; gains by gamma, all seeds: "
                     + ", ".join(f"{g:g}: {v:.3f}" for g, v in by_gamma.items()) + ")")
        if n_prompts == 1:
            continue
        th = theory[theory.difficulty == d].set_index("gamma")
        meas = fb.groupby("gamma")[["hardness", "ess"]].mean()
        lines.append(f"{tag} closed form vs first batch: max |hardness error| "
                     f"{float(np.max(np.abs(meas.hardness - th.hardness))):.3f}, max |ESS/N error| "
                     f"{float(np.max(np.abs(meas.ess / n_prompts - th.ess_fraction))):.3f}")
    return lines


def make_figures(df: pd.DataFrame, theory: pd.DataFrame, s: Settings, figures: Path, suffix: str) -> list[Path]:
    train = df[df.phase == "train"]
    last = train[train.step == train.step.max()].copy()
    key = ["regime", "optimizer", "task", "difficulty", "seed", "gamma"]
    start = train[train.step == 0].set_index(key)
    for metric in ("pass@1", "pass@1_hard"):
        last[f"{metric} gain"] = last.set_index(key)[metric].values - \
            start.loc[list(zip(*(last[c] for c in key))), metric].values
    last["regime / task / prompts"] = last.regime + " / " + last.task + " / " + last.difficulty
    paths = [tradeoff_figure(last[last.optimizer == opt], x="gamma", x_label="focal exponent gamma",
                             hue="regime / task / prompts",
                             panels=[("pass@1_hard gain", "gain on initially hard prompts"),
                                     ("pass@1 gain", "pass@1 gain (all prompts)"),
                                     ("pass@1024", "final pass@1024"), ("entropy", "final entropy")],
                             title=f"Difficulty axis: learning, {opt} ({suffix})",
                             path=figures / f"difficulty_axis_learning_{opt}_{suffix}.png")
             for opt in s.optimizers]
    first = df[(df.phase == "first") & (df.step == 1) & (df.task == "bandit") & (df.optimizer == s.optimizers[0])].copy()
    first["ess_fraction"] = first["ess"] / [groups_per_step(s, r, "bandit", d) for r, d in zip(first.regime,
                                                                                               first.difficulty)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    rows = []
    for i, d in enumerate(theory.difficulty.unique()):
        color = f"C{i}"
        th = theory[theory.difficulty == d]
        for ax, metric, col in ((axes[0], "hardness", "hardness"), (axes[1], "ess_fraction", "ess_fraction")):
            ax.plot(th.gamma, th[col], color=color, label=f"{d}: closed form")
            m = mean_ci(first[first.difficulty == d], ["gamma"], metric)
            ax.errorbar(m.gamma, m[metric], yerr=m.ci95, fmt="o", color=color, ms=4, capsize=2,
                        label=f"{d}: first batch")
            rows.append(m.assign(difficulty=d, metric=metric).rename(columns={metric: "value"}))
    axes[0].set(xlabel="focal exponent gamma", ylabel="mass-weighted hardness E_m[1 - p]")
    axes[1].set(xlabel="focal exponent gamma", ylabel="ESS per prompt")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Difficulty axis: closed form vs first batch, bandit, {s.optimizers[0]} ({suffix})", fontsize=11)
    fig.tight_layout()
    path = figures / f"difficulty_axis_theory_{suffix}.png"
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    write_atomic(path.with_suffix(".csv"), pd.concat(rows + [theory.assign(metric="closed form")], ignore_index=True))
    return paths + [path]


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "difficulty_axis")
    executor = executor_from_args(args)
    theory = theory_table(settings)
    print(f"Closed form (F-GRPO, G = {settings.G}): mass hardness and ESS per group")
    print(theory.to_string(index=False, float_format=lambda v: f"{v:7.4f}"))
    df = run_sweep(settings, ResultStore(Path(args.out) / suffix), executor)
    for line in verdicts(df, theory, settings):
        print(line)
    for path in [] if args.no_figures else make_figures(df, theory, settings, Path(args.figures), suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
