"""Time every advantage plus its decomposition on 65,536 groups x 16 rollouts (1M rollouts), side by side:
numpy, jax (jitted), torch (CPU), and a per-group Python loop. Prints milliseconds and ratios.

    python benchmarks/advantages.py [--groups 65536] [--G 16] [--repeats 5] [--loop-groups 1024]

The Python loop runs on --loop-groups groups and is scaled linearly to the full batch (it is linear in
the number of groups); everything else runs on the full batch. Timings are the best of --repeats.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import torch

import fadesim


def best_of(fn, repeats: int) -> float:
    fn()  # warm-up (and jit compile)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def extras(name: str, r) -> dict:
    info = fadesim.info(name)
    kw = {}
    if info.needs_logprobs:
        kw["logprobs"] = r * 0.0 - 1.0
    if info.needs_signals:
        kw["signals"] = {"entropy": 0.5, "initial_entropy": 1.0}
    return kw


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=65536)
    ap.add_argument("--G", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loop-groups", type=int, default=1024)
    args = ap.parse_args()
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    p = rng.beta(0.8, 0.8, size=(args.groups, 1))
    r_np = (rng.random((args.groups, args.G)) < p).astype(np.float32)
    r_t, r_j = torch.asarray(r_np), jnp.asarray(r_np)
    print(f"{args.groups} groups x G = {args.G} = {args.groups * args.G:,} rollouts, float32; "
          f"advantage + decompose; best of {args.repeats}; jax {jax.__version__}, torch {torch.__version__}")
    print(f"{'advantage':15s} {'loop ms':>10s} {'numpy ms':>9s} {'jax ms':>8s} {'torch ms':>9s} "
          f"{'loop/np':>8s} {'loop/jax':>9s} {'loop/torch':>10s} {'np/jax':>7s}")
    for name in fadesim.names():
        fn = fadesim.get(name)
        kw_np, kw_t, kw_j = extras(name, r_np), extras(name, r_t), extras(name, r_j)

        def np_call():
            return fadesim.decompose(fn(r_np, **kw_np), r_np)

        def torch_call():
            with torch.no_grad():
                return fadesim.decompose(fn(r_t, **kw_t), r_t)

        jitted = jax.jit(lambda r, kw: fadesim.decompose(fn(r, **kw), r))

        def jax_call():
            return jax.block_until_ready(jitted(r_j, kw_j))

        sub = r_np[: args.loop_groups]
        kw_sub = extras(name, sub[:1])

        def loop_call():
            for g in range(sub.shape[0]):
                row = sub[g:g + 1]
                fadesim.decompose(fn(row, **kw_sub), row)

        t_loop = best_of(loop_call, 1) * args.groups / args.loop_groups
        t_np, t_jax, t_torch = (best_of(f, args.repeats) for f in (np_call, jax_call, torch_call))
        print(f"{name:15s} {t_loop * 1e3:10.0f} {t_np * 1e3:9.1f} {t_jax * 1e3:8.1f} {t_torch * 1e3:9.1f} "
              f"{t_loop / t_np:8.0f} {t_loop / t_jax:9.0f} {t_loop / t_torch:10.0f} {t_np / t_jax:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
