"""Simulator speed, four ways in one run, on one configuration (bandit, N = 512 prompts, K = 32 answers,
G = 16, 200 GRPO steps with Adam): a per-prompt Python loop, the numpy reference, jax jit, and jax jit + vmap
over 8 seeds; then the full sign-axis sweep (21 balances x 8 seeds x 512 prompts x G = 16 x 1000 steps) as one
jitted, vmapped call. Prints rollouts per second and ratios.

    python benchmarks/simulator.py [--loop-steps 5] [--reference-steps 20]

The Python loop and the numpy reference run --loop-steps / --reference-steps steps and are scaled linearly
to 200 (their cost per step is constant); the jax runs are timed in full, after a compile call.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fadesim  # noqa: E402
from fadesim.sim import SimConfig, simulate, simulate_reference  # noqa: E402
from fadesim.tasks import make_task  # noqa: E402

N, K, G, STEPS = 512, 32, 16, 200


def python_loop(task, steps: int, lr: float = 0.02, seed: int = 0) -> None:
    """One prompt at a time: sample, reward, GRPO advantage, analytic score, Adam; plain Python + numpy."""
    rng = np.random.default_rng(seed)
    grpo = fadesim.get("grpo")
    theta = task.logits0.copy()
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    for t in range(1, steps + 1):
        for n in range(N):
            z = np.exp(theta[n] - theta[n].max())
            pi = z / z.sum()
            actions = rng.choice(K, size=G, p=pi)
            rewards = task.correct[n, actions].astype(float)
            adv = grpo(rewards[None, :])[0]
            grad = np.zeros(K)
            for a, A in zip(actions, adv):
                grad += A * (np.eye(K)[a] - pi)
            grad /= G * N
            m[n] = 0.9 * m[n] + 0.1 * grad
            v[n] = 0.999 * v[n] + 0.001 * grad**2
            theta[n] += lr * (m[n] / (1 - 0.9**t)) / (np.sqrt(v[n] / (1 - 0.999**t)) + 1e-8)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--loop-steps", type=int, default=5)
    ap.add_argument("--reference-steps", type=int, default=20)
    args = ap.parse_args()
    task = make_task("bandit", n_prompts=N, n_answers=K, n_correct=3, difficulty="mixed", seed=0)
    rollouts = N * G * STEPS
    cfg = SimConfig(advantage="grpo", G=G, steps=STEPS, log_every=10, optimizer="adam", lr=0.02)

    t_loop = timed(lambda: python_loop(task, args.loop_steps)) * STEPS / args.loop_steps
    ref_cfg = cfg.replace(steps=args.reference_steps, log_every=args.reference_steps)
    t_ref = timed(lambda: simulate_reference(task, ref_cfg, seed=0, dtype=np.float32)) * STEPS / args.reference_steps
    simulate(task, cfg, seeds=[0])  # compile
    t_jax = timed(lambda: simulate(task, cfg, seeds=[0]))
    seeds8 = list(range(8))
    simulate(task, cfg, seeds=seeds8)  # compile
    t_vmap = timed(lambda: simulate(task, cfg, seeds=seeds8))

    print(f"bandit N={N}, K={K}, G={G}, {STEPS} steps = {rollouts:,} rollouts per run")
    print(f"{'way':28s} {'seconds/run':>12s} {'rollouts/s':>14s} {'vs loop':>9s} {'vs numpy':>9s}")
    for name, t, runs in [("per-prompt Python loop", t_loop, 1), ("numpy reference", t_ref, 1),
                          ("jax jit", t_jax, 1), ("jax jit + vmap (8 seeds)", t_vmap, 8)]:
        per_run = t / runs
        print(f"{name:28s} {per_run:12.3f} {rollouts / per_run:14,.0f} {t_loop / per_run:9.1f} {t_ref / per_run:9.1f}")

    balances = list(np.linspace(-1, 1, 21))
    sweep_cfg = SimConfig(advantage="sign_balanced", G=G, steps=1000, log_every=50, optimizer="adam", lr=0.02)
    t_compile_and_run = timed(lambda: simulate(task, sweep_cfg, seeds=seeds8, sweep={"balance": balances}))
    t_sweep = timed(lambda: simulate(task, sweep_cfg, seeds=seeds8, sweep={"balance": balances}))
    total = 21 * 8 * N * G * 1000
    print(f"full sign-axis sweep (21 balances x 8 seeds x {N} prompts x G={G} x 1000 steps = {total:,} rollouts): "
          f"{t_sweep:.1f} s after compile ({t_compile_and_run:.1f} s including compile), {total / t_sweep:,.0f} rollouts/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
