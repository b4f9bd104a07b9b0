"""Simulator speed, four ways in one run, at K = 32, 512 and 4096 answers (bandit, N = 512 prompts, G = 16, 200
GRPO steps with Adam): a per-prompt Python loop, the numpy reference, jax jit, and jax jit + vmap over 8 seeds;
then the full sign-axis sweep (21 balances x 8 seeds x 512 prompts x G = 16, 300 steps, K = 32) as one jitted call.
Prints rollouts per second, the compile time at each K (the task's arrays are arguments of the compiled program,
not constants), and the three speed targets as ratios measured side by side in this run: a K = 32 sweep step
against drawing its uniforms alone (<= 6x), jit + vmap against the per-prompt loop (>= 400x), and a K = 4096
run-step against a K = 32 one (<= 40x). Then one run-step of each answer-space task family (bandit, linear_softmax,
sharpen, chain) side by side, the neural rung and the scale-out.

    python benchmarks/simulator.py              # everything, under 10 minutes on 2 cores
    python benchmarks/simulator.py --quick      # a one-minute look: K = 32 and 4096, 50 steps, the targets
    python benchmarks/simulator.py [--loop-steps 2] [--reference-steps 5] [--sweep-steps 300] [--no-scale-out]
    python benchmarks/simulator.py --breakdown  # where a step's time goes: sampling, counts, Adam, RNG, ...

The Python loop and the numpy reference run --loop-steps / --reference-steps steps and are scaled linearly
to the run's length (their cost per step is constant); the jax runs are timed in full, after a compile call.

Scale-out (last): the same full sweep on 1 vs 2 virtual CPU devices (``simulate(devices=...)``, in a child
process started with XLA_FLAGS=--xla_force_host_platform_device_count=2, both timed after their compile),
and as 8 experiment units (one per seed, 21 balances each) through ``run_units`` on a local Ray cluster with
1 vs 2 CPUs (each in its own child process; wall time of the whole run_units call, workers' start-up and
compilation included, since that is what a sweep pays).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fadesim
from fadesim.sim import SimConfig, simulate, simulate_reference
from fadesim.tasks import make_task

N, K, G, STEPS = 512, 32, 16, 200
KS = (32, 512, 4096)
BALANCES = [float(b) for b in np.linspace(-1, 1, 21)]  # the full sign-axis sweep's 21 balances


def python_loop(task, steps: int, lr: float = 0.02, seed: int = 0) -> None:
    """One prompt at a time: sample, reward, GRPO advantage, analytic score, Adam; plain Python + numpy."""
    rng = np.random.default_rng(seed)
    grpo = fadesim.get("grpo")
    theta = task.logits0.copy()
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    n_answers = theta.shape[1]
    for t in range(1, steps + 1):
        for n in range(N):
            z = np.exp(theta[n] - theta[n].max())
            pi = z / z.sum()
            actions = rng.choice(n_answers, size=G, p=pi)
            rewards = task.correct[n, actions].astype(float)
            adv = grpo(rewards[None, :])[0]
            grad = np.zeros(n_answers)
            for a, A in zip(actions, adv):
                grad[a] += A
                grad -= A * pi
            grad /= G * N
            m[n] = 0.9 * m[n] + 0.1 * grad
            v[n] = 0.999 * v[n] + 0.001 * grad**2
            theta[n] += lr * (m[n] / (1 - 0.9**t)) / (np.sqrt(v[n] / (1 - 0.999**t)) + 1e-8)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def sweep_config(steps: int) -> SimConfig:
    """The full sign-axis sweep's configuration (sign_balanced, G = 16, adam), also run by scripts/gpu_smoke.sh."""
    return SimConfig(advantage="sign_balanced", G=G, steps=steps, log_every=50 if steps % 50 == 0 else steps,
                     optimizer="adam", lr=0.02)


def bandit_task(n_answers: int = K):
    """The benchmark's bandit: 512 prompts, K answers (3 correct), mixed difficulty."""
    return make_task("bandit", n_prompts=N, n_answers=n_answers, n_correct=3, difficulty="mixed", seed=0)


