"""Sign axis (arXiv 2607.01490): sweep the sign balance from negative-only through balanced to positive-only.

Claims checked: imbalance towards positive mass collapses entropy and the diversity of correct answers
(sharpening); imbalance towards negative mass damages weight geometry (norm blow-up, rank / conditioning).

Every verdict names its regime, optimizer, advantage family and task (the axes that decide verdicts):
- regimes (``fadesim.tasks.regimes``): ``math`` (the default and first: the literature protocol's chosen family,
  a shared sharpening and skill over 256 prompts calibrated to Qwen2.5-Math-7B's base pass@k on MATH, arXiv
  2506.01347 Table 1, one prompt a step, pass@k on a held-out half: the regime whose pass@k can cross below the
  base, as published runs' does), ``llm`` (2048 answers, 32 correct, Zipf prior, difficulty calibrated to
  Codex-12B's APPS pass@k, arXiv 2107.03374 Table 3; its pass@k cannot cross) and ``toy`` (32 answers, 3 correct,
  Beta(0.8, 0.8));
- optimizers: ``adam_shared`` (one second moment: the LLM-like normaliser) and ``adam`` (one per logit);
- families: ``sign_scaled`` (main: A = (1 + b) max(A_grpo, 0) + (1 - b) min(A_grpo, 0), so b = 0 is GRPO
  exactly) and ``sign_balanced`` (second: A+ = 1 + b, A- = -(1 - b); b = 0 is +-1 REINFORCE, no baseline).

Prediction before measurement: ``fadesim.theory.drift`` gives, for the bandit's initial state in each regime,
the expected one-step drift of entropy, within-correct entropy, logit norm and pass@1 of a plain-SGD step to
second order, for every balance b; the same sweep is then simulated for ``theory_steps`` (default 1) SGD steps
at that per-prompt step, and with each optimizer, and the verdicts say whether the predicted sign of each
effect holds.

    python experiments/sign_axis.py            # --quick (default): math, llm and toy regimes, adam and adam_shared, ~1 min
    python experiments/sign_axis.py --full     # regimes x {adam, adam_shared} x both families, the committed figures
    python experiments/sign_axis.py --regime toy --optimizer adam,adam_shared   # any subset
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import fadesim
from fadesim.lab.regime_tasks import LLMRegimeSettings, regime_n_prompts, regime_task, regime_task_names
from fadesim.lab.settings import check_axes, parse_settings
from fadesim.lab.stats import ci95, paired_at_pass1, verdict
from fadesim.lab.units import Executor, executor_from_args, LOCAL, run_units
from fadesim.lab.plots import over_time_figure, pass_at_k_figure, prediction_figure, tradeoff_figure
from fadesim.lab.results import ResultStore, write_text_atomic
from fadesim.sim import SimConfig, simulate
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import REGIMES

ROOT = Path(__file__).resolve().parents[1]

FAMILIES = ("sign_scaled", "sign_balanced")


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    n_balances: int = 5
    seeds: int = 3
    regimes: tuple[str, ...] = ("math", "llm", "toy")
    # adam first: the math regime was calibrated and chosen under per-entry Adam (under adam_shared its shared
    # sharpness takes steps far above lr, one second moment for a scalar whose gradient sums every logit)
    optimizers: tuple[str, ...] = ("adam", "adam_shared")
    families: tuple[str, ...] = ("sign_scaled",)  # the first is the main family (theory check, figures)
    tasks: tuple[str, ...] = ("bandit", "linear_softmax")  # toy regime
    llm_tasks: tuple[str, ...] = ("bandit",)  # llm regime (each step costs O(N K): K = 2048)
    math_tasks: tuple[str, ...] = ("sharpen",)  # math regime (its preset's sizes; the theory check uses its bandit)
    n_prompts: int = 256  # toy
    n_answers: int = 32
    n_correct: int = 3
    difficulty: str = "mixed"
    width: int = 16
    G: int = 16
    steps: int = 300
    log_every: int = 20
    lr: float = 0.02
    theory_step: float = 0.25  # per-prompt plain-SGD step of the theory check (simulator lr = step x n_prompts)
    theory_steps: int = 1  # simulated steps over which the drift is measured (1: exactly what the theory predicts)
    theory_seeds: int = 64

    def __post_init__(self) -> None:
        check_axes("sign_axis", regimes=(self.regimes, REGIMES), optimizers=(self.optimizers, OPTIMIZERS),
                   families=(self.families, FAMILIES))
        if "sgd" in self.optimizers:
            raise ValueError("sign_axis: plain SGD is the theory check's optimizer; sweep adam and/or adam_shared")


QUICK = Settings()
FULL = Settings(n_balances=11, seeds=8, optimizers=("adam_shared", "adam"), families=FAMILIES,
                llm_tasks=("bandit", "linear_softmax"), math_tasks=("sharpen", "linear_softmax"), n_prompts=512,
                llm_n_prompts=128, steps=1000, log_every=50, theory_seeds=256)

#: the quantities whose drift the theory predicts: (theory.drift name, simulator metric, axis label)
THEORY_PANELS = [("entropy", "entropy", "entropy drift / step"),
                 ("correct_entropy", "correct_entropy", "within-correct entropy drift / step"),
                 ("logit_norm", "logit_norm", "logit-norm drift / step"),
                 ("pass_rate", "pass@1", "pass@1 drift / step")]


def balances(s: Settings) -> list[float]:
    return [float(b) for b in np.round(np.linspace(-1.0, 1.0, s.n_balances), 6)]


def build_task(s: Settings, regime: str, name: str):
    return regime_task(s, name, regime)


def exact_mass_table(s: Settings, regime: str) -> pd.DataFrame:
    """Exact expected masses per group under the regime's difficulty distribution (theory.profile)."""
    task_kw = fadesim.tasks.regime_kwargs(regime, "bandit")
    difficulty = s.difficulty if regime == "toy" else task_kw["difficulty"]
    weights = fadesim.tasks.as_distribution(difficulty).k_weights(s.G)
    rows = []
    for name, params in [("grpo", {}), ("rloo", {}), ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1}),
                         ("sign_scaled", {"balance": -0.5}), ("sign_scaled", {"balance": 0.5}),
                         ("sign_balanced", {"balance": 0.0}), ("focal", {"gamma": 2.0})]:
        m = fadesim.profile(name, s.G, **params).under(weights)
        label = name + (f"({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        rows.append({"advantage": label, "E[M+]": m.positive_mass, "E[M-]": m.negative_mass,
                     "balance": m.balance, "ESS/group": m.ess_fraction, "hardness": m.hardness})
    return pd.DataFrame(rows)


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per (regime, optimizer, family, task, seed): all balances of that seed in one jitted, vmapped
    call. Resumable."""
    tasks: dict[tuple[str, str], object] = {}

    def compute(spec: dict) -> pd.DataFrame:
        key = (spec["regime"], spec["task"])
        if key not in tasks:
            tasks[key] = build_task(s, *key)
        cfg = SimConfig(advantage=spec["family"], G=s.G, steps=s.steps, log_every=s.log_every,
                        optimizer=spec["optimizer"], lr=s.lr)
        frame = simulate(tasks[key], cfg, seeds=[spec["seed"]], sweep={"balance": balances(s)}).to_frame()
        return frame.assign(regime=spec["regime"], family=spec["family"])

    specs = [{"experiment": "sign_axis", "regime": r, "optimizer": o, "family": f, "task": t, "seed": seed,
              **dataclasses.asdict(s)}
             for r in s.regimes for o in s.optimizers for f in s.families for t in regime_task_names(s, r)
             for seed in range(s.seeds)]
    return run_units(specs, compute, store, "sign-axis sweep", executor)


def verdict_records(df: pd.DataFrame) -> list[dict]:
    """One record per claim x regime x optimizer x family x task x phase, with the deciding numbers.

    Each compares an imbalanced extreme with balanced (b = 0), paired over seeds, 95% CI: positive mass collapses
    entropy / diversity if entropy / effective correct answers at b = +1 are below b = 0; negative mass damages
    geometry if the change over training of a geometry metric is worse at b = -1 than at b = 0. Judged early in
    training (step ~ steps/5, the high-entropy phase) and at the end, because the trade-offs move during training.
    The entropy and diversity claims are judged twice at each phase: at the matched step, and at matched pass@1
    (``matched_pass1_record``), since a balance that learns slower also keeps more entropy at any fixed step.
    """
    steps = np.sort(df.step.unique())
    phases = [("early", steps[np.argmin(np.abs(steps - steps.max() / 5))]), ("final", steps.max())]
    keys = ["regime", "optimizer", "family", "task"]
    out = []
    for combo, run in df.groupby(keys, sort=False):
        ctx = dict(zip(keys, combo))
        first = run[run.step == 0].set_index(["seed", "balance"])
        for phase, at in phases:
            part = run[run.step == at].set_index(["seed", "balance"])
            seeds = part.index.get_level_values(0).unique()
            for claim, metric in (("positive mass collapses entropy", "entropy"),
                                  ("positive mass collapses diversity", "effective_correct")):
                m, h = ci95([part[metric].loc[(sd, 0.0)] - part[metric].loc[(sd, 1.0)] for sd in seeds])
                out.append({**ctx, "phase": phase, "step": int(at), "claim": claim, "metric": metric,
                            "effect": m, "ci95": h, "ok": bool(m - h > 0),
                            "detail": f"b=0 minus b=+1 {metric} = {m:+.3f} +- {h:.3f}; at b=-1/0/+1: " + "/".join(
                                f"{part[metric].xs(b, level=1).mean():.3f}" for b in (-1.0, 0.0, 1.0))})
                out.append({**ctx, **matched_pass1_record(run, part, phase, int(at), claim, metric)})
            geometry = [("logit_norm", +1)] + ([("weight_norm", +1), ("condition_number", +1), ("effective_rank", -1)]
                                               if ctx["task"] == "linear_softmax" else [])
            for metric, worse in geometry:
                change = part[metric] - first[metric].reindex(part.index)
                m, h = ci95([worse * (change.loc[(sd, -1.0)] - change.loc[(sd, 0.0)]) for sd in seeds])
                out.append({**ctx, "phase": phase, "step": int(at), "claim": "negative mass damages geometry",
                            "metric": metric, "effect": worse * m, "ci95": h, "ok": bool(m - h > 0),
                            "detail": f"b=-1 minus b=0 change of {metric} ({'higher' if worse > 0 else 'lower'} = "
                                      f"worse): {worse * m:+.3f} +- {h:.3f}"})
            pk = " ".join(f"pass@{k}={part[f'pass@{k}'].xs(0.0, level=1).mean():.3f}" for k in (1, 16, 1024))
            out[-1]["detail"] += f"; at b=0: {pk}, unsolved={part['unsolved'].xs(0.0, level=1).mean():.3f}"
    return out


def matched_pass1_record(run: pd.DataFrame, part: pd.DataFrame, phase: str, at: int, claim: str,
                         metric: str) -> dict:
    """The same claim at matched pass@1: b = 0 and b = +1 each read where its own pass@1 first reaches the lower
    of the two balances' mean pass@1 at the phase's step (so both reach it on average), paired over the seeds that
    reach it in both (``fadesim.lab.stats.paired_at_pass1``). A difference here is the sign axis at equal
    accuracy, on the entropy-vs-pass@1 frontier, not a difference in learning speed."""
    target = float(min(part["pass@1"].xs(0.0, level=1).mean(), part["pass@1"].xs(1.0, level=1).mean()))
    pairs, n = paired_at_pass1(run[run.balance == 0.0], run[run.balance == 1.0], target, metric)
    base = {"phase": f"{phase}, matched pass@1", "step": at, "claim": claim, "metric": metric, "target": target}
    if len(pairs) < 2:
        return {**base, "effect": np.nan, "ci95": np.nan, "ok": False,
                "detail": f"pass@1 {target:.3f} reached during training by both balances in {len(pairs)}/{n} "
                          f"seeds: not measurable"}
    m, h = ci95(pairs)
    return {**base, "effect": m, "ci95": h, "ok": bool(m - h > 0),
            "detail": f"b=0 minus b=+1 {metric} where each first reaches pass@1 {target:.3f} (the lower of their "
                      f"means at step {at}): {m:+.3f} +- {h:.3f} over {len(pairs)}/{n} seeds"}


def verdicts(df: pd.DataFrame) -> list[str]:
    """One line per record: at a matched step ("early step 200") or at matched pass@1 ("early, matched pass@1
    0.776"), which it says."""
    return [f"[{r['regime']} regime, {r['task']}, {r['optimizer']}, {r['family']}, "
            + (f"{r['phase']} {r['target']:.3f}" if "matched" in r["phase"] else f"{r['phase']} step {r['step']}")
            + f"] {r['claim']} ({r['metric']}): "
            + ("n/a" if np.isnan(r["effect"]) else verdict(r["ok"])) + f" ({r['detail']})" for r in verdict_records(df)]


def verdict_tables(df: pd.DataFrame) -> str:
    """Markdown: one table per claim; rows task x family x metric x phase, columns regime / optimizer."""
    rec = pd.DataFrame(verdict_records(df))
    rec["column"] = rec.regime + " / " + rec.optimizer
    columns = list(dict.fromkeys(rec.column))
    text = []
    for claim, part in rec.groupby("claim", sort=False):
        text.append(f"**{claim}** (effect, 95% CI over seeds; CONFIRMED when the CI excludes 0 on the claimed side)\n")
        text.append("| task | family | metric | phase | " + " | ".join(columns) + " |")
        text.append("|---" * (4 + len(columns)) + "|")
        for (task, fam, metric, phase), row in part.groupby(["task", "family", "metric", "phase"], sort=False):
            cells = []
            for c in columns:
                hit = row[row.column == c]
                cells.append("n/a" if hit.empty else
                             "not measurable (pass@1 not reached by both in 2+ seeds)" if np.isnan(hit.effect.item())
                             else f"{'CONFIRMED' if hit.ok.item() else 'not confirmed'} ({hit.effect.item():+.3g} ± "
                                  f"{hit.ci95.item():.2g})")
            text.append(f"| {task} | {fam} | {metric} | {phase} | " + " | ".join(cells) + " |")
        text.append("")
    return "\n".join(text)


def theory_configs(s: Settings) -> dict[str, dict[str, SimConfig]]:
    """Per regime, the theory check's runs (main family): plain SGD at the per-prompt step the theory is evaluated
    at, and each swept optimizer."""
    common = dict(advantage=s.families[0], G=s.G, steps=s.theory_steps, log_every=s.theory_steps)
    out = {}
    for regime in s.regimes:
        n = regime_n_prompts(s, regime)
        out[regime] = {"sgd": SimConfig(**common, optimizer="sgd", lr=s.theory_step * n),
                       **{o: SimConfig(**common, optimizer=o, lr=s.lr) for o in s.optimizers}}
    return out


def predicted_drift(s: Settings) -> pd.DataFrame:
    """theory.drift at each regime's bandit initial state: the expected one-step change of each quantity, mean over
    prompts, at the per-prompt SGD step ``theory_step`` (``theory.per_prompt_step`` of the SGD config)."""
    rows = []
    for regime, cfgs in theory_configs(s).items():
        task = build_task(s, regime, "bandit")
        step = fadesim.theory.per_prompt_step(cfgs["sgd"], task)
        for b in balances(s):
            d = fadesim.theory.drift(s.families[0], task.logits0, task.correct, s.G, step, balance=b)
            for quantity, metric, _ in THEORY_PANELS:
                rows.append({"regime": regime, "balance": b, "quantity": quantity,
                             "predicted": float(np.mean(d.change(quantity))),
                             "first": float(np.mean(d[quantity].first)) * step})
    return pd.DataFrame(rows)


def run_theory_check(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per regime x optimizer: every balance x theory_seeds for theory_steps steps on the bandit."""
    cfgs = theory_configs(s)
    tasks: dict[str, object] = {}

    def compute(spec: dict) -> pd.DataFrame:
        if spec["regime"] not in tasks:
            tasks[spec["regime"]] = build_task(s, spec["regime"], "bandit")
        return simulate(tasks[spec["regime"]], cfgs[spec["regime"]][spec["optimizer"]],
                        seeds=list(range(s.theory_seeds)), sweep={"balance": balances(s)}
                        ).to_frame().assign(regime=spec["regime"])

    specs = [{"experiment": "sign_axis_theory", "regime": r, "optimizer": o, **dataclasses.asdict(s)}
             for r in cfgs for o in cfgs[r]]
    return run_units(specs, compute, store, "sign-axis theory check", executor)


def per_seed_drift(sim: pd.DataFrame, metric: str) -> pd.Series:
    """(metric at the last step - metric at step 0) / steps, indexed by (regime, optimizer, seed, balance)."""
    T = sim.step.max()
    idx = ["regime", "optimizer", "seed", "balance"]
    start = sim[sim.step == 0].set_index(idx)[metric]
    end = sim[sim.step == T].set_index(idx)[metric]
    return ((end - start) / T).rename("drift")


def theory_table(sim: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Measured drift per step (mean over seeds, 95% CI) next to the SGD prediction."""
    rows = []
    for quantity, metric, _ in THEORY_PANELS:
        per_seed = per_seed_drift(sim, metric).reset_index()
        for (regime, opt, b), part in sorted(per_seed.groupby(["regime", "optimizer", "balance"]),
                                             key=lambda g: (g[0][0], g[0][1] != "sgd", g[0][1], g[0][2])):
            m, h = ci95(part.drift)
            pred = predicted[(predicted.regime == regime) & (predicted.balance == b)
                             & (predicted.quantity == quantity)].predicted.item()
            rows.append({"regime": regime, "optimizer": opt, "balance": b, "quantity": quantity, "measured": m,
                         "ci95": h, "predicted": pred if opt == "sgd" else np.nan, "sgd_prediction": pred})
    return pd.DataFrame(rows)


def theory_verdicts(sim: pd.DataFrame, table: pd.DataFrame, s: Settings) -> list[str]:
    """Per regime, optimizer and quantity: does the predicted sign of drift(b=+1) - drift(b=-1) hold in simulation?

    The measured effect is paired over seeds (the same draws at every balance); it counts as CONFIRMED when its
    95% CI excludes 0 on the predicted side. Under SGD the whole curve is also compared with the prediction.
    """
    lines = []
    drift = {metric: per_seed_drift(sim, metric).sort_index() for _, metric, _ in THEORY_PANELS}
    for regime, cfgs in theory_configs(s).items():
        for opt in cfgs:
            how = f"sgd (per-prompt step {s.theory_step:g})" if opt == "sgd" else f"{opt} (lr {s.lr:g})"
            for quantity, metric, _ in THEORY_PANELS:
                per = drift[metric].loc[(regime, opt)]
                effects = [per.loc[(sd, 1.0)] - per.loc[(sd, -1.0)] for sd in per.index.get_level_values(0).unique()]
                m, h = ci95(effects)
                part = table[(table.regime == regime) & (table.optimizer == opt)
                             & (table.quantity == quantity)].set_index("balance")
                pe = part.sgd_prediction.loc[1.0] - part.sgd_prediction.loc[-1.0]
                ok = (m - h > 0) if pe > 0 else (m + h < 0)
                grow = "raises" if quantity in ("logit_norm", "pass_rate") else "lowers"
                end_name = "positive end (b=+1)" if (pe < 0) == (grow == "lowers") else "negative end (b=-1)"
                line = (f"[{regime} regime, bandit, {how}, {s.families[0]}, theory vs simulation] {quantity}: predicted "
                        f"drift(b=+1) - drift(b=-1) = {pe:+.2e} per step (the {end_name} {grow} it more); "
                        f"simulated {m:+.2e} +- {h:.1e}; predicted sign: {verdict(ok)}")
                if opt == "sgd":
                    err = np.abs(part.measured - part.predicted)
                    line += (f"; curve: max |simulated - predicted| = {err.max():.2e} vs max |predicted| "
                             f"{np.abs(part.predicted).max():.2e}, predicted within the 95% CI at "
                             f"{int((err <= part.ci95).sum())}/{len(part)} balances")
                lines.append(line)
    return lines


def make_theory_figure(table: pd.DataFrame, s: Settings, figures: Path, suffix: str) -> Path:
    panels = [(quantity, label) for quantity, _, label in THEORY_PANELS]
    facet = table.regime + " regime, " + table.optimizer.map(
        lambda o: "plain SGD: prediction vs simulation" if o == "sgd" else f"{o}: simulation (no prediction)")
    return prediction_figure(table.assign(run=facet), x="balance", x_label="sign balance b", panels=panels,
                             facet="run", title=f"Sign axis ({s.families[0]}): second-order drift, theory vs first "
                                                f"simulated steps (bandit, {suffix})",
                             path=figures / f"sign_axis_theory_{suffix}.png")


def make_figures(df: pd.DataFrame, s: Settings, figures: Path, suffix: str) -> list[Path]:
    main = df[df.family == s.families[0]]
    last = main[main.step == main.step.max()].assign(run=lambda d: d.task + ", " + d.optimizer)
    paths = []
    for regime in s.regimes:
        paths.append(tradeoff_figure(
            last[last.regime == regime], x="balance", x_label="sign balance b",
            hue="run", panels=[("entropy", "final policy entropy (nats)"),
                               ("effective_correct", "effective correct answers"), ("logit_norm", "final logit norm"),
                               ("pass@1", "final pass@1"), ("pass@1024", "final pass@1024"),
                               ("pass_at_k_auc", "pass@k AUC (k = 1..1024)")],
            title=f"Sign axis trade-off, {regime} regime, {s.families[0]} ({suffix})",
            path=figures / f"sign_axis_tradeoff_{regime}_{suffix}.png"))
    lin = last[last.task == "linear_softmax"].assign(run=lambda d: d.regime + ", " + d.optimizer)
    if not lin.empty:
        paths.append(tradeoff_figure(lin, x="balance", x_label="sign balance b", hue="run",
                                     panels=[("weight_norm", "||W||_F"), ("effective_rank", "effective rank of W"),
                                             ("condition_number", "condition number of W")],
                                     title=f"Sign axis: weight geometry, linear_softmax, {s.families[0]} ({suffix})",
                                     path=figures / f"sign_axis_geometry_{suffix}.png"))
    # the pass@k and entropy figures follow each regime's first task (the math regime's sharpen, the others' bandit)
    first = main.regime.map({r: regime_task_names(s, r)[0] for r in s.regimes}) == main.task
    head = last[first.reindex(last.index)].assign(run=lambda d: d.regime + " regime, " + d.task + ", " + d.optimizer)
    tasks = "/".join(dict.fromkeys(regime_task_names(s, r)[0] for r in s.regimes))
    start = main[first & (main.step == 0)].assign(run=lambda d: d.regime + " regime, " + d.task + ", " + d.optimizer)
    paths.append(pass_at_k_figure(head, line="balance", line_label="balance b", facet="run", base=start,
                                  title=f"Sign axis: final pass@k spectrum ({tasks}, {s.families[0]}, {suffix})",
                                  path=figures / f"sign_axis_passk_{suffix}.png"))
    keep = sorted(main.balance.unique())[:: max(1, len(main.balance.unique()) // 5)]
    over = main[first & main.balance.isin(keep)]
    paths.append(over_time_figure(over.assign(run=over.regime + " regime, " + over.task + ", " + over.optimizer),
                                  metric="entropy", label="policy entropy (nats)", line="balance",
                                  line_label="balance b", facet="run",
                                  title=f"Entropy during training ({tasks}, {s.families[0]}, {suffix})",
                                  path=figures / f"sign_axis_entropy_{suffix}.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "sign_axis")
    executor = executor_from_args(args)
    for regime in settings.regimes:
        print(f"Exact gradient mass per group, G = {settings.G}, {regime} regime's difficulty (theory.profile):")
        print(exact_mass_table(settings, regime).to_string(index=False, float_format=lambda v: f"{v:8.4f}"))
    predicted = predicted_drift(settings)
    print(f"\nPredicted one-step drift (theory.drift, {settings.families[0]}, plain SGD, per-prompt step "
          f"{settings.theory_step:g}, mean over prompts) at b = -1 / 0 / +1:")
    for regime in settings.regimes:
        for quantity, _, _ in THEORY_PANELS:
            part = predicted[(predicted.regime == regime) & (predicted.quantity == quantity)].set_index("balance")
            print(f"  {regime:4s} {quantity:16s} " + " / ".join(f"{part.predicted.loc[b]:+.3e}" for b in (-1.0, 0.0, 1.0))
                  + f"   (first-order part at b = 0: {part['first'].loc[0.0]:+.3e})")
    store = ResultStore(Path(args.out) / suffix)
    sim = run_theory_check(settings, store, executor)
    table = theory_table(sim, predicted)
    df = run_sweep(settings, store, executor)
    print(f"\n{len(df)} rows in {Path(args.out) / suffix}")
    for line in theory_verdicts(sim, table, settings) + verdicts(df):
        print(line)
    figures = Path(args.figures)
    tables = figures / f"sign_axis_verdicts_{suffix}.md"
    write_text_atomic(tables, verdict_tables(df))
    print(f"verdict tables: {tables}")
    if args.no_figures:
        return 0
    for path in [make_theory_figure(table, settings, figures, suffix)] + make_figures(df, settings, figures, suffix):
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
