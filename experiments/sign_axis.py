"""Sign axis (arXiv 2607.01490): sweep the sign balance from NSR-only through balanced to PSR-only.

Claim checked: imbalance towards positive mass collapses entropy (sharpening); imbalance towards negative
mass damages weight geometry (norm blow-up, rank / conditioning).

Prediction before measurement: ``fadesim.theory.drift`` gives, for the bandit's initial state, the expected
one-step drift of entropy, within-correct entropy, logit norm and pass@1 of a plain-SGD step to second order
(the sign axis acts only there), for every balance b; the same sweep is then simulated for ``theory_steps``
(default 1) SGD steps at that per-prompt step, and Adam steps, and the verdicts say whether the predicted sign of each
effect (which end of the axis lowers entropy / diversity, grows the logit norm, learns faster) holds.

The sweep uses ``sign_balanced`` (A+ = 1 + b, A- = -(1 - b)): it moves mass between signs at (nearly) fixed
total mass, unlike W-REINFORCE's lambda, which also rescales the step. Note that with +-1 rewards, b is a
constant baseline shift, so the *expected* update does not depend on b; the sign axis acts through sampling
noise and the optimizer's normalisation (Adam here), which is what the simulation measures.

    python experiments/sign_axis.py            # --quick (default): about a minute on 2 cores
    python experiments/sign_axis.py --full     # the paper figure: 21 balances x 8 seeds x 512 prompts x 1000 steps
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fadesim  # noqa: E402
from fadesim.experiment import (LOCAL, Executor, ci95, executor_from_args, parse_settings,  # noqa: E402
                                run_units, verdict)
from fadesim.plots import over_time_figure, prediction_figure, tradeoff_figure  # noqa: E402
from fadesim.results import ResultStore  # noqa: E402
from fadesim.sim import SimConfig, simulate  # noqa: E402
from fadesim.tasks import as_distribution, make_task  # noqa: E402


@dataclass(frozen=True)
class Settings:
    n_balances: int = 11
    seeds: int = 4
    n_prompts: int = 256
    n_answers: int = 32
    n_correct: int = 3
    width: int = 16
    G: int = 16
    steps: int = 400
    log_every: int = 20
    lr: float = 0.02
    difficulty: str = "mixed"
    tasks: tuple[str, ...] = ("bandit", "linear_softmax")
    theory_step: float = 0.25  # per-prompt plain-SGD step of the theory check (simulator lr = step x n_prompts)
    theory_steps: int = 1  # simulated steps over which the drift is measured (1: exactly what the theory predicts)
    theory_seeds: int = 64


QUICK = Settings()
FULL = Settings(n_balances=21, seeds=8, n_prompts=512, steps=1000, log_every=50, theory_seeds=256)

REGIME = "toy"  # 32 answers, 3 correct, Beta(0.8, 0.8) difficulty (the llm regime is issue #12's)

#: the quantities whose drift the theory predicts: (theory.drift name, simulator metric, axis label)
THEORY_PANELS = [("entropy", "entropy", "entropy drift / step"),
                 ("correct_entropy", "correct_entropy", "within-correct entropy drift / step"),
                 ("logit_norm", "logit_norm", "logit-norm drift / step"),
                 ("pass_rate", "pass@1", "pass@1 drift / step")]


def balances(s: Settings) -> list[float]:
    return [float(b) for b in np.round(np.linspace(-1.0, 1.0, s.n_balances), 6)]


def exact_mass_table(s: Settings) -> pd.DataFrame:
    """Exact expected masses per group under the task's difficulty distribution (theory.profile)."""
    weights = as_distribution(s.difficulty).k_weights(s.G)
    rows = []
    for name, params in [("grpo", {}), ("dr_grpo", {}), ("rloo", {}), ("psr", {}), ("nsr", {}),
                         ("w_reinforce", {"lam": 0.1}), ("sign_balanced", {"balance": -0.5}),
                         ("sign_balanced", {"balance": 0.5}), ("focal", {"gamma": 2.0}), ("pass_at_k", {"K": 4})]:
        m = fadesim.profile(name, s.G, **params).under(weights)
        label = name + (f"({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        rows.append({"advantage": label, "E[M+]": m.positive_mass, "E[M-]": m.negative_mass,
                     "balance": m.balance, "ESS/group": m.ess_fraction, "hardness": m.hardness})
    return pd.DataFrame(rows)