def _devices_child(steps: int) -> dict:
    """In a process that sees 2 virtual CPU devices: the full sweep on 1 and on 2 of them, after compiling."""
    task, cfg = bandit_task(), sweep_config(steps)
    sweep, seeds = {"balance": BALANCES}, list(range(8))
    out = {}
    for n in (1, 2):
        simulate(task, cfg, seeds=seeds, sweep=sweep, devices=n)  # compile
        out[n] = timed(lambda: simulate(task, cfg, seeds=seeds, sweep=sweep, devices=n))
    return out


def _unit_compute(steps: int):
    task, cfg = bandit_task(), sweep_config(steps)

    def compute(spec):
        return simulate(task, cfg, seeds=[spec["seed"]], sweep={"balance": BALANCES}).to_frame()

    return compute


def _ray_child(steps: int, cpus: int) -> float:
    """8 units (one per seed) through run_units on a fresh local Ray cluster with ``cpus`` CPUs."""
    from fadesim.lab.units import Executor, run_units
    from fadesim.lab.results import ResultStore

    executor = Executor("ray", num_cpus=cpus)
    executor.connect()
    specs = [{"benchmark": "sign_axis_sweep", "seed": s, "steps": steps} for s in range(8)]
    with tempfile.TemporaryDirectory() as root:
        return timed(lambda: run_units(specs, _unit_compute(steps), ResultStore(root), f"ray, {cpus} cpu",
                                       executor))


