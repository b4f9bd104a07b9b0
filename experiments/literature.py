"""The literature protocol (fadesim.lab.literature): calibrated to a real model's base pass@k, does the simulator predict
what RL did to that model in published runs?

Per setting of the curves file: the task's initial difficulty is fitted to the base rows only; the training length
is the step where the simulated GRPO pass@1 (the held-out seeds' own run in the default family, ``--match-seeds
tuning`` the tuning seeds') reaches the published GRPO pass@1, the only post-RL number the simulation sees; every
mapped method is trained on the held-out seeds and read at steps_scale x that length; then, for every k published
for two rows whose published difference is at least 0.01, does the simulated difference have the same sign? Prints
a table per setting (published vs simulated, 95% CI), writes it, draws one panel per setting (published dashed,
simulated solid, pass@k against log k), and ends with exactly

    literature: A/B signs agree (P%) over S settings; pass@k mean abs error E

The shipped settings (fadesim/data/literature/, their sources in its README) are the only ones to design and
tune on; a user's own files in the same schema go through the same command.

The default family is the one chosen on them (``fadesim.lab.literature.CHOSEN``): the sharpen task with a shared skill
(c = 1, d = 0.3) that lifts only the prompts the base solves within 256 draws (``--reach-samples``) and on each of the
others raises its most likely wrong answer (``--misfire`` 1; where GRPO cannot reach its published pass@1 under that,
the setting is matched without it, the reach kept: ``--misfire-fallback``; since 2026-12-07,
paper_figures/literature/README.md, "Fresh task draws 4-7"), one prompt a step, per-entry Adam, pass@k read on 128
of 256 prompts held out of training (every second prompt in order of initial pass rate: ``--eval-split
stratified``), up to 2000 steps (paper_figures/README.md, "A skill direction beside the sharpening" and "The
stratified split"; paper_figures/literature/README.md, "Reach and floor"), each method read at
the matched step x its noise-scale clock at its setting's published batch (``--clock noise``, ``--noise-scale`` rho
= 1; the batches from ``--training``, a setting without a row on the simulator's clock;
paper_figures/trainer_clock/README.md, "A clock that knows the batch"). ``--task`` another family drops the
sharpen-only settings and the clock (as do another optimizer and ``--match pass@1``); 0 turns ``--prompts-per-step``
(every prompt), ``--eval-prompts`` (trained prompts) or ``--reach-samples`` (the skill reaches every prompt, the family
before 2026-12-06; the misfire goes with it) and ``--misfire`` (the family before 2026-12-07's thirteenth session)
off; ``--task-seed`` / ``--seed-offset`` run another draw of the task or other rollout seeds.

    python experiments/literature.py                                    # --quick: 8 seeds, about a minute
    python experiments/literature.py --full                             # 16 seeds, the committed table and figure
    python experiments/literature.py --curves my_curves.csv --methods my_methods.csv
    python experiments/literature.py --full --engine first_order        # the mean-field prediction, in seconds
    python experiments/literature.py --task linear_softmax --optimizer adam_shared   # the earlier default family
    python experiments/literature.py --full --match pass@1              # at matched pass@1 instead of matched step
    python experiments/literature.py --full --clock simulator           # every method at the matched step itself
    python experiments/literature.py --full --compare bandit:adam,sharpen:adam:1:1:0.3   # families side by side
    python experiments/literature.py --full --sharpen-scale 0.3 --skill-scale 0 --prompts-per-step 0 --eval-prompts 0
                                                                        # sharpening alone, on trained prompts

``--compare`` runs the protocol for each task:optimizer (sharpen:optimizer:scale[:prompts_per_step[:skill_scale]]) on every
setting (resumable units under --out), prints each one's score, then the leave-one-setting-out estimate: for each
setting, the entry with the best sign agreement on the *other* settings, scored on the held-out one; per task family
and optimizer (choosing only the sharpen scale and batch) and over all entries (choosing the family too). It writes
paper_figures/literature/literature_compare[_bB][_pass1]_{quick,full}.csv and ends with the chosen entry's summary line.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fadesim.lab.settings import check_axes, check_tag, parse_settings
from fadesim.lab.units import run_units
from fadesim.lab.literature import (BASE, CHOSEN, CURVES, METHODS, TRAINING, LiteratureError, ProtocolSettings,
                                clocked, describe_optimizer, describe_task, for_task, implied_by, length_line,
                                best_config, leave_one_setting_out, load_curves, load_methods, load_training,
                                parse_candidates, pooled_scores, resolved_line, run_setting, setting_score,
                                reference_method, summary_line, unreached_note)
from fadesim.lab.plots import save_figure
from fadesim.lab.results import ResultStore, write_atomic
from fadesim.sim.optim import OPTIMIZERS

ROOT = Path(__file__).resolve().parents[1]

TASKS = ("bandit", "linear_softmax", "chain", "sharpen")


@dataclass(frozen=True)
class Settings(ProtocolSettings):
    curves: str = str(CURVES)
    methods: str = str(METHODS)
    training: str = str(TRAINING)  # each setting's published batch (the noise-scale clock's N); shipped: the papers'
    compare: str = ""  # e.g. "bandit:adam,sharpen:adam:1": run the protocol for each and compare
    tag: str = ""  # appended to the written files' names (e.g. "batches": literature_compare_batches_full.csv)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_axes("literature", tasks=((self.task,), TASKS), optimizers=((self.optimizer,), OPTIMIZERS))
        if self.compare:
            parse_candidates(self.compare, TASKS, tuple(OPTIMIZERS))
        if self.max_steps % self.log_every:
            raise ValueError(f"literature: max_steps ({self.max_steps}) must be a multiple of log_every "
                             f"({self.log_every})")
        check_tag("literature", self.tag)
        if self.seeds < 4:
            raise ValueError(f"literature: seeds must be >= 4 (half match the length, half are scored); got {self.seeds}")


MATCH_WORDS = {"step": "methods compared at the matched step, where simulated GRPO pass@1 meets the published one",
               "pass@1": "methods compared at matched pass@1, each read where its own pass@1 meets the published GRPO "
                         "pass@1 (k = 1 not scored)"}
MATCH_SUFFIX = {"step": "", "pass@1": "_pass1"}
# the chosen family (fadesim.lab.literature.CHOSEN); --quick with 8 seeds instead of 16
QUICK = Settings(**CHOSEN, seeds=8)
FULL = Settings(**CHOSEN, seeds=16)


def figure(table: pd.DataFrame, comparisons: pd.DataFrame, path: Path, title: str) -> Path:
    """One panel per setting: published pass@k dashed with dots, simulated solid with its 95% CI, one colour per
    method in every panel; drawn from the tables ``main`` writes (``table``: setting, method, k, published,
    simulated, ci95, length, reached; ``comparisons``: setting, agree)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys(table.setting))
    methods = [m for m in dict.fromkeys(sorted(table.method)) if m != BASE]
    palette = plt.get_cmap("tab20").colors if len(methods) > 10 else [f"C{i}" for i in range(10)]
    colors = {BASE: "black", **{m: palette[i % len(palette)] for i, m in enumerate(methods)}}
    n = len(settings)
    # a panel with many methods (the SmolLM2 paper experiment's nine rows, every checkpoint of a run) gets one column
    # and its legend beside it: inside the axes, nine entries covered the curves
    most = max(table[table.setting == s].method.nunique() for s in settings)
    crowded, legend_columns = most > 8, 2 if most > 20 else 1
    cols = 1 if crowded else min(n, 2)
    rows = -(-n // cols)
    width = 6.2 + (4.2 * legend_columns if crowded else 0.0)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, (5.2 if crowded else 4.3) * rows), squeeze=False)
    for ax, setting in zip(axes.flat, settings):
        part = table[table.setting == setting]
        for name in [BASE, *[m for m in methods if m in set(part.method)]]:
            curve = part[part.method == name].sort_values("k")
            color = colors[name]
            ax.plot(curve.k, curve.published, "--", marker="o", ms=3, color=color, alpha=0.8)
            sim = curve.dropna(subset=["simulated"])
            if len(sim):
                ax.plot(sim.k, sim.simulated, "-", color=color, label=name)
                ax.fill_between(sim.k, sim.simulated - sim.ci95, sim.simulated + sim.ci95, color=color, alpha=0.15)
            else:
                ax.plot([], [], "--", color=color, label=f"{name} (not simulated)")
        signs = comparisons[comparisons.setting == setting]
        length, reached = float(part.length.iloc[0]), bool(part.reached.iloc[0])
        ax.set_title(f"{setting}\nsigns agree {int(signs.agree.sum())}/{len(signs)}; GRPO length {length:g} steps"
                     f"{'' if reached else ' (closest; never reached)'}", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k (log scale)")
        ax.set_ylabel("pass@k")
        if crowded:
            ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=legend_columns,
                      frameon=False)
        else:
            ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    # wrapped to the figure's width (a matched-pass@1 title runs past it on one line)
    fig.suptitle(textwrap.fill(title, width=int(12 * width * cols)) + "\npublished: dashed with dots; simulated: "
                 "solid with 95% CI (held-out seeds)", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)