def build_task(s: Settings, name: str):
    kw = dict(n_prompts=s.n_prompts, n_answers=s.n_answers, n_correct=s.n_correct, difficulty=s.difficulty, seed=0)
    if name == "linear_softmax":
        kw["width"] = s.width
    return make_task(name, **kw)


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per (task, seed): all balances of that seed in one jitted, vmapped call. Resumable."""
    cfg = SimConfig(advantage="sign_balanced", G=s.G, steps=s.steps, log_every=s.log_every,
                    optimizer="adam", lr=s.lr)
    tasks: dict[str, object] = {}

    def compute(spec: dict) -> pd.DataFrame:
        name = spec["task"]
        if name not in tasks:
            tasks[name] = build_task(s, name)
        return simulate(tasks[name], cfg, seeds=[spec["seed"]], sweep={"balance": balances(s)}).to_frame()

    specs = [{"experiment": "sign_axis", "task": t, "seed": seed, **dataclasses.asdict(s)}
             for t in s.tasks for seed in range(s.seeds)]
    return run_units(specs, compute, store, "sign-axis sweep", executor)


def verdicts(df: pd.DataFrame) -> list[str]:
    """One line per claim, task and phase: CONFIRMED / NOT CONFIRMED with the deciding numbers.

    Each compares an imbalanced extreme with balanced (b = 0), paired over seeds, 95% CI: positive mass
    collapses entropy if entropy(b = +1) < entropy(b = 0); negative mass damages geometry if the change over
    training of a geometry metric is worse at b = -1 than at b = 0. Both are judged early in training
    (step ~ steps/5, the high-entropy phase) and at the end, because the trade-offs move during training.
    """
    steps = np.sort(df.step.unique())
    phases = [("early", steps[np.argmin(np.abs(steps - steps.max() / 5))]), ("final", steps.max())]
    first = df[df.step == 0].set_index(["task", "seed", "balance"])
    lines = []
    for phase, at in phases:
        for task, part in df[df.step == at].groupby("task"):
            ent = part.set_index(["seed", "balance"]).entropy
            m, h = ci95([ent.loc[(seed, 0.0)] - ent.loc[(seed, 1.0)] for seed in part.seed.unique()])
            lines.append(
                f"[{REGIME} regime, {task}, adam, {phase} step {at}] positive mass collapses entropy: {verdict(m - h > 0)} "
                f"(balanced minus PSR-only entropy = {m:+.3f} +- {h:.3f}; entropy at b=-1/0/+1: "
                + "/".join(f"{part[part.balance == b].entropy.mean():.3f}" for b in (-1.0, 0.0, 1.0)) + ")")
            geometry = [("logit_norm", +1)] + ([("weight_norm", +1), ("condition_number", +1), ("effective_rank", -1)]
                                               if task == "linear_softmax" else [])
            for metric, worse in geometry:
                p = part.set_index(["seed", "balance"])[metric]
                change = p - first.loc[task][metric].reindex(p.index)
                m, h = ci95([worse * (change.loc[(seed, -1.0)] - change.loc[(seed, 0.0)]) for seed in part.seed.unique()])
                lines.append(
                    f"[{REGIME} regime, {task}, adam, {phase} step {at}] negative mass damages geometry ({metric}): "
                    f"{verdict(m - h > 0)} (NSR-only minus balanced change, "
                    f"{'higher' if worse > 0 else 'lower'} = worse: {worse * m:+.3f} +- {h:.3f})")
    return lines


def theory_configs(s: Settings) -> dict[str, SimConfig]:
    """The theory check's runs: plain SGD at the per-prompt step the theory is evaluated at, and the sweep's Adam."""
    common = dict(advantage="sign_balanced", G=s.G, steps=s.theory_steps, log_every=s.theory_steps)
    return {"sgd": SimConfig(**common, optimizer="sgd", lr=s.theory_step * s.n_prompts),
            "adam": SimConfig(**common, optimizer="adam", lr=s.lr)}


def predicted_drift(s: Settings) -> pd.DataFrame:
    """theory.drift at the bandit's initial state: the expected one-step change of each quantity, mean over prompts,
    at the per-prompt SGD step ``theory_step`` (``theory.per_prompt_step`` of the SGD config)."""
    task = build_task(s, "bandit")
    step = fadesim.theory.per_prompt_step(theory_configs(s)["sgd"], task)
    rows = []
    for b in balances(s):
        d = fadesim.theory.drift("sign_balanced", task.logits0, task.correct, s.G, step, balance=b)
        for quantity, metric, _ in THEORY_PANELS:
            rows.append({"balance": b, "quantity": quantity, "predicted": float(np.mean(d.change(quantity))),
                         "first": float(np.mean(d[quantity].first)) * step})
    return pd.DataFrame(rows)


def run_theory_check(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per optimizer: every balance x theory_seeds for theory_steps steps on the bandit. Resumable."""
    task = build_task(s, "bandit")
    cfgs = theory_configs(s)

    def compute(spec: dict) -> pd.DataFrame:
        return simulate(task, cfgs[spec["optimizer"]], seeds=list(range(s.theory_seeds)),
                        sweep={"balance": balances(s)}).to_frame()

    specs = [{"experiment": "sign_axis_theory", "optimizer": name, **dataclasses.asdict(s)} for name in cfgs]
    return run_units(specs, compute, store, "sign-axis theory check", executor)