def _child(args: list[str], env: dict | None = None) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child {args} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scale_out(steps: int) -> None:
    total = 21 * 8 * N * G * steps
    print(f"\nscale-out, sign-axis sweep (21 balances x 8 seeds x {N} prompts x G={G} x {steps} steps = "
          f"{total:,} rollouts)")
    dev = _child(["--child-devices", str(steps)], {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    print(f"  simulate on 1 virtual CPU device: {dev['1']:7.1f} s;  on 2: {dev['2']:7.1f} s;  "
          f"speed-up {dev['1'] / dev['2']:.2f}x (after compile)")
    try:
        import ray  # noqa: F401 - only whether Ray is installed
    except ImportError:
        print("  Ray: not installed (pip install -e '.[ray]'), skipped")
        return
    one = _child(["--child-ray", str(steps), "1"])["seconds"]
    two = _child(["--child-ray", str(steps), "2"])["seconds"]
    print(f"  run_units on Ray, 8 units: 1 CPU {one:7.1f} s;  2 CPUs {two:7.1f} s;  speed-up {one / two:.2f}x "
          "(start-up and compilation included)")


def per_step_ms(fn, *args, steps: int = 50) -> float:
    """ms per call of ``fn(*args)`` inside a jitted scan of ``steps`` steps (as the simulator runs it), after compile.
    The inputs depend on the loop's carry, so XLA cannot hoist the work out of the loop."""
    import jax
    import jax.numpy as jnp

    def body(carry, _):
        out = fn(*jax.tree_util.tree_map(lambda a: a + (0 * carry).astype(a.dtype), args))
        return carry + jnp.sum(jax.tree_util.tree_leaves(out)[0]).astype(jnp.float32) * 1e-30, None
    run = jax.jit(lambda: jax.lax.scan(body, jnp.float32(0), jnp.arange(steps))[0])
    run().block_until_ready()
    return timed(lambda: run().block_until_ready()) / steps * 1e3


def uniforms_ms(runs: int, steps: int = 50) -> float:
    """ms to draw one step's uniforms (N x G per run, threefry) for ``runs`` runs: the floor of a simulator step."""
    import jax

    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    return per_step_ms(jax.vmap(lambda k: jax.random.uniform(k, (N, G))), keys, steps=steps)


def breakdown(steps: int = 50) -> None:
    """Where a step's time goes, each part timed alone (jit, vmap over the runs, a scan of ``steps`` steps, as in the
    simulator): the full sign-axis sweep's shapes (168 runs, K = 32) and 8 runs at K = 4096. Two alternatives are
    timed beside the simulator's own code (the one-hot weighted counts the simulator used before its scatter-add)."""
    import jax
    import jax.numpy as jnp

    from fadesim.sim.optim import adam_init, adam_update
    from fadesim.tasks import softmax_policy as sp

    def per_step(fn, *args) -> float:
        return per_step_ms(fn, *args, steps=steps)

    print(f"\nwhere a step goes (ms per step, each part alone, jit + vmap over the runs, {steps}-step scan; a part "
          "alone also writes its output, which inside the step XLA may fuse away, so the parts overlap and do not "
          "add up)")
    for runs, n_answers in ((21 * 8, K), (8, KS[-1])):
        key = jax.random.PRNGKey(0)
        theta = jax.random.normal(key, (runs, N, n_answers))
        u = jax.random.uniform(jax.random.PRNGKey(1), (runs, N, G))
        logp = jax.vmap(lambda t: sp.log_softmax(t, jnp))(theta)
        actions = jax.vmap(lambda lp, uu: sp.sample_categorical(lp, uu, jnp))(logp, u)
        w = u - 0.5
        rows = {
            "log_softmax": per_step(jax.vmap(lambda t: sp.log_softmax(t, jnp)), theta),
            "  before: the full cdf (exp, cumsum, normalise)": per_step(jax.vmap(
                lambda lp: (lambda c: c / c[..., -1:])(jnp.cumsum(jnp.exp(lp), axis=-1))), logp),
            "sample_categorical (two levels)": per_step(jax.vmap(lambda lp, uu: sp.sample_categorical(lp, uu, jnp)),
                                                          logp, u),
            "weighted_counts (scatter-add)": per_step(jax.vmap(
                lambda a, ww: sp.weighted_counts(a, ww, n_answers, jnp)), actions, w),
            "  before: one-hot sums": per_step(jax.vmap(
                lambda a, ww: jnp.sum(ww[..., None] * sp.one_hot(a, n_answers, ww.dtype, jnp), axis=-2)), actions, w),
            "adam update": per_step(jax.vmap(lambda g, t, st: adam_update({"theta": g}, st, {"theta": t}, 0.02, jnp)[0]
                                             ["theta"]), theta, theta, jax.vmap(lambda t: adam_init({"theta": t}, jnp))(theta)),
            "uniforms (threefry)": per_step(jax.vmap(lambda k: jax.random.uniform(k, (N, G))), jax.random.split(key, runs)),
        }
        cfg = sweep_config(steps) if n_answers == K else SimConfig(advantage="grpo", G=G, steps=steps, log_every=steps,
                                                                      optimizer="adam", lr=0.02)
        task, seeds = bandit_task(n_answers), list(range(8))
        sweep = {"balance": BALANCES} if n_answers == K else None
        simulate(task, cfg, seeds=seeds, sweep=sweep)  # compile
        full = timed(lambda: simulate(task, cfg, seeds=seeds, sweep=sweep)) / steps * 1e3
        print(f"  {runs} runs x {N} prompts x G = {G}, K = {n_answers}: the whole simulator step {full:.2f} ms")
        for name, ms in rows.items():
            print(f"    {name:36s} {ms:8.2f} ms  ({ms / full:5.1%} of the step)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a one-minute look: K = 32 and 4096, 50 steps, a 100-step sweep; no neural rung or scale-out")
    ap.add_argument("--steps", type=int, default=STEPS, help="steps of each single-configuration run (default 200)")
    ap.add_argument("--loop-steps", type=int, default=2)
    ap.add_argument("--reference-steps", type=int, default=5)
    ap.add_argument("--sweep-steps", type=int, default=300, help="steps of the full sweep (and the scale-out)")
    ap.add_argument("--neural-steps", type=int, default=200, help="steps of the neural-rung run")
    ap.add_argument("--no-scale-out", action="store_true", help="skip the 1-vs-2 devices and Ray timings")
    ap.add_argument("--only-scale-out", action="store_true", help="only the 1-vs-2 devices and Ray timings")
    ap.add_argument("--breakdown", action="store_true", help="only where a step's time goes (parts timed alone)")
    ap.add_argument("--child-devices", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-ray", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_devices is not None:
        print(json.dumps(_devices_child(args.child_devices)))
        return 0
    if args.child_ray is not None:
        print(json.dumps({"seconds": _ray_child(*args.child_ray)}))
        return 0
    if args.only_scale_out:
        scale_out(args.sweep_steps)
        return 0
    if args.breakdown:
        breakdown()
        return 0
    ks, steps = (KS[0], KS[-1]) if args.quick else KS, 50 if args.quick else args.steps
    sweep_steps = 100 if args.quick else args.sweep_steps
    loop_steps, ref_steps = (1, 2) if args.quick else (args.loop_steps, args.reference_steps)
    rollouts = N * G * steps
    cfg = SimConfig(advantage="grpo", G=G, steps=steps, log_every=10, optimizer="adam", lr=0.02)
    per_step, vs_loop = {}, {}
    print(f"bandit N={N}, G={G}, {steps} steps = {rollouts:,} rollouts per run, at K = {', '.join(map(str, ks))}")
    print(f"{'K':>5s} {'way':28s} {'seconds/run':>12s} {'rollouts/s':>14s} {'vs loop':>9s} {'vs numpy':>9s}")
    for n_answers in ks:
        task = bandit_task(n_answers)
        t_loop = timed(lambda: python_loop(task, loop_steps)) * steps / loop_steps
        ref_cfg = cfg.replace(steps=ref_steps, log_every=ref_steps)
        t_ref = timed(lambda: simulate_reference(task, ref_cfg, seed=0, dtype=np.float32)) * steps / ref_steps
        # "jax jit": one configuration's chunk of RUN_CHUNK = 2 seeds, per run (a lone run costs a whole chunk)
        t_compile = timed(lambda: simulate(task, cfg, seeds=[0, 1])) / 2  # compile (+ one chunk)
        t_jax = timed(lambda: simulate(task, cfg, seeds=[0, 1])) / 2
        seeds8 = list(range(8))
        simulate(task, cfg, seeds=seeds8)  # compile
        t_vmap = timed(lambda: simulate(task, cfg, seeds=seeds8))
        per_step[n_answers] = t_vmap / (8 * steps)
        vs_loop[n_answers] = t_loop / (t_vmap / 8)
        for name, t, runs in [("per-prompt Python loop", t_loop, 1), ("numpy reference", t_ref, 1),
                              ("jax jit (2 seeds, one chunk)", t_jax, 1), ("jax jit + vmap (8 seeds)", t_vmap, 8)]:
            per_run = t / runs
            print(f"{n_answers:5d} {name:28s} {per_run:12.3f} {rollouts / per_run:14,.0f} {t_loop / per_run:9.1f} "
                  f"{t_ref / per_run:9.1f}")
        print(f"{n_answers:5d} {'(jax compile, about)':28s} {t_compile - t_jax:12.2f} s")

    task = bandit_task()
    seeds8 = list(range(8))
    sweep_cfg = sweep_config(sweep_steps)
    t_compile_and_run = timed(lambda: simulate(task, sweep_cfg, seeds=seeds8, sweep={"balance": BALANCES}))
    t_sweep = timed(lambda: simulate(task, sweep_cfg, seeds=seeds8, sweep={"balance": BALANCES}))
    total = 21 * 8 * N * G * sweep_steps
    print(f"full sign-axis sweep (21 balances x 8 seeds x {N} prompts x G={G} x {sweep_steps} steps = {total:,} "
          f"rollouts): {t_sweep:.1f} s after compile ({t_compile_and_run:.1f} s including compile), "
          f"{total / t_sweep:,.0f} rollouts/s")
    step_ms, draw_ms = t_sweep / sweep_steps * 1e3, uniforms_ms(21 * 8)
    big = KS[-1]
    print("\ntargets (ratios from this run; absolute times differ several-fold between machines of one kind):")
    for what, value, target, ok in [
            (f"K = {K}: a whole sweep step / drawing its uniforms alone ({step_ms:.1f} / {draw_ms:.1f} ms)",
             step_ms / draw_ms, "<= 6x", step_ms / draw_ms <= 6),
            (f"K = {K}: jax jit + vmap vs the per-prompt Python loop, per run", vs_loop[K], ">= 400x",
             vs_loop[K] >= 400),
            (f"one run-step (jit + vmap): K = {big} / K = {K} (K is {big // K}x)", per_step[big] / per_step[K],
             "<= 40x", per_step[big] / per_step[K] <= 40)]:
        print(f"  {what:78s} {value:8.1f}x  target {target:6s} {'met' if ok else 'NOT MET'}")
    families(50 if args.quick else args.steps)
    if not args.quick:
        neural(args.neural_steps)
        if not args.no_scale_out:
            scale_out(args.sweep_steps)
    return 0


def families(steps: int) -> None:
    """One run-step of each answer-space task family side by side (jit + vmap over 8 seeds, N = 512, G = 16, K = 32,
    GRPO, Adam): the tabular bandit, linear_softmax (shared W, d = 16), sharpen (shared sharpness + per-prompt
    logits; also with 8 prompts drawn a step, and with the shared skill, one prompt a step and half the prompts held
    out) and chain (T = 3 tokens from V = 4: 64 sequences), each relative to the
    bandit."""
    tasks = {"bandit": bandit_task(),
             "linear_softmax": make_task("linear_softmax", n_prompts=N, n_answers=K, n_correct=3, width=16, seed=0),
             "sharpen": make_task("sharpen", n_prompts=N, n_answers=K, n_correct=3, seed=0),
             # a prompt mini-batch: every prompt is still sampled (fixed shapes), so the step costs the same plus the
             # two sorts of N uniforms that draw the batch and the masking
             "sharpen B=8": make_task("sharpen", n_prompts=N, n_answers=K, n_correct=3, prompts_per_step=8, seed=0),
             # the literature protocol's default family: a shared skill too, one prompt a step, half the prompts
             # held out of training (fadesim.lab.literature.CHOSEN's design at this benchmark's sizes)
             "sharpen skill B=1": make_task("sharpen", n_prompts=N, n_answers=K, n_correct=3, skill_scale=0.3,
                                            prompts_per_step=1, eval_prompts=N // 2, seed=0),
             "chain": make_task("chain", n_prompts=N, length=3, vocab=4, n_correct=3, seed=0)}
    cfg = SimConfig(advantage="grpo", G=G, steps=steps, log_every=10, optimizer="adam", lr=0.02)
    seeds8 = list(range(8))
    print(f"\ntask families, one run-step (jit + vmap, 8 seeds, N = {N}, G = {G}, K = {K}, {steps} steps, after compile):")
    base = None
    for name, task in tasks.items():
        simulate(task, cfg, seeds=seeds8)  # compile
        ms = timed(lambda: simulate(task, cfg, seeds=seeds8)) / (8 * steps) * 1e3
        base = base or ms
        print(f"  {name:18s} {ms:8.3f} ms per run-step  ({ms / base:4.2f}x the bandit's)")


def neural(steps: int) -> None:
    """The neural rung (shared weights): 512 prompts x G = 16 at d = 64, one run, jit; target under a minute."""
    task = make_task("neural", n_prompts=512, length=3, vocab=8, width=64)
    cfg = SimConfig(advantage="grpo", G=16, steps=steps, log_every=50, optimizer="adam_shared", lr=0.01)
    # two seeds: one chunk (simulate computes runs RUN_CHUNK = 2 at a time on the CPU, so a lone run costs a chunk)
    t_first = timed(lambda: simulate(task, cfg, seeds=[0, 1])) / 2
    t_run = timed(lambda: simulate(task, cfg, seeds=[2, 3])) / 2
    print(f"neural rung (512 prompts x G=16 x {steps} steps, T=3, V=8, d=64, adam_shared, 2 seeds): {t_run:.1f} s "
          f"per run after compile, {t_first:.1f} s including compile; {512 * 16 * steps / t_run:,.0f} rollouts/s")


if __name__ == "__main__":
    raise SystemExit(main())
