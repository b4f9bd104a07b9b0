"""Time the real-model rung's RL step (SmolLM2-135M-Instruct on CPU) with and without transparent huge pages for
PyTorch's CPU tensors, side by side in one run.

    python benchmarks/real_model_step.py [--steps 4] [--warmup 1] [--rounds 2] [--max-new-tokens 12]

Each arm runs in its own process (PyTorch reads ``THP_MEM_ALLOC_ENABLE`` once, at its first allocation), and the
arms alternate ``--rounds`` times (off, on, off, on, ...) so a slow spell of the machine falls on both. Every
process loads the converted model from the cache (``FADESIM_MODEL_CACHE``), builds the trainer of
``experiments/real_model.py``'s FULL settings (8 prompts x 8 rollouts, AdamW, GRPO, seed 0), runs ``--warmup``
untimed steps (the first allocates AdamW's state) and times ``--steps`` more: wall clock, generation, learner forward and backward, optimizer, system CPU time and minor page faults.
The same seed gives the same rollouts in every process; the parent checks that the arms' rewards and entropies are
identical (huge pages change where tensors live, not what is computed) and prints the means, their standard
errors and the ratio on / off.

Why: every tensor above glibc's 32 MiB mmap threshold (the learner's (tokens, vocabulary) logits and their
gradients) is a fresh mapping faulted in 4 KiB pages, about a million faults a step. ``THP_MEM_ALLOC_ENABLE=1``
makes PyTorch align large CPU allocations to 2 MiB and advise huge pages.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def child(steps: int, warmup: int, max_new_tokens: int) -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "experiments"))
    import dataclasses

    import torch

    import real_model
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.rewards import last_integer
    from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    s = dataclasses.replace(real_model.FULL, max_new_tokens=max_new_tokens)
    model, tok, template = real_model.load_model(s)
    train, _ = real_model.tasks(s, template)
    cfg = BridgeConfig(advantage="grpo", G=s.G, prompts_per_step=s.prompts_per_step, lr=s.lr, seed=0,
                       loss_aggregation=s.loss_aggregation, pass_k=(1, s.G))
    trainer = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True), train,
                            reward_fn=last_integer, config=cfg)
    for _ in range(warmup):
        trainer.step()
    rows = []
    for _ in range(steps):
        before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        row = trainer.step()
        after = resource.getrusage(resource.RUSAGE_SELF)
        rows.append({"step": time.perf_counter() - t0, "generate": row["time_generate"],
                     "forward": row["time_forward"], "backward": row["time_backward"],
                     "optimizer": row["time_optimizer"], "system": after.ru_stime - before.ru_stime,
                     "faults": after.ru_minflt - before.ru_minflt, "reward": row["reward_mean"],
                     "entropy": row["entropy"], "tokens": row["response_tokens"]})
    print("RESULT " + json.dumps(rows), flush=True)


def run_arm(thp: bool, steps: int, warmup: int, max_new_tokens: int) -> list[dict[str, float]]:
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    if thp:
        env["THP_MEM_ALLOC_ENABLE"] = "1"
    proc = subprocess.run([sys.executable, __file__, "--child", "--steps", str(steps), "--warmup", str(warmup),
                           "--max-new-tokens", str(max_new_tokens)], env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"the {'THP' if thp else 'default'} arm failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4, help="steps per process (default 4)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first, per process (default 1)")
    ap.add_argument("--rounds", type=int, default=2, help="processes per arm, alternating (default 2)")
    ap.add_argument("--max-new-tokens", type=int, default=12)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.rounds < 1 or args.steps * args.rounds < 2:
        ap.error("need --steps >= 1, --warmup >= 0, --rounds >= 1 and at least 2 timed steps per arm")
    if args.child:
        child(args.steps, args.warmup, args.max_new_tokens)
        return 0
    from tqdm.auto import tqdm

    arms: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    order = [thp for _ in range(args.rounds) for thp in (False, True)]
    for thp in tqdm(order, desc="processes", unit="proc"):
        arms[thp].append(run_arm(thp, args.steps, args.warmup, args.max_new_tokens))
    # the same seed, the same computation: every process's rewards and entropies must be identical
    runs = [r for thp in (False, True) for r in arms[thp]]
    same = all([x["reward"] for x in r] == [x["reward"] for x in runs[0]]
               and np.allclose([x["entropy"] for x in r], [x["entropy"] for x in runs[0]], rtol=0, atol=1e-6)
               for r in runs)
    print(f"SmolLM2 RL step, 8 prompts x 8 rollouts, up to {args.max_new_tokens} new tokens, {os.cpu_count()} "
          f"threads; {args.rounds} processes per arm x {args.steps} timed steps after {args.warmup} untimed, alternating")
    print(f"rewards and entropies identical in every process: {same}")
    print(f"{'':>12} {'default':>14} {'THP':>14} {'THP/default':>12}")
    means = {}
    for key in ("step", "generate", "forward", "backward", "optimizer", "system", "faults"):
        cells = []
        for thp in (False, True):
            values = np.array([x[key] for r in arms[thp] for x in r])
            means[(key, thp)] = values.mean()
            cells.append(f"{values.mean():8.1f} ± {values.std(ddof=1) / np.sqrt(len(values)):4.1f}"
                         if key != "faults" else f"{values.mean():14.0f}")
        print(f"{key:>12} {cells[0]:>14} {cells[1]:>14} {means[(key, True)] / means[(key, False)]:12.2f}")
    print("(seconds per step, mean ± standard error over steps; faults: minor page faults per step)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