def _sharpen_design(settings: ProtocolSettings) -> str:
    """The file-name part of a sharpen mini-batch, held-out evaluation (an "s" after it where stratified), skill
    direction, shared answer biases, skill reach (and its fallback), sharpness floor, transfer, tail, a reach drawn
    uniformly, the skill's misfire, a learned shortcut, first-order engine and trainer or noise-scale clock: "_b{B}",
    "_eval{M}[s]", "_d{d}", "_e{e}", "_reach{K}[fallback]", "_floor", "_t{tau}", "_tail{H}", "_uniformreach",
    "_misfire{m}[fallback]", "_shortcut{f}", "_firstorder", "_trainerclock" and "_noiseclock[rho]" (rho where it is
    not 1) where set."""
    return ((f"_b{settings.prompts_per_step}" if settings.prompts_per_step else "")
            + (f"_eval{settings.eval_prompts}" if settings.eval_prompts else "")
            + ("s" if settings.eval_prompts and settings.eval_split == "stratified" else "")
            + (f"_d{settings.skill_scale:g}" if settings.skill_scale else "")
            + (f"_e{settings.answer_scale:g}" if settings.answer_scale else "")
            + (f"_reach{settings.reach_samples}" if settings.reach_samples else "")
            + ("fallback" if settings.reach_fallback else "")
            + ("_floor" if settings.floor_sharpness else "")
            + (f"_t{settings.transfer:g}" if settings.transfer else "")
            + (f"_tail{settings.tail_entropy:g}" if settings.tail_entropy else "")
            + ("_uniformreach" if settings.reach_draw == "uniform" else "")
            + (f"_misfire{settings.misfire:g}" if settings.misfire else "")
            + ("fallback" if settings.misfire_fallback else "")
            + (f"_shortcut{settings.shortcut_scale:g}" if settings.shortcut_scale else "")
            + ("_firstorder" if settings.engine == "first_order" else "")
            + ("_trainerclock" if settings.clock == "trainer" else "")
            + (f"_noiseclock{'' if settings.noise_scale == 1 else f'{settings.noise_scale:g}'}"
               if settings.clock == "noise" else ""))