def per_seed_drift(sim: pd.DataFrame, metric: str) -> pd.Series:
    """(metric at the last step - metric at step 0) / steps, indexed by (optimizer, seed, balance)."""
    T = sim.step.max()
    start = sim[sim.step == 0].set_index(["optimizer", "seed", "balance"])[metric]
    end = sim[sim.step == T].set_index(["optimizer", "seed", "balance"])[metric]
    return ((end - start) / T).rename("drift")


def theory_table(sim: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Measured drift per step (mean over seeds, 95% CI) next to the SGD prediction."""
    rows = []
    for quantity, metric, _ in THEORY_PANELS:
        per_seed = per_seed_drift(sim, metric).reset_index()
        for (opt, b), part in sorted(per_seed.groupby(["optimizer", "balance"]), key=lambda g: (g[0][0] != "sgd", g[0])):
            m, h = ci95(part.drift)
            pred = predicted[(predicted.balance == b) & (predicted.quantity == quantity)].predicted.item()
            rows.append({"optimizer": opt, "balance": b, "quantity": quantity, "measured": m, "ci95": h,
                         "predicted": pred if opt == "sgd" else np.nan, "sgd_prediction": pred})
    return pd.DataFrame(rows)


def theory_verdicts(sim: pd.DataFrame, table: pd.DataFrame, s: Settings) -> list[str]:
    """Per optimizer and quantity: does the predicted sign of drift(b=+1) - drift(b=-1) hold in simulation?

    The measured effect is paired over seeds (the same draws at every balance); it counts as CONFIRMED when its
    95% CI excludes 0 on the predicted side. Under SGD the whole curve is also compared with the prediction.
    """
    lines = []
    for opt in ("sgd", "adam"):
        how = (f"sgd (per-prompt step {s.theory_step:g})" if opt == "sgd" else f"adam (lr {s.lr:g})")
        for quantity, metric, _ in THEORY_PANELS:
            per = per_seed_drift(sim, metric).loc[opt]
            effects = [per.loc[(seed, 1.0)] - per.loc[(seed, -1.0)] for seed in per.index.get_level_values(0).unique()]
            m, h = ci95(effects)
            part = table[(table.optimizer == opt) & (table.quantity == quantity)].set_index("balance")
            pe = part.sgd_prediction.loc[1.0] - part.sgd_prediction.loc[-1.0]
            ok = (m - h > 0) if pe > 0 else (m + h < 0)
            grow = "raises" if quantity in ("logit_norm", "pass_rate") else "lowers"
            end_name = ("PSR end (b=+1)" if (pe < 0) == (grow == "lowers") else "NSR end (b=-1)")
            line = (f"[{REGIME} regime, bandit, {how}, theory vs simulation] {quantity}: predicted "
                    f"drift(b=+1) - drift(b=-1) = {pe:+.2e} per step (the {end_name} {grow} it more); "
                    f"simulated {m:+.2e} +- {h:.1e}; predicted sign: {verdict(ok)}")
            if opt == "sgd":
                err = np.abs(part.measured - part.predicted)
                line += (f"; curve: max |simulated - predicted| = {err.max():.2e} vs max |predicted| "
                         f"{np.abs(part.predicted).max():.2e}, predicted within the 95% CI at "
                         f"{int((err <= part.ci95).sum())}/{len(part)} balances")
            lines.append(line)
    return lines


def make_theory_figure(table: pd.DataFrame, figures: Path, suffix: str) -> Path:
    panels = [(quantity, label) for quantity, _, label in THEORY_PANELS]
    facet = table.optimizer.map({"sgd": "plain SGD: prediction vs simulation",
                                 "adam": "Adam: simulation (no prediction)"})
    return prediction_figure(table.assign(run=facet), x="balance", x_label="sign balance b", panels=panels,
                             facet="run", title=f"Sign axis: second-order drift, theory vs first simulated steps "
                                                f"(bandit, {REGIME} regime, {suffix})",
                             path=figures / f"sign_axis_theory_{suffix}.png")


def make_figures(df: pd.DataFrame, figures: Path, suffix: str) -> list[Path]:
    last = df[df.step == df.step.max()]
    paths = [
        tradeoff_figure(last, x="balance", x_label="sign balance b (-1 NSR ... +1 PSR)", hue="task",
                        panels=[("entropy", "final policy entropy (nats)"), ("logit_norm", "final logit norm"),
                                ("pass@1", "final pass@1"), ("pass@256", "final pass@256"),
                                ("distinct_correct", "correct answers kept (p > 0.01)")],
                        title=f"Sign axis trade-off ({suffix})", path=figures / f"sign_axis_tradeoff_{suffix}.png"),
        tradeoff_figure(last[last.task == "linear_softmax"], x="balance", x_label="sign balance b", hue="task",
                        panels=[("weight_norm", "||W||_F"), ("effective_rank", "effective rank of W"),
                                ("condition_number", "condition number of W")],
                        title=f"Sign axis: weight geometry, linear_softmax ({suffix})",
                        path=figures / f"sign_axis_geometry_{suffix}.png"),
    ]
    keep = sorted(df.balance.unique())[:: max(1, len(df.balance.unique()) // 5)]
    paths.append(over_time_figure(df[df.balance.isin(keep)], metric="entropy", label="policy entropy (nats)",
                                  line="balance", line_label="balance b", facet="task",
                                  title=f"Entropy during training ({suffix})",
                                  path=figures / f"sign_axis_entropy_{suffix}.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "sign_axis")
    executor = executor_from_args(args)
    print(f"Exact gradient mass per group, G = {settings.G}, p ~ '{settings.difficulty}' difficulty (theory.profile):")
    print(exact_mass_table(settings).to_string(index=False, float_format=lambda v: f"{v:8.4f}"))
    predicted = predicted_drift(settings)
    print(f"\nPredicted one-step drift (theory.drift, plain SGD, per-prompt step {settings.theory_step:g}, mean over "
          "prompts) at b = -1 / 0 / +1:")
    for quantity, _, _ in THEORY_PANELS:
        part = predicted[predicted.quantity == quantity].set_index("balance")
        print(f"  {quantity:16s} " + " / ".join(f"{part.predicted.loc[b]:+.3e}" for b in (-1.0, 0.0, 1.0))
              + f"   (first-order part {part['first'].loc[0.0]:+.3e}, the same at every b)")
    store = ResultStore(Path(args.out) / suffix)
    sim = run_theory_check(settings, store, executor)
    table = theory_table(sim, predicted)
    df = run_sweep(settings, store, executor)
    print(f"\n{len(df)} rows in {Path(args.out) / suffix}")
    for line in theory_verdicts(sim, table, settings) + verdicts(df):
        print(line)
    for path in [make_theory_figure(table, Path(args.figures), suffix)] + make_figures(df, Path(args.figures), suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
