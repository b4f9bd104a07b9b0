"""Phase shift (arXiv 2607.01490): which static (sign weight, focal exponent) makes the most progress per step
in the early, high-entropy phase, and which in the late, low-entropy phase?

Every static setting starts from the same two states of one bandit: the initial policy (early phase) and a
checkpoint trained with GRPO until its entropy fell to a fraction of the initial entropy (late phase), and
trains for the same window. A static setting is FADE with a constant schedule: focal exponent gamma and
negative-advantage weight lam_neg (lam_neg < 1 suppresses negatives, 1 is balanced, > 1 favours them).

Claim checked: exploration favours balance and hard focus; exploitation favours suppression and medium focus.
Each part is a region of the grid (e.g. lam_neg < 1). The first half of the seeds picks the best setting inside the
region and the best outside it; the second half judges them: CONFIRMED when the inside setting's progress minus the
outside one's, paired by seed, has a 95% interval above 0. A tie is NOT CONFIRMED (the single best of the grid,
chosen and judged on the same seeds, would turn ties into verdicts).
Every verdict names its regime (``fadesim.tasks.regimes``: toy, llm, math), optimizer (adam_shared / adam, also the
GRPO warm-up's) and task. In the math regime the task is ``math_tasks`` (sharpen: the late phase restarts its shared
sharpness, skill and per-prompt logits from the GRPO checkpoint, ``Sharpen.restarted``; its metrics, and so the
progress, are read on the held-out prompts).

    python experiments/phase_shift.py            # --quick (default)
    python experiments/phase_shift.py --full     # toy and llm regimes (the committed figures)
    python experiments/phase_shift.py --full --regime math --figures paper_figures/phase_shift/math_regime
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from fadesim.lab.regime_tasks import LLMRegimeSettings, regime_task, regime_task_names
from fadesim.lab.settings import check_advantage_values, check_axes, parse_settings
from fadesim.lab.stats import ci95, split_seeds, verdict
from fadesim.lab.units import Executor, executor_from_args, LOCAL, run_units
from fadesim.lab.plots import tradeoff_figure
from fadesim.lab.results import ResultStore
from fadesim.sim import SimConfig, simulate
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import REGIMES, Bandit, LinearSoftmax, Sharpen

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    gammas: str = "0,1,2,3"
    lam_negs: str = "0.25,0.5,1,1.5"
    seeds: int = 4  # the first half picks the settings, the second half judges them
    regimes: tuple[str, ...] = ("toy", "llm")
    optimizers: tuple[str, ...] = ("adam_shared",)
    n_prompts: int = 256
    n_answers: int = 32
    n_correct: int = 3
    difficulty: str = "mixed"
    G: int = 16
    window: int = 50  # steps trained from each starting state
    warm_steps: int = 300  # GRPO steps to reach the late-phase checkpoint
    lr: float = 0.02
    tasks: str = "bandit,linear_softmax"
    math_tasks: str = "sharpen"  # the math regime's (its preset's sizes)

    def __post_init__(self) -> None:
        check_axes("phase_shift", regimes=(self.regimes, REGIMES), optimizers=(self.optimizers, OPTIMIZERS))
        check_advantage_values("phase_shift", "fade", gamma_explore=("gammas", self.gammas),
                               lam_neg_explore=("lam_negs", self.lam_negs))


QUICK = Settings()
FULL = Settings(seeds=16, n_prompts=512, llm_n_prompts=128, gammas="0,0.5,1,2,3,4",
                lam_negs="0.1,0.25,0.5,0.75,1,1.5,2", optimizers=("adam_shared", "adam"))


def grid(s: Settings) -> list[tuple[float, float]]:
    return list(itertools.product([float(g) for g in s.gammas.split(",")], [float(x) for x in s.lam_negs.split(",")]))


def starting_tasks(task_name: str, s: Settings, regime: str = "toy", optimizer: str = "adam_shared"
                   ) -> dict[str, object]:
    """The initial task and the same task started from a GRPO checkpoint (parameters after warm_steps with
    ``optimizer``)."""
    import jax
    import jax.numpy as jnp

    from fadesim.sim.step import initial_state, train_step

    early = regime_task(s, task_name, regime)
    cfg = SimConfig(advantage="grpo", G=s.G, steps=s.warm_steps, log_every=s.warm_steps, lr=s.lr, optimizer=optimizer)

    @jax.jit
    def warm(key):
        def body(state, t):
            u = jax.random.uniform(jax.random.fold_in(key, t), early.uniform_shape(s.G))
            return train_step(early, cfg, state, u, {}, jnp)[0], None

        state, _ = jax.lax.scan(body, initial_state(early, cfg, jnp, jnp.float32), jnp.arange(s.warm_steps))
        return state["params"]

    params = {k: np.asarray(v, dtype=np.float64) for k, v in warm(jax.random.PRNGKey(12345)).items()}
    if isinstance(early, Sharpen):
        late = early.restarted(params)
    elif isinstance(early, LinearSoftmax):
        late = dataclasses.replace(early, W0=params["W"], logits0=early.logits({"W": params["W"]}, np))
    else:
        theta = params["theta"]
        late = Bandit(logits0=theta - theta.mean(axis=1, keepdims=True), correct=early.correct)
    return {"early": early, "late": late}


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    tasks: dict[tuple[str, str, str], dict[str, object]] = {}
    cells = grid(s)
    sweep = {"gamma_explore": [g for g, _ in cells], "gamma_exploit": [g for g, _ in cells],
             "lam_neg_explore": [x for _, x in cells], "lam_neg_exploit": [x for _, x in cells]}

    def compute(spec: dict) -> pd.DataFrame:
        key = (spec["regime"], spec["optimizer"], spec["task"])
        if key not in tasks:
            tasks[key] = starting_tasks(spec["task"], s, spec["regime"], spec["optimizer"])
        cfg = SimConfig(advantage="fade", G=s.G, steps=s.window, log_every=s.window, optimizer=spec["optimizer"],
                        lr=s.lr)
        res = simulate(tasks[key][spec["phase"]], cfg, seeds=[spec["seed"]], sweep=sweep)
        df = res.to_frame({"phase": spec["phase"], "regime": spec["regime"]})
        df["task"] = spec["task"]
        df["gamma"], df["lam_neg"] = df["gamma_explore"], df["lam_neg_explore"]
        return df

    specs = [{"experiment": "phase_shift", "regime": r, "optimizer": o, "task": t, "phase": ph, "seed": seed,
              **dataclasses.asdict(s)}
             for r in s.regimes for o in s.optimizers for t in regime_task_names(s, r) for ph in ("early", "late")
             for seed in range(s.seeds)]
    return run_units(specs, compute, store, "phase-shift sweep", executor)


def progress(df: pd.DataFrame, metric: str = "pass@1") -> pd.DataFrame:
    """Per (regime, optimizer, task, phase, seed, gamma, lam_neg): gain in ``metric`` per step over the window, and
    start entropy."""
    key = ["regime", "optimizer", "task", "phase", "seed", "gamma", "lam_neg"]
    start = df[df.step == 0].set_index(key)
    end = df[df.step == df.step.max()].set_index(key)
    out = ((end[metric] - start[metric]) / df.step.max()).rename("progress").reset_index()
    out["start_entropy"] = start["entropy"].values
    return out


def best_settings(prog: pd.DataFrame) -> dict[tuple[str, str, str, str], tuple[float, float, float, float]]:
    """(regime, optimizer, task, phase) -> (gamma, lam_neg, held-out mean progress, 95% half-width) of the static
    setting with the most mean progress on the tuning seeds."""
    tune, held = split_seeds(prog.seed, "phase_shift")
    out = {}
    for key, part in prog.groupby(["regime", "optimizer", "task", "phase"]):
        means = part[part.seed.isin(tune)].groupby(["gamma", "lam_neg"]).progress.mean()
        g, lam = means.idxmax()
        m, h = ci95(part[(part.gamma == g) & (part.lam_neg == lam) & part.seed.isin(held)].progress)
        out[key] = (float(g), float(lam), m, h)
    return out


@dataclass(frozen=True)
class ClaimTest:
    """The claim's best setting against the best setting that contradicts it, both picked on the tuning seeds;
    ``gain``: held-out progress of the first minus the second, paired by seed (mean, 95% half-width)."""

    inside: tuple[float, float] | None  # (gamma, lam_neg)
    outside: tuple[float, float] | None
    gain: float
    half_width: float
    n_held_out: int

    @property
    def confirmed(self) -> bool:
        return self.inside is not None and self.outside is not None and self.gain - self.half_width > 0

    def describe(self) -> str:
        if self.inside is None or self.outside is None:
            return f"the grid has no setting {'inside' if self.inside is None else 'outside'} the claim"
        (gi, li), (go, lo) = self.inside, self.outside
        return (f"claim's best gamma = {gi:g}, lam_neg = {li:g} vs the rest's best gamma = {go:g}, lam_neg = {lo:g}: "
                f"{self.gain * 1e3:+.3g} +- {self.half_width * 1e3:.2g} per 1000 steps over the same window (matched step) "
                f"on {self.n_held_out} held-out seeds")


def claim_test(part: pd.DataFrame, in_claim: Callable[[float, float], bool]) -> ClaimTest:
    """Pick the best setting (mean progress on the tuning seeds) inside and outside the claim; judge the pair on the
    held-out seeds."""
    tune, held = split_seeds(part.seed, "phase_shift")
    means = part[part.seed.isin(tune)].groupby(["gamma", "lam_neg"]).progress.mean()
    inside = means[[in_claim(g, lam) for g, lam in means.index]]
    outside = means[[not in_claim(g, lam) for g, lam in means.index]]
    best_in = None if inside.empty else tuple(map(float, inside.idxmax()))
    best_out = None if outside.empty else tuple(map(float, outside.idxmax()))
    if best_in is None or best_out is None:
        return ClaimTest(best_in, best_out, float("nan"), float("nan"), len(held))
    by_seed = part[part.seed.isin(held)].set_index(["gamma", "lam_neg", "seed"]).progress
    gain, half = ci95(by_seed.loc[best_in].loc[held].values - by_seed.loc[best_out].loc[held].values)
    return ClaimTest(best_in, best_out, gain, half, len(held))


def verdicts(prog: pd.DataFrame) -> list[str]:
    """Each claim CONFIRMED when its best setting beats the best setting outside it on the held-out seeds (95%
    interval of the paired gain above 0); a tie, or a win for the rest, is NOT CONFIRMED."""
    best = best_settings(prog)
    tune, held = split_seeds(prog.seed, "phase_shift")
    lines = []
    for (regime, opt, task), run in prog.groupby(["regime", "optimizer", "task"], sort=False):
        ge, le, me, he = best[(regime, opt, task, "early")]
        gl, ll, ml, hl = best[(regime, opt, task, "late")]
        early, late = run[run.phase == "early"], run[run.phase == "late"]
        h_early, h_late = early.start_entropy.mean(), late.start_entropy.mean()
        tag = f"[{regime} regime, {task}, {opt}]"
        claims = [
            ("exploration favours balance (0.75 <= lam_neg <= 1.25)", early, lambda g, lam: 0.75 <= lam <= 1.25),
            ("exploration favours hard focus (gamma >= 1)", early, lambda g, lam: g >= 1),
            ("exploitation favours suppressing negatives (lam_neg < 1)", late, lambda g, lam: lam < 1),
            ("exploitation favours medium focus (" + (f"gamma below early's best, {ge:g}, or 0)" if ge > 0 else
                                                      "gamma 0, early's best)"), late,
             lambda g, lam: g < ge or g == 0),
        ]
        lines += [
            f"{tag} phases: early starts at entropy {h_early:.3f}, late at {h_late:.3f} (ratio {h_late / h_early:.2f})",
            f"{tag} best static on tuning seeds {tune[0]}-{tune[-1]}, pass@1 gain per 1000 steps on held-out seeds "
            f"{held[0]}-{held[-1]}: early gamma = {ge:g}, lam_neg = {le:g} ({me * 1e3:.3f} +- {he * 1e3:.3f}); "
            f"late gamma = {gl:g}, lam_neg = {ll:g} ({ml * 1e3:.3f} +- {hl * 1e3:.3f})",
        ]
        for text, part, in_claim in claims:
            test = claim_test(part, in_claim)
            lines.append(f"{tag} {text}: {verdict(test.confirmed)} ({test.describe()})")
    return lines


def make_figures(prog: pd.DataFrame, figures: Path, suffix: str) -> list[Path]:
    hue = "negative weight"  # the legend's title
    prog = prog.assign(progress_per_1000=prog.progress * 1e3, **{hue: prog.lam_neg.map(lambda v: f"lam_neg={v:g}")})
    paths = []
    for (regime, opt, task), run in prog.groupby(["regime", "optimizer", "task"], sort=False):
        for phase in ("early", "late"):
            paths.append(tradeoff_figure(
                run[run.phase == phase], x="gamma", x_label="focal exponent gamma",
                hue=hue, panels=[("progress_per_1000", "pass@1 gain per 1000 steps")],
                title=f"Phase shift: {regime} regime, {task}, {opt}, {phase} phase ({suffix})",
                path=figures / f"phase_shift_{regime}_{opt}_{task}_{phase}_{suffix}.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "phase_shift")
    executor = executor_from_args(args)
    df = run_sweep(settings, ResultStore(Path(args.out) / suffix), executor)
    prog = progress(df)
    for line in verdicts(prog):
        print(line)
    # exploration's value shows in pass@k rather than pass@1: the same verdicts judged by pass@16 progress
    print("judged by pass@16 progress instead of pass@1:")
    for line in verdicts(progress(df, "pass@16")):
        if "favours" in line:
            print("  " + line)
    for path in [] if args.no_figures else make_figures(prog, Path(args.figures), suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