def describe_run(settings: ProtocolSettings) -> str:
    """A run's task, optimizer, seeds, match and clock in words, in brackets: the header line's and the figure's title."""
    runs = (f"{settings.seeds} seeds" if settings.engine == "simulate"
            else "first-order prediction: mean-field Adam paths, no rollouts drawn")
    if settings.task_draws > 1:
        runs += (f", every number averaged over {settings.task_draws} task draws ({settings.task_seed}-"
                 f"{settings.task_seed + settings.task_draws - 1})")
    clock = {"simulator": "",
             "trainer": ", each method read at that step x its trainer clock (fadesim.theory.step_size)",
             "noise": f", each method read at that step x its noise-scale clock at the published batch, rho "
                      f"{settings.noise_scale:g} (fadesim.theory.step_size.noise_clock)"}[settings.clock]
    fit = "" if settings.family == "beta" else f", base fit {settings.family}"
    return (f"[{describe_task(settings)}{fit}, {describe_optimizer(settings)}, G = {settings.G}, lr {settings.lr:g}, "
            f"{runs}; "
            f"{MATCH_WORDS[settings.match]}"
            f"{' (matched on the held-out seeds)' if settings.match_seeds == 'held' else ''}{clock}]")


def run_stem(settings: Settings, suffix: str) -> str:
    """The file stem of one protocol run: task, its sharpen design, read-out, the match's seeds, task draws averaged
    over (where more than one), the base fit's family (where not "beta"), optimizer (adam_tied with its tie), tag,
    match and preset, so that runs that differ in any of them never overwrite each other."""
    scale = f"_c{settings.sharpen_scale:g}" if settings.task == "sharpen" else ""
    scale += _sharpen_design(settings)
    tag = f"_{settings.tag}" if settings.tag else ""
    scale += "_interp" if settings.readout == "interpolated" else ""
    scale += "_heldmatch" if settings.match_seeds == "held" else ""
    scale += f"_draws{settings.task_draws}" if settings.task_draws > 1 else ""
    scale += "" if settings.family == "beta" else f"_fit{settings.family.replace('+', '_')}"
    optimizer = settings.optimizer + (f"_tie{settings.tie:g}" if settings.optimizer == "adam_tied" else "")
    return f"literature_{settings.task}{scale}_{optimizer}{tag}{MATCH_SUFFIX[settings.match]}_{suffix}"


