"""Phase shift (arXiv 2607.01490): which static (sign weight, focal exponent) makes the most progress per step
in the early, high-entropy phase, and which in the late, low-entropy phase?

Every static setting starts from the same two states of one bandit: the initial policy (early phase) and a
checkpoint trained with GRPO until its entropy fell to a fraction of the initial entropy (late phase), and
trains for the same window. A static setting is FADE with a constant schedule: focal exponent gamma and
negative-advantage weight lam_neg (lam_neg < 1 suppresses negatives, 1 is balanced, > 1 favours them).

Claim checked: exploration favours balance and hard focus; exploitation favours suppression and medium focus.
Every verdict names its regime (``fadesim.tasks.regimes``: toy, llm), optimizer (adam_shared / adam, also the
GRPO warm-up's) and task.

    python experiments/phase_shift.py            # --quick (default)
    python experiments/phase_shift.py --full
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fadesim.experiment import (LOCAL, Executor, LLMRegimeSettings, check_axes, ci95,  # noqa: E402
                                executor_from_args, llm_task, parse_settings, run_units, verdict)
from fadesim.plots import tradeoff_figure  # noqa: E402
from fadesim.results import ResultStore  # noqa: E402
from fadesim.sim import SimConfig, simulate  # noqa: E402
from fadesim.sim.optim import OPTIMIZERS  # noqa: E402
from fadesim.tasks import REGIMES, Bandit, LinearSoftmax, make_task  # noqa: E402


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    gammas: str = "0,1,2,3"
    lam_negs: str = "0.25,0.5,1,1.5"
    seeds: int = 4
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

    def __post_init__(self) -> None:
        check_axes("phase_shift", regimes=(self.regimes, REGIMES), optimizers=(self.optimizers, OPTIMIZERS))


QUICK = Settings()
FULL = Settings(seeds=8, n_prompts=512, llm_n_prompts=128, gammas="0,0.5,1,2,3,4",
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

    if regime == "llm":
        early = llm_task(s, task_name)
    else:
        early = make_task(task_name, regime="toy", n_prompts=s.n_prompts, n_answers=s.n_answers,
                          n_correct=s.n_correct, difficulty=s.difficulty, seed=0)
    cfg = SimConfig(advantage="grpo", G=s.G, steps=s.warm_steps, log_every=s.warm_steps, lr=s.lr, optimizer=optimizer)

    @jax.jit
    def warm(key):
        def body(state, t):
            u = jax.random.uniform(jax.random.fold_in(key, t), early.uniform_shape(s.G))
            return train_step(early, cfg, state, u, {}, jnp)[0], None

        state, _ = jax.lax.scan(body, initial_state(early, cfg, jnp, jnp.float32), jnp.arange(s.warm_steps))
        return state["params"]

    params = {k: np.asarray(v, dtype=np.float64) for k, v in warm(jax.random.PRNGKey(12345)).items()}
    if isinstance(early, LinearSoftmax):
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
             for r in s.regimes for o in s.optimizers for t in s.tasks.split(",") for ph in ("early", "late")
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
    """(regime, optimizer, task, phase) -> (gamma, lam_neg, mean progress, 95% half-width) of the best static
    setting."""
    out = {}
    for key, part in prog.groupby(["regime", "optimizer", "task", "phase"]):
        means = part.groupby(["gamma", "lam_neg"]).progress.mean()
        g, lam = means.idxmax()
        m, h = ci95(part[(part.gamma == g) & (part.lam_neg == lam)].progress)
        out[key] = (float(g), float(lam), m, h)
    return out


def verdicts(prog: pd.DataFrame) -> list[str]:
    best = best_settings(prog)
    lines = []
    for (regime, opt, task), run in prog.groupby(["regime", "optimizer", "task"], sort=False):
        ge, le, me, he = best[(regime, opt, task, "early")]
        gl, ll, ml, hl = best[(regime, opt, task, "late")]
        h_early = run[run.phase == "early"].start_entropy.mean()
        h_late = run[run.phase == "late"].start_entropy.mean()
        tag = f"[{regime} regime, {task}, {opt}]"
        lines += [
            f"{tag} phases: early starts at entropy {h_early:.3f}, late at {h_late:.3f} (ratio {h_late / h_early:.2f})",
            f"{tag} best static early: gamma = {ge:g}, lam_neg = {le:g} (pass@1 gain {me * 1e3:.3f} +- {he * 1e3:.3f} "
            f"per 1000 steps); late: gamma = {gl:g}, lam_neg = {ll:g} ({ml * 1e3:.3f} +- {hl * 1e3:.3f})",
            f"{tag} exploration favours balance (0.75 <= lam_neg <= 1.25): {verdict(0.75 <= le <= 1.25)} (best early lam_neg = {le:g})",
            f"{tag} exploration favours hard focus (gamma >= 1): {verdict(ge >= 1)} (best early gamma = {ge:g})",
            f"{tag} exploitation favours suppressing negatives (lam_neg < 1): {verdict(ll < 1)} (best late lam_neg = {ll:g})",
            f"{tag} exploitation favours medium focus (gamma below early's, or 0): {verdict(gl < ge or gl == 0)} "
            f"(best late gamma = {gl:g})",
        ]
    return lines


def make_figures(prog: pd.DataFrame, figures: Path, suffix: str) -> list[Path]:
    prog = prog.assign(progress_per_1000=prog.progress * 1e3, lam_neg_label=prog.lam_neg.map(lambda v: f"lam_neg={v:g}"))
    paths = []
    for (regime, opt, task), run in prog.groupby(["regime", "optimizer", "task"], sort=False):
        for phase in ("early", "late"):
            paths.append(tradeoff_figure(
                run[run.phase == phase], x="gamma", x_label="focal exponent gamma",
                hue="lam_neg_label", panels=[("progress_per_1000", "pass@1 gain per 1000 steps")],
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
    for path in make_figures(prog, Path(args.figures), suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
