"""The ``fadesim`` command: list advantages, print an advantage card, property-check your own advantage,
run a quick simulation.

    fadesim list
    fadesim card grpo --G 16 --param eps=1e-4 --out card.png
    fadesim check my_advantages.py:my_adv --declare mean_centred
    fadesim simulate focal --task bandit --param gamma=2 --steps 200
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable, Sequence


from fadesim.lab.literature import CHOSEN, CLOCKS, ProtocolSettings, clocked
from fadesim.tasks.sharpen import EVAL_SPLITS, REACH_DRAWS
from fadesim.sim.optim import OPTIMIZERS


class CLIError(Exception):
    """A user-facing problem: printed as one line, exit code 2."""


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """['gamma=2', 'scale=batch'] -> {'gamma': 2, 'scale': 'batch'} (Python literals where they parse)."""
    from fadesim.advantages.domains import parse_assignments

    try:
        return parse_assignments(items or [])
    except ValueError as err:
        raise CLIError(f"--param {err}") from None


# ----------------------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    import fadesim

    rows = [("name", "paper", "parameters", "centred", "needs")]
    for e in fadesim.entries():
        needs = ",".join([*(["logprobs"] if e.needs_logprobs else []), *(["signals"] if e.needs_signals else [])])
        params = ", ".join(f"{k}={v!r}" for k, v in e.params.items()) or "-"
        rows.append((e.name, e.paper, params, "yes" if e.mean_centred else "no", needs or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    return 0


# ----------------------------------------------------------------------------- card
def card_text(prof: Any, a: float, b: float, drift: Any) -> str:

    lines = [f"advantage card: {prof.name} {dict(prof.params) or ''}  G = {prof.G}", "",
             "  k   A+(k)        A-(k)        M+_k         M-_k"]
    for k in range(prof.G + 1):
        lines.append(f"{k:3d}   {prof.a_pos[k]:+11.5f}  {prof.a_neg[k]:+11.5f}  {prof.pos_mass[k]:11.5f}  {prof.neg_mass[k]:11.5f}")
    lines += ["", "     p    E[M+]      E[M-]      balance   ESS/group"]
    for p in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        lines.append(f"  {p:4.2f}  {float(prof.expected_positive_mass(p)):9.5f}  {float(prof.expected_negative_mass(p)):9.5f}"
                     f"  {float(prof.balance(p)):+8.4f}  {float(prof.ess_fraction(p)):8.4f}")
    s = prof.under_beta(a, b)
    peak = prof.peak()
    focus = "hard focus" if peak < 0.35 else ("easy focus" if peak > 0.65 else "medium focus")
    lines += ["", f"profile peak: p* = {peak:.3f} ({focus})",
              f"under p ~ Beta({a:g}, {b:g}): E[M+] = {s.positive_mass:.5f}, E[M-] = {s.negative_mass:.5f}, "
              f"balance = {s.balance:+.4f}, ESS/group = {s.ess_fraction:.4f}, hardness = {s.hardness:.4f}",
              f"first-order entropy drift per unit step on the reference bandit prompt "
              f"(pi = 0.45, 0.15 | 0.15, 0.1, 0.1, 0.05; first two correct): "
              f"{drift.total:+.5f} (positive mass {drift.from_positive:+.5f}, negative mass {drift.from_negative:+.5f})"]
    return "\n".join(lines)


def cmd_card(args: argparse.Namespace) -> int:
    import fadesim
    from fadesim.lab.plots import advantage_card_figure
    from fadesim.theory.entropy import EXAMPLE_CORRECT, EXAMPLE_LOGITS, expected_entropy_drift

    params = parse_params(args.param)
    entry = fadesim.info(args.name)
    signals = {"entropy": args.entropy_ratio, "initial_entropy": 1.0} if entry.needs_signals else None
    prof = fadesim.profile(args.name, args.G, signals=signals, **params)
    drift = expected_entropy_drift(prof, EXAMPLE_LOGITS, EXAMPLE_CORRECT)
    print(card_text(prof, args.beta[0], args.beta[1], drift))
    out = Path(args.out or f"card_{args.name}.png")
    advantage_card_figure(prof, args.beta[0], args.beta[1], out)
    print(f"\nfigure: {out}")
    return 0


# ----------------------------------------------------------------------------- check
def load_function(target: str) -> Callable[..., Any]:
    """'path/to/file.py:function' or 'package.module:function' -> the function (CLIError if not found)."""
    if ":" not in target:
        raise CLIError(f"expected FILE.py:FUNCTION or MODULE:FUNCTION, got '{target}'")
    where, name = target.rsplit(":", 1)
    if where.endswith(".py") or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise CLIError(f"no such file: {where}")
        spec = importlib.util.spec_from_file_location(f"fadesim_user_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as err:  # noqa: BLE001 - the user's file failed to import
            raise CLIError(f"importing {where} failed: {type(err).__name__}: {err}") from None
    else:
        try:
            module = importlib.import_module(where)
        except Exception as err:  # noqa: BLE001 - any import error of the user's module becomes one CLI line
            raise CLIError(f"cannot import module '{where}': {type(err).__name__}: {err}") from None
    fn = getattr(module, name, None)
    if fn is None:
        raise CLIError(f"{where} has no function '{name}'")
    if not callable(fn):
        raise CLIError(f"{where}:{name} is a {type(fn).__name__}, not a function")
    check_signature(fn, name)
    return fn


def check_signature(fn: Callable[..., Any], name: str) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise CLIError(f"{name}{sig} must take the rewards array as its first argument "
                       "(contract: fn(rewards, *, mask=None, signals=None, logprobs=None))")
    if "mask" not in sig.parameters and not has_var_kw:
        raise CLIError(f"{name}{sig} has no 'mask' keyword (contract: fn(rewards, *, mask=None, signals=None, logprobs=None))")


DECLARABLE = ("mean_centred", "scale_invariant", "needs_logprobs", "needs_signals")


def cmd_check(args: argparse.Namespace) -> int:
    import fadesim
    from fadesim.apps.check import PROPERTIES, AdvantageSpec, spec_from_registry

    only = list(dict.fromkeys(args.only or [])) or None
    for prop in only or []:
        if prop not in PROPERTIES:
            raise CLIError(f"--only takes one of {', '.join(PROPERTIES)}; got '{prop}'")
    if ":" not in args.target and args.target in fadesim.names():
        return _report(spec_from_registry(args.target, max_group_size=args.max_G), args.examples,
                       f"registered advantage {args.target}", only)
    fn = load_function(args.target)
    declared = dict(getattr(fn, "__fadesim__", {}) or {})
    for item in args.declare or []:
        if item not in DECLARABLE:
            raise CLIError(f"--declare takes {', '.join(DECLARABLE)}; got '{item}'")
        declared[item] = True
    unknown = sorted(set(declared) - set(DECLARABLE) - {"min_group_size", "domains"})
    if unknown:
        raise CLIError(f"{args.target}: __fadesim__ has unknown keys {unknown}; known: {', '.join(DECLARABLE)}")
    needs_signals = ("entropy", "initial_entropy") if declared.get("needs_signals") else ()
    declared_min = int(args.min_G if args.min_G is not None else declared.get("min_group_size", 2))
    if declared_min < 1:
        raise CLIError(f"--min-G must be >= 1; got {declared_min}")
    min_g = max(declared_min, 2)  # the suite draws groups of two or more; groups of one have their own check
    spec = AdvantageSpec(name=args.target, fn=fn, mean_centred=bool(declared.get("mean_centred")),
                         scale_invariant=bool(declared.get("scale_invariant")),
                         needs_logprobs=bool(declared.get("needs_logprobs")), needs_signals=needs_signals,
                         min_group_size=min_g, max_group_size=max(args.max_G, min_g),
                         declared_min_group_size=declared_min, domains=dict(declared.get("domains") or {}))
    declared_text = ", ".join(k for k, v in declared.items() if v and k not in ("min_group_size", "domains"))
    if declared.get("domains"):
        declared_text = ", ".join(filter(None, [declared_text, "domains of " + ", ".join(declared["domains"])]))
    declared_text = declared_text or "nothing"
    return _report(spec, args.examples, f"{args.target} (declared: {declared_text})", only)


def _report(spec: Any, examples: int, what: str, only: list[str] | None = None) -> int:
    """Run the suite and print properties (the mathematics) and contract items (warnings with their fix), then the
    mass card. Exit status 1 if a property fails; contract findings alone give 0."""
    import fadesim
    from fadesim.apps.check import run_checks
    from fadesim.theory.entropy import EXAMPLE_CORRECT, EXAMPLE_LOGITS, expected_entropy_drift

    declared = [p for p, on in (("mean_centred", spec.mean_centred), ("scale_invariant", spec.scale_invariant)) if on]
    print(f"property check of {what}; {examples} examples per property; G from {spec.min_group_size} to "
          f"{spec.max_group_size}; checked declared properties: {', '.join(declared) or 'none'}")
    results = run_checks(spec, max_examples=examples, properties=only)
    properties = [r for r in results if r.kind == "property"]
    contract = [r for r in results if r.kind == "contract"]
    print("\nproperties (the mathematics; a failure is a bug):")

    def status(r: Any, finding: str) -> str:
        return "SKIP" if r.skipped else "PASS" if r.passed else finding

    for r in properties:
        print(f"  {status(r, 'FAIL')}  {r.prop:24s} {r.detail}")
        if not r.passed and r.counterexample:
            for line in r.counterexample.splitlines():
                print(f"          {line}")
    print("contract (how the function meets fadesim's call contract; a finding is a warning):")
    for r in contract:
        print(f"  {status(r, 'WARN')}  {r.prop:24s} {r.detail}")
        if not r.passed:
            print(f"          fix: {r.fix}")
    failed = sum(not r.passed for r in properties)
    warnings = sum(not r.passed for r in contract)
    skipped = [sum(r.skipped for r in rs) for rs in (properties, contract)]
    print(f"\n{len(properties) - failed - skipped[0]} passed, {failed} failed"
          + (f", {skipped[0]} skipped" if skipped[0] else "")
          + f"; {len(contract) - warnings - skipped[1]} contract items met, {warnings} warning(s)"
          + (f", {skipped[1]} not checked" if skipped[1] else ""))
    if warnings:
        print("every contract warning is fixed by decorating the function with @fadesim.advantage "
              "(see `python -c 'import fadesim; help(fadesim.advantage)'`)")
    if failed == 0:
        name = "_user_advantage_"
        fadesim.register(name, spec.fn, paper="user", needs_logprobs=spec.needs_logprobs,
                         needs_signals=spec.needs_signals, replace=True)
        try:
            signals = {"entropy": 1.0, "initial_entropy": 1.0} if spec.needs_signals else None
            prof = fadesim.profile(name, max(16, spec.min_group_size), signals=signals)
            print("\n" + card_text(prof, 1.0, 1.0, expected_entropy_drift(prof, EXAMPLE_LOGITS, EXAMPLE_CORRECT)))
        finally:
            fadesim.unregister(name)
    return 1 if failed else 0


# ----------------------------------------------------------------------------- simulate
def cmd_simulate(args: argparse.Namespace) -> int:
    from fadesim.lab.plots import simulation_figure
    from fadesim.sim import SimConfig, simulate
    from fadesim.tasks import make_task

    task_kw: dict[str, Any] = {"n_prompts": args.prompts, "seed": args.task_seed}
    if args.task != "neural":  # the neural task's difficulty comes from its network and rule (make_task's defaults)
        task_kw["difficulty"] = args.difficulty
    if args.task in ("bandit", "linear_softmax", "sharpen"):
        task_kw.update(n_answers=args.answers, n_correct=args.correct)
    task = make_task(args.task, **task_kw)
    cfg = SimConfig(advantage=args.name, advantage_params=parse_params(args.param), G=args.G, steps=args.steps,
                    log_every=args.log_every, optimizer=args.optimizer, lr=args.lr)
    res = simulate(task, cfg, seeds=list(range(args.seeds)))
    df = res.to_frame()
    last = df[df.step == df.step.max()]
    print(f"{args.name} on {args.task} ({args.prompts} prompts, G = {args.G}, {args.steps} steps, {args.seeds} seeds)")
    metrics = ("pass@1", "pass@16", "pass@256", "entropy", "distinct_correct", "logit_norm", "weight_norm",
               "positive_mass", "negative_mass", "sign_balance", "ess")
    for metric in (m for m in metrics if m in df):  # logit_norm: tabular tasks; weight_norm: shared weights
        start = df[df.step == 0][metric].mean()
        print(f"  {metric:18s} start {start:9.4f}   end {last[metric].mean():9.4f} +- {last[metric].std(ddof=1) if len(last) > 1 else 0:.4f}")
    out = Path(args.out or f"simulate_{args.name}_{args.task}.png")
    simulation_figure(df, out, title=f"{args.name} on {args.task}")
    print(f"figure: {out}")
    return 0


# ----------------------------------------------------------------------------- predict
def cmd_predict(args: argparse.Namespace) -> int:
    from fadesim.lab.literature import (BASE, CURVES, METHODS, SHARPEN_ONLY, ProtocolSettings, describe_optimizer,
                                        describe_task, extrapolations, fallen_back, for_task, implied_by, load_curves,
                                        load_methods, load_training, parse_advantages, predict, resolved_line,
                                        run_setting, summary_line, support, unreached_note)
    from fadesim.lab.plots import forecast_figure

    source = args.curves or CURVES
    curves = load_curves(source)
    settings_found = list(dict.fromkeys(curves.setting))
    if args.setting is None and len(settings_found) > 1:
        raise CLIError(f"{source} has {len(settings_found)} settings; choose one with --setting: "
                       + ", ".join(repr(s) for s in settings_found))
    setting = args.setting if args.setting is not None else settings_found[0]
    if setting not in settings_found:
        raise CLIError(f"no setting {setting!r} in {source}; it has " + ", ".join(repr(s) for s in settings_found))
    advantages = parse_advantages(args.advantages)
    given = {name: getattr(args, name) for name in SHARPEN_ONLY if getattr(args, name) is not None}
    if given and args.task != "sharpen":
        raise CLIError(f"{', '.join('--' + n.replace('_', '-') for n in given)} apply to the sharpen task only; "
                       f"got --task {args.task}")
    implied = {k: v for k, v in implied_by(args.task, given).items() if k != "clock"}  # the clock is --clock's
    sharpen = ({**{n: CHOSEN[n] for n in SHARPEN_ONLY}, **implied, **given} if args.task == "sharpen"
               else {k: v for k, v in for_task(args.task).items() if k != "clock"})
    # the default family's clock where it applies and the user's batch is given, else the simulator's
    clock = args.clock or ("noise" if args.rollouts_per_step is not None and clocked(args.task, args.optimizer, "step")
                           else "simulator")
    if args.tie is not None and args.optimizer != "adam_tied":
        raise CLIError(f"--tie applies to --optimizer adam_tied only; got --optimizer {args.optimizer}")
    tie = {} if args.tie is None else {"tie": args.tie}
    try:
        ps = ProtocolSettings(task=args.task, optimizer=args.optimizer, lr=args.lr, G=args.G, seeds=args.seeds,
                              n_prompts=args.prompts, max_steps=args.max_steps, log_every=args.log_every,
                              readout=CHOSEN["readout"], match_seeds=CHOSEN["match_seeds"], clock=clock,
                              task_draws=args.task_draws,
                              noise_scale=args.noise_scale, **tie, **sharpen)
    except ValueError as err:
        raise CLIError(str(err)) from None
    if (args.rollouts_per_step is not None) != (ps.clock == "noise"):
        raise CLIError("--clock noise reads your run's batch: give it --rollouts-per-step (prompts a step x rollouts a "
                       "prompt), and give --rollouts-per-step with --clock noise only")
    if args.rollouts_per_step is not None and args.rollouts_per_step < 1:
        raise CLIError(f"--rollouts-per-step must be a positive integer; got {args.rollouts_per_step}")
    batch = {} if args.rollouts_per_step is None else {"rollouts_per_step": args.rollouts_per_step}
    pub = curves[curves.setting == setting]
    base_curve = {int(r.k): float(r.pass_at_k) for r in pub[pub.method == BASE].itertuples()}
    published_methods = [m for m in dict.fromkeys(pub.method) if m != BASE]
    methods = load_methods(args.methods or METHODS) if published_methods else {}
    grpo_pass1, steps, scored = args.grpo_pass1, args.steps, None
    if grpo_pass1 is None and steps is None:
        if not published_methods:
            raise CLIError("give --grpo-pass1 (the pass@1 your GRPO run reached) or --steps (a training length): "
                           f"{setting!r} has only base rows")
        # the published methods, scored as the protocol does (at the user's batch under the noise-scale clock)
        scored = run_setting(setting, curves, methods, ps, {setting: args.rollouts_per_step} if batch else None)
    if scored is not None:  # the protocol has matched the length on the published reference: reuse it
        # where a fallback dropped the misfire or the skill's reach, the length was matched on the task without it
        if ps.task_draws > 1:  # each draw has its own length (and fallback): each is read where the protocol matched it
            out = predict(base_curve, advantages, ps, grpo_pass1=scored["target"], draws=scored["draws"], **batch)
        else:
            used = fallen_back(ps, scored["dropped"])
            out = {**predict(base_curve, advantages, used, steps=scored["length"], **batch),
                   "reach_dropped": scored["reach_dropped"], "dropped": scored["dropped"]}
        grpo_pass1, reached = scored["target"], scored["reached"]
    else:
        out = predict(base_curve, advantages, ps, grpo_pass1=grpo_pass1, steps=steps, **batch)
        reached = out["reached"]
    cal = out["calibration"]
    if steps is not None:
        how = f"{out['length']:g} steps (given)"
    else:
        start = out["table"][(out["table"].label == BASE) & (out["table"].k == 1)].pass_at_k  # where the run starts
        note = unreached_note(grpo_pass1, float(start.iloc[0]) if len(start) else None)
        how = (f"GRPO pass@1 {grpo_pass1:.3f} " + ("reached" if reached else f"UNREACHABLE ({note}; the closest "
               "logged step)") + f" at step {out['length']:g}")
    if out["dropped"] == "misfire":
        how += ", without the misfire, the reach kept (GRPO's target unreachable under it: --misfire-fallback)"
    if out["reach_dropped"]:
        how += ", without the skill's reach (GRPO's target unreachable under it: --reach-fallback)"
    if "draws" in out:
        how += (f" (the mean over {ps.task_draws} task draws, each matched on its own: " + "; ".join(
            f"{r.task_seed}: {r.length:g}{'' if r.reached else ' unreached'}{f' without the {r.dropped}' if r.dropped else ''}"
            for r in out["draws"].itertuples()) + ")")
    print(f"fadesim predict [{describe_task(ps)}, {describe_optimizer(ps)}, G = {ps.G}, lr {ps.lr:g}, {ps.seeds} seeds, half "
          f"held out]: "
          f"{setting}; base fit {cal.family} " + ", ".join(f"{k} = {v:.3g}" for k, v in cal.params.items())
          + f" (max error {cal.max_abs_error:.4f}); length: {how}")
    cells = out["table"].assign(cell=lambda t: [f"{v:.3f} +- {h:.3f}" for v, h in zip(t.pass_at_k, t.ci95)])
    wide = cells.pivot_table(index="label", columns="k", values="cell", aggfunc="first", sort=False)
    clock_words = {"trainer": "its trainer clock",
                   "noise": f"its noise-scale clock at {args.rollouts_per_step} rollouts a step, rho {ps.noise_scale:g}"}
    where = ("every advantage read at the same step, the matched length" if ps.clock == "simulator" else
             f"each advantage read at the matched length x {clock_words.get(ps.clock)}: "
             + ", ".join(f"{lab} {at:g}" for lab, at in out["read_at"].items()))
    print(f"predicted pass@k (held-out mean +- 95% interval over the held-out seeds; {where}; predictions, outside "
          "any score):")
    print(wide.to_string())
    if out["residual"] == out["residual"]:
        print(f"match residual: the simulated GRPO's pass@1 where it is read minus the given {grpo_pass1:.3f}: "
              f"{out['residual']:+.4f} (held-out seeds; the length is matched on the "
              f"{'held-out' if ps.match_seeds == 'held' else 'tuning'} seeds)")
    for warning in extrapolations(base_curve, support(load_curves(CURVES), load_training()), grpo_pass1,
                                  args.rollouts_per_step):
        print(f"extrapolation: {warning}; the shipped settings do not support this prediction there")
    ends = out["trajectories"].groupby("label", sort=False).entropy.agg(["first", "last"])
    print("entropy (nats), start -> predicted length: "
          + "; ".join(f"{lab} {r['first']:.3f} -> {r['last']:.3f}" for lab, r in ends.iterrows()))
    path = Path(args.out or f"predict_{''.join(c if c.isalnum() else '_' for c in setting)}.png")
    forecast_figure(out["table"], out["trajectories"], pub[["method", "k", "pass_at_k"]], path,
                    f"fadesim predict: {setting} ({describe_task(ps)}, {ps.optimizer}; {how})")
    print(f"figure: {path} (table: {path.with_suffix('.csv')})")
    if scored is not None:
        c = scored["comparisons"]
        if (line := resolved_line(c)) is not None:
            print(line)
        print(summary_line(int(c.agree.sum()), len(c), 1, scored["error"]))
    return 0


# ----------------------------------------------------------------------------- entry point
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fadesim", description="Check what an advantage function does to RL "
                                 "post-training: exact gradient-mass cards, property checks, quick simulations.")
    sub = ap.add_subparsers(dest="command", required=True)  # argparse lists every command in the usage line

    sub.add_parser("list", help="table of registered advantages", description="List registered advantages: "
                   "name, arXiv id, parameters with defaults, mean-centred or not, what they need.")

    c = sub.add_parser("card", help="an advantage's exact mass card (text + PNG)",
                       description="Print A+(k)/A-(k), E[M+](p)/E[M-](p), balance, profile peak, ESS and the "
                       "first-order entropy drift of a registered advantage, and save them as one figure.")
    c.add_argument("name", help="registered advantage name (see `fadesim list`)")
    c.add_argument("--G", type=int, default=16, help="group size (default 16)")
    c.add_argument("--param", action="append", metavar="K=V", help="hyper-parameter, repeatable (e.g. gamma=2)")
    c.add_argument("--beta", type=float, nargs=2, default=(1.0, 1.0), metavar=("A", "B"),
                   help="difficulty distribution p ~ Beta(A, B) for ESS and hardness (default 1 1)")
    c.add_argument("--entropy-ratio", "--eta", dest="entropy_ratio", type=float, default=1.0,
                   help="FADE's schedule position eta = H/H0, the entropy ratio, for signal-driven advantages (--eta is "
                        "the old spelling)")
    c.add_argument("--out", help="PNG path (default card_NAME.png)")

    k = sub.add_parser("check", help="property-check your own advantage",
                       description="Load FILE.py:FUNCTION or MODULE:FUNCTION (written to the fadesim contract "
                       "fn(rewards, *, mask=None, signals=None, logprobs=None)) and run the property suite: "
                       "shapes and namespaces, numpy = jax = torch, jit/vmap, permutation equivariance, "
                       "degenerate, extreme and float32-tied groups, masks, reward order, and declared "
                       "properties; then the contract: bad input, autograd, dtypes, groups of one. "
                       "Declare properties with --declare or a `__fadesim__ = {...}` attribute on the function "
                       "(@fadesim.advantage sets it and meets the contract); a registered name uses the "
                       "registry's metadata. Exit code 1 if any property fails; contract findings are warnings "
                       "that name their fix.")
    k.add_argument("target", help="FILE.py:FUNCTION, MODULE:FUNCTION, or a registered advantage name")
    k.add_argument("--min-G", type=int, default=None,
                   help="the advantage's smallest group size (default 2, or __fadesim__['min_group_size']); "
                   "groups below it must be refused, and with 1 groups of one must be handled")
    k.add_argument("--declare", action="append", metavar="PROPERTY", help=f"one of {', '.join(DECLARABLE)}")
    k.add_argument("--examples", type=int, default=100, help="hypothesis examples per property (default 100)")
    k.add_argument("--max-G", type=int, default=16, help="largest group size drawn (default 16)")
    k.add_argument("--only", action="append", metavar="PROPERTY",
                   help="run only this property or contract item (repeatable; default: all of them)")

    s = sub.add_parser("simulate", help="one quick simulated training run", description="Train a simulated "
                       "task with a registered advantage (JAX simulator) and print start/end metrics.")
    s.add_argument("name", help="registered advantage name")
    s.add_argument("--task", default="bandit", choices=["bandit", "linear_softmax", "chain", "neural", "sharpen"],
                   help="neural: an MLP policy over token sequences (make_task('neural') defaults; "
                        "--answers, --correct and --difficulty do not apply)")
    s.add_argument("--param", action="append", metavar="K=V", help="advantage hyper-parameter, repeatable")
    s.add_argument("--prompts", type=int, default=128)
    s.add_argument("--answers", type=int, default=16)
    s.add_argument("--correct", type=int, default=3)
    s.add_argument("--difficulty", default="mixed", help="easy, mixed, hard or uniform")
    s.add_argument("--G", type=int, default=16)
    s.add_argument("--steps", type=int, default=200)
    s.add_argument("--log-every", type=int, default=20)
    s.add_argument("--optimizer", default="adam", choices=sorted(OPTIMIZERS))
    s.add_argument("--lr", type=float, default=0.02)
    s.add_argument("--seeds", type=int, default=4)
    s.add_argument("--task-seed", type=int, default=0)
    s.add_argument("--out", help="PNG path")

    p = sub.add_parser("predict", help="predict each advantage's pass@k and entropy from your model's base pass@k",
                       description="Calibrate the simulator to a base pass@k curve (a curves file in the literature "
                       "schema: setting,source,method,k,pass_at_k), fix the training length by the pass@1 your GRPO "
                       "run reached (or a number of steps), and predict each advantage's pass@k and entropy there. "
                       "Where the setting has published methods, they are scored as experiments/literature.py does.")
    p.add_argument("--curves", help="CSV with your base rows (method 'base', two k or more; default: the shipped "
                   "published curves, fadesim/data/literature/curves.csv)")
    p.add_argument("--setting", help="which setting of the file (needed when it has several)")
    p.add_argument("--methods", help="methods CSV mapping published methods to advantages (default: the shipped one)")
    p.add_argument("--advantages", required=True, help="comma-separated, e.g. grpo,psr,w_reinforce:lam=0.1,fade")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--grpo-pass1", type=float, help="the pass@1 your GRPO run reached: fixes the length")
    length.add_argument("--steps", type=int, help="a training length in simulator steps instead")
    # the defaults are the family the literature protocol chose (fadesim.lab.literature.CHOSEN)
    p.add_argument("--task", default=CHOSEN["task"], choices=["bandit", "linear_softmax", "chain", "sharpen"],
                   help="task family (default: the chosen sharpen family; another family takes no sharpen setting)")
    p.add_argument("--sharpen-scale", type=float, default=None,
                   help=f"the sharpen task's c (default {CHOSEN['sharpen_scale']:g})")
    p.add_argument("--skill-scale", type=float, default=None,
                   help=f"the sharpen task's shared skill d (default {CHOSEN['skill_scale']:g}; 0: none)")
    p.add_argument("--answer-scale", type=float, default=None,
                   help=f"the sharpen task's shared answer biases e (default {CHOSEN['answer_scale']:g}: none)")
    p.add_argument("--prompts-per-step", type=int, default=None,
                   help=f"sharpen: prompts drawn a step (default {CHOSEN['prompts_per_step']}; 0: all)")
    p.add_argument("--eval-prompts", type=int, default=None,
                   help=f"sharpen: prompts held out of training, where pass@k is read (default "
                        f"{CHOSEN['eval_prompts']}; 0: read on the trained prompts)")
    p.add_argument("--eval-split", default=None, choices=list(EVAL_SPLITS),
                   help="sharpen: which prompts are held out (default: the chosen family's)")

    def sharpen_flag(flag: str, words: str, after: str = "") -> None:
        """A sharpen-only flag whose None means the chosen family's value, which its help ends with (on / off for a
        switch; the number and ``after`` otherwise)."""
        value = CHOSEN[flag[2:].replace("-", "_")]
        if isinstance(value, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                           help=f"sharpen: {words} (default {'on' if value else 'off'})")
        else:
            p.add_argument(flag, type=type(value), default=None, help=f"sharpen: {words} (default {value:g}{after})")

    sharpen_flag("--reach-samples", "the skill lifts only prompts the base solves within this many draws",
                 "; 0: every prompt")
    sharpen_flag("--floor-sharpness", "the shared sharpness never falls below its start")
    sharpen_flag("--transfer", "the share of its twin training prompt's learned log-odds a held-out prompt gains",
                 ": none")
    sharpen_flag("--reach-fallback", "where GRPO cannot reach your pass@1 under the skill's reach, match and predict "
                 "without it")
    sharpen_flag("--tail-entropy", "each prompt's least likely wrong answer stands for e^H wrong answers, which "
                 "flattening the sharpness spreads mass onto", ": none")
    p.add_argument("--reach-draw", default=None, choices=list(REACH_DRAWS),
                   help=f"sharpen: base: the skill reaches each prompt by its own base pass rate; uniform: the same "
                        f"share, drawn independently of it (default {CHOSEN['reach_draw']})")
    sharpen_flag("--misfire", "how far the skill raises each unreached prompt's most likely wrong answer", "; 0: none")
    sharpen_flag("--shortcut-scale", "a shortcut learned on its own shared parameter, right on the reached prompts "
                 "and wrong on the others (each unreached prompt's most likely wrong answer)", ": none")
    sharpen_flag("--misfire-fallback", "where GRPO cannot reach your pass@1 under the misfire or shortcut, match and "
                 "predict without them, the reach kept (before any --reach-fallback)")
    p.add_argument("--optimizer", default=CHOSEN["optimizer"], choices=sorted(OPTIMIZERS))
    p.add_argument("--tie", type=float, default=None,
                   help="adam_tied only: the per-prompt gradient's weight in a shared parameter's second moment "
                        f"(default {ProtocolSettings.tie:g})")
    p.add_argument("--clock", default=None, choices=list(CLOCKS),
                   help="trainer: read each advantage at the length x its trainer-form step size against GRPO "
                        "(fadesim.theory.step_size; sharpen task, adam only); noise: the same at your run's batch "
                        "(--rollouts-per-step; step_size.noise_clock); simulator: every advantage at the length. "
                        "Default: the default family's noise where --rollouts-per-step is given, else simulator")
    p.add_argument("--rollouts-per-step", type=int, default=None,
                   help="your run's rollouts a step (prompts a step x rollouts a prompt), which the noise-scale "
                        "clock reads")
    p.add_argument("--noise-scale", type=float, default=ProtocolSettings.noise_scale,
                   help=f"--clock noise: rho, a weight's per-rollout noise power over the squared signal (default "
                        f"{ProtocolSettings.noise_scale:g})")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--G", type=int, default=8)
    p.add_argument("--seeds", type=int, default=16, help="half match the length, half are predicted (default 16)")
    p.add_argument("--task-draws", type=int, default=ProtocolSettings.task_draws,
                   help="draws of the task every number is averaged over, each matched and read on its own (default "
                        f"{ProtocolSettings.task_draws})")
    p.add_argument("--prompts", type=int, default=CHOSEN["n_prompts"])
    p.add_argument("--max-steps", type=int, default=CHOSEN["max_steps"], help="longest GRPO run searched for the length")
    p.add_argument("--log-every", type=int, default=CHOSEN["log_every"])
    p.add_argument("--out", help="PNG path (the table goes beside it as CSV)")
    z = sub.add_parser("analyze", help="decompose what a verl / TRL run's advantages did, from its rollout logs",
                       description="Read a verl rollout directory (trainer.rollout_data_dir), a TRL output directory "
                       "(log_completions=True) or a CSV / JSONL / Parquet table (step, prompt or prompt_id, reward; "
                       "optional group, advantage, logprob, entropy, length) and write steps.csv, prompts.csv, "
                       "report.md and analysis.png.")
    z.add_argument("path", help="the rollout directory or table")
    z.add_argument("--out", required=True, help="output folder (replaced when complete)")
    z.add_argument("--advantage", default="grpo", help="the run's estimator, recomputed where the log has no "
                   "advantage column (default grpo)")
    z.add_argument("--compare", default="", help="registered advantages computed on the same batches, e.g. "
                   "focal,w_reinforce:lam=0.1; fade needs an entropy column, unlikeliness a logprob column")
    z.add_argument("--entropy-decay", type=float, default=0.9, help="moving-average factor of the entropy signal "
                   "rebuilt for fade (default 0.9, the trainers')")
    z.add_argument("--threshold", type=float, default=0.5, help="a rollout is correct when its reward exceeds this")
    z.add_argument("--reward-column", help="TRL: which reward function's column (needed when there are several)")
    z.add_argument("--no-forecast", action="store_true", help="skip the simulator's forecast")
    return ap


def cmd_analyze(args: argparse.Namespace) -> int:
    from fadesim.apps.analysis import AnalysisError, analyze

    try:
        res = analyze(args.path, args.out, advantage=args.advantage, compare=args.compare, threshold=args.threshold,
                      reward_column=args.reward_column, forecast=not args.no_forecast,
                      entropy_decay=args.entropy_decay)
    except AnalysisError as err:
        raise CLIError(str(err)) from None
    print((res["out"] / "report.md").read_text(), end="")
    print(f"written: {', '.join(sorted(p.name for p in res['out'].iterdir()))} in {res['out']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"list": cmd_list, "card": cmd_card, "check": cmd_check, "simulate": cmd_simulate,
                "predict": cmd_predict, "analyze": cmd_analyze}
    try:
        return handlers[args.command](args)
    except (CLIError, KeyError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"fadesim {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