def compare(settings: Settings, suffix: str, args, curves: pd.DataFrame, methods, training) -> int:
    """The protocol for each --compare entry on every setting, each entry's score, and leave-one-setting-out."""
    candidates = parse_candidates(settings.compare, TASKS, tuple(OPTIMIZERS))
    names = list(dict.fromkeys(curves.setting))
    base = {f.name: getattr(settings, f.name) for f in dataclasses.fields(ProtocolSettings)}

    def protocol(spec) -> ProtocolSettings:  # a unit's settings are exactly its spec's (its stored identity)
        return ProtocolSettings(**{name: spec[name] for name in base})

    def compute(spec) -> pd.DataFrame:
        res = run_setting(spec["setting"], curves, methods, protocol(spec), training)
        return pd.DataFrame([{"config": spec["config"], **setting_score(res),
                              "signs": res["comparisons"].to_json(orient="records")}])

    # an entry's own prompts a step and skill stand where it gives them, else the run's (--prompts-per-step,
    # --skill-scale); a non-sharpen entry takes none of the sharpen-only settings
    specs = [{"config": c.label, "task": c.task, "optimizer": c.optimizer, "setting": s,
              **{k: v for k, v in base.items() if k not in ("task", "optimizer", "sharpen_scale")},
              **for_task(c.task), "sharpen_scale": c.sharpen_scale,
              # an entry no clock applies to runs on the simulator's (the default family's clock is for sharpen, adam)
              "clock": base["clock"] if clocked(c.task, c.optimizer, base["match"]) else "simulator",
              "prompts_per_step": (c.prompts_per_step or base["prompts_per_step"]) if c.task == "sharpen" else 0,
              "skill_scale": (c.skill_scale or base["skill_scale"]) if c.task == "sharpen" else 0.0,
              "curves": str(Path(settings.curves).resolve()), "methods": str(Path(settings.methods).resolve()),
              # the batches enter only the noise-scale clock (the other clocks' units keep their stored identity)
              **({"training": str(Path(settings.training).resolve())} if settings.clock == "noise" else {})}
             for c in candidates for s in names]
    for spec in specs:  # every entry's settings are checked before any is run: one line, exit status 2
        try:
            protocol(spec)
        except ValueError as err:
            print(f"literature.py: error: --compare entry {spec['config']!r}: {err}", file=sys.stderr)
            return 2
    scores = run_units(specs, compute, ResultStore(Path(args.out) / "compare"), "literature --compare")
    scores = scores.drop(columns="unit")
    # every scored comparison of every entry (the simulated difference beside the published one), where stored
    signs = pd.concat([pd.read_json(io.StringIO(r.signs), orient="records").assign(config=r.config, setting=r.setting)
                       for r in scores.itertuples() if isinstance(getattr(r, "signs", None), str) and r.signs != "[]"]
                      or [pd.DataFrame()], ignore_index=True)
    scores = scores.drop(columns="signs", errors="ignore")
    runs = f"{settings.seeds} seeds" if settings.engine == "simulate" else "first-order prediction (mean-field Adam)"
    print(f"\nper entry and setting (signs agree / compared; pass@k mean abs error) [G = {settings.G}, lr "
          f"{settings.lr:g}, {runs}; {MATCH_WORDS[settings.match]}]:")
    pooled = pooled_scores(scores)
    for c in candidates:
        part, p = scores[scores.config == c.label], pooled.loc[c.label]
        cells = "; ".join(f"{r.setting}: {r.agree}/{r.total}" for r in part.itertuples())
        print(f"  {c.label:>28}: {int(p.agree)}/{int(p.total)} ({100 * p.agree / max(p.total, 1):.1f}%), error "
              f"{p.abs_error_sum / max(p.n_error, 1):.4f}  [{cells}]")
    families = {}
    for c in candidates:
        families.setdefault(f"{c.task}:{c.optimizer}", []).append(c.label)
    loso_rows = []
    for family, labels in [*families.items(), ("all entries", [c.label for c in candidates])]:
        loso = leave_one_setting_out(scores[scores.config.isin(labels)])
        agree, total = int(loso.agree.sum()), int(loso.total.sum())
        picks = ", ".join(f"{r.held_out} -> {r.chosen}" for r in loso.itertuples()) if len(labels) > 1 else "no choice"
        print(f"leave-one-setting-out, {family}: {agree}/{total} ({100 * agree / max(total, 1):.1f}%)  [{picks}]")
        loso_rows.append({"family": family, "agree": agree, "total": total})
    out = Path(args.figures)
    tag = f"_{settings.tag}" if settings.tag else ""
    stem = f"literature_compare{tag}{_sharpen_design(settings)}{MATCH_SUFFIX[settings.match]}_{suffix}"
    write_atomic(out / f"{stem}.csv", scores)
    write_atomic(out / f"{stem}.loso.csv", pd.DataFrame(loso_rows))
    if len(signs):
        write_atomic(out / f"{stem}.signs.csv", signs)
    best = best_config(scores)
    b = pooled.loc[best]
    print(f"chosen on all shipped settings: {best}")
    # its comparisons, as the plain run prints them (a unit stored before the paired intervals has no such columns)
    chosen = signs[signs.config == best].dropna(axis=1, how="all") if len(signs) else signs
    for line in (length_line(chosen, methods), resolved_line(chosen)):
        if line is not None:
            print(line)
    print(summary_line(int(b.agree), int(b.total), len(names), float(b.abs_error_sum / max(b.n_error, 1))))
    return 0


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(
        __doc__, QUICK, FULL, argv, ROOT, "literature", zero_allowed=("prompts_per_step", "eval_prompts", "reach_samples"),
        implied=lambda preset, flags: implied_by(flags.get("task", preset.task), flags,
                                                 flags.get("optimizer", preset.optimizer),
                                                 flags.get("match", preset.match)))
    if (not settings.tag and Path(settings.curves).resolve() != Path(CURVES).resolve()
            and Path(args.figures).resolve() == (ROOT / "paper_figures" / "literature").resolve()):
        # a file's stem names the family, not the curves: other curves would write over the shipped settings' files
        print(f"literature.py: error: --curves {settings.curves} is not the shipped curves file, and without --tag its "
              f"results would take the shipped run's file names in {args.figures} and overwrite them; give --tag NAME "
              "(e.g. smollm2 for paper_figures/real_model/smollm2_curves.csv) or --figures DIR", file=sys.stderr)
        return 2
    try:
        curves, methods = load_curves(settings.curves), load_methods(settings.methods)
        training = load_training(settings.training)
        for setting in dict.fromkeys(curves.setting):  # every setting's reference, before any setting runs
            reference_method(setting, curves, methods)
    except LiteratureError as err:
        print(f"literature.py: error: {err}", file=sys.stderr)
        return 2
    if settings.compare:
        return compare(settings, suffix, args, curves, methods, training)
    axes = describe_run(settings)
    print(f"literature protocol {axes}: curves {settings.curves}, methods {settings.methods}"
          + (f", training {settings.training}" if settings.clock == "noise" else ""))
    results, tables, comps, entropies = [], [], [], []
    for setting in dict.fromkeys(curves.setting):
        res = run_setting(setting, curves, methods, settings, training)
        results.append(res)
        start = res["table"][(res["table"].method == BASE) & (res["table"].k == 1)].simulated  # where the run starts
        note = unreached_note(res["target"], float(start.iloc[0]) if len(start) else None)
        how = "reached" if res["reached"] else f"UNREACHABLE ({note}; scored at the closest logged step)"
        if res.get("dropped") == "misfire":
            how += " without the misfire, the reach kept (unreachable under it: misfire_fallback)"
        if res.get("reach_dropped"):
            how += " without the skill's reach (unreachable under it: reach_fallback)"
        if res.get("dropped") == "mixed":
            how += " (the fallbacks differ between the task draws: below)"
        print(f"\n{setting}: base fit {res['calibration'].family} "
              + ", ".join(f"{k} = {v:.3g}" for k, v in res["calibration"].params.items())
              + f" (max error {res['calibration'].max_abs_error:.4f}); {res['reference']} pass@1 {res['target']:.3f} "
              f"{how} at step {res['length']:g}{' (the draws: mean)' if 'draws' in res else ''}; methods read at step "
              + ", ".join(f"{m} {at:g}" for m, at in res["read_at"].items())
              + f"; match residual (the reference's held-out pass@1 there minus the published) {res['residual']:+.4f}")
        if settings.clock == "noise":
            print(f"  noise-scale clock at {res['rollouts_per_step']} rollouts a step: " + ", ".join(
                f"{m} {c:.3f}" for m, c in res["clocks"].items()) if res["rollouts_per_step"] is not None else
                  f"  noise-scale clock: no row for this setting in {settings.training}, so its batch is unknown and "
                  "every method is read at the simulator's clock (1)")
        elif settings.clock == "trainer":
            print("  trainer clock: " + ", ".join(f"{m} {c:.3f}" for m, c in res["clocks"].items()))
        if "draws" in res:
            print("  task draws (each matched and read on its own; the table averages them): " + "; ".join(
                f"{r.task_seed}: step {r.length:g}{'' if r.reached else ' UNREACHED'}"
                f"{f' without the {r.dropped}' if r.dropped else ''}, residual {r.residual:+.4f}, signs "
                f"{r.agree}/{r.total}, error {r.error:.4f}" for r in res["draws"].itertuples()))
        if res["not_simulated"]:
            print(f"  not simulated (no methods row): {', '.join(res['not_simulated'])}")
        print(res["table"].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        c = res["comparisons"]
        print(f"  signs agree {int(c.agree.sum())}/{len(c)}; pass@k mean abs error {res['error']:.4f} "
              f"over {res['n_error']} published values")
        ent = res["entropy"]
        print("  entropy (nats) where each is read: " + ", ".join(
            f"{r.method} {r.entropy:.3f}" + (f" +- {r.ci95:.3f}" if r.ci95 == r.ci95 else "") for r in ent.itertuples()))
        tables.append(res["table"].assign(setting=setting, length=res["length"], reached=res["reached"],
                                          residual=res["residual"]))
        comps.append(c.assign(setting=setting))
        entropies.append(ent.assign(setting=setting))
    out = Path(args.figures)
    stem = run_stem(settings, suffix)
    table = pd.concat(tables, ignore_index=True)
    write_atomic(out / f"{stem}.csv", table)
    comparisons = pd.concat(comps, ignore_index=True)
    write_atomic(out / f"{stem}.signs.csv", comparisons)  # quick: matches the ignored paper_figures/**/*_quick.*
    write_atomic(out / f"{stem}.entropy.csv", pd.concat(entropies, ignore_index=True))
    if not args.no_figures:
        print(f"figure: {figure(table, comparisons, out / f'{stem}.png', f'literature protocol {axes}')}")
    merged = table.dropna(subset=["simulated"])
    error = float((merged.simulated - merged.published).abs().mean()) if len(merged) else float("nan")
    residuals = np.array([r["residual"] for r in results], dtype=float)
    unreachable = [r["setting"] for r in results if not r["reached"]]
    print(f"match residuals ({settings.readout} read-out): mean |residual| {np.nanmean(np.abs(residuals)):.4f}, max "
          f"{np.nanmax(np.abs(residuals)):.4f}; unreachable: {', '.join(unreachable) or 'none'}")
    for line in (length_line(comparisons, methods), resolved_line(comparisons)):
        if line is not None:
            print(line)
    print(summary_line(int(comparisons.agree.sum()), len(comparisons), len(results), error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
