"""How close a real-model RL step (SmolLM2-135M-Instruct on CPU) runs to this machine's matrix-product limit, measured
in one run.

    python benchmarks/real_model_step.py [--steps 4] [--warmup 1] [--max-new-tokens 8] [--preset paper]

The step is ``experiments/real_model.py``'s (the paper preset's task and settings by default: 8 prompts x 8
rollouts, the answer's start prefilled, AdamW, GRPO, seed 0; ``--max-new-tokens`` 8 as the issue states it). Each
timed step is run twice from the same state: first under a dispatch mode that records every matrix product the step
computes (``aten.mm``, ``addmm``, ``bmm``, ``baddbmm`` and CPU flash attention, forward and backward, with their
shapes and FLOPs, per phase: generation, learner forward, backward, optimizer), then, from the same model,
optimizer and random state restored, timed alone; the two runs must draw the same rollouts and rewards (checked).
Then every distinct recorded shape is timed bare (``torch.mm`` / ``torch.bmm`` on fresh tensors of that shape,
median of repeats), and the step's **matrix-product limit** is the sum of the bare times of its products: what the
step would take if it did nothing but its matrix products, each at the speed it reaches alone. Printed: the step's
FLOPs, its time, the limit, and their ratio (goal <= 1.5), per phase and in all; and the same ratio against the
best bare rate measured at any of the step's shapes (FLOPs / peak rate, a stricter reading).

Attention's FLOPs are 4 B H Lq Lk D forward (Q K^T and P V, causal masking not subtracted) and twice that backward;
its bare time is that of the two batched products of those shapes (and twice for backward).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

PHASES = ("generate", "forward", "backward", "optimizer")


def _mm_shape(func_name: str, args: tuple[Any, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """[(kind, shape)] of the matrix products one aten call computes: ("mm", (m, k, n)) or ("bmm", (b, m, k, n))."""
    if func_name in ("aten.mm.default",):
        a, b = args[0], args[1]
        return [("mm", (a.shape[0], a.shape[1], b.shape[1]))]
    if func_name == "aten.addmm.default":
        a, b = args[1], args[2]
        return [("mm", (a.shape[0], a.shape[1], b.shape[1]))]
    if func_name == "aten.bmm.default":
        a, b = args[0], args[1]
        return [("bmm", (a.shape[0], a.shape[1], a.shape[2], b.shape[2]))]
    if func_name == "aten.baddbmm.default":
        a, b = args[1], args[2]
        return [("bmm", (a.shape[0], a.shape[1], a.shape[2], b.shape[2]))]
    if func_name.startswith("aten._scaled_dot_product_flash_attention_for_cpu"):
        backward = "backward" in func_name
        q, k = (args[1], args[2]) if backward else (args[0], args[1])  # backward: (grad_out, q, k, v, ...)
        B, H, Lq, D = q.shape
        Lk = k.shape[2]
        pair = [("bmm", (B * H, Lq, D, Lk)), ("bmm", (B * H, Lq, Lk, D))]
        return pair * (2 if backward else 1)
    return []


def flops(kind: str, shape: tuple[int, ...]) -> float:
    if kind == "mm":
        m, k, n = shape
        return 2.0 * m * k * n
    b, m, k, n = shape
    return 2.0 * b * m * k * n


class MatmulRecorder(TorchDispatchMode):
    """Records every matrix product's (phase, kind, shape) while active."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "generate"
        self.calls: list[tuple[str, str, tuple[int, ...]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        for kind, shape in _mm_shape(str(func), args):
            self.calls.append((self.phase, kind, tuple(int(x) for x in shape)))
        return func(*args, **(kwargs or {}))


def bare_time(kind: str, shape: tuple[int, ...], repeats: int = 7) -> float:
    """Median seconds of one bare float32 product of this shape on fresh contiguous tensors."""
    if kind == "mm":
        m, k, n = shape
        a, b = torch.randn(m, k), torch.randn(k, n)
        op = lambda: torch.mm(a, b)  # noqa: E731
    else:
        bb, m, k, n = shape
        a, b = torch.randn(bb, m, k), torch.randn(bb, k, n)
        op = lambda: torch.bmm(a, b)  # noqa: E731
    op()
    inner = max(1, int(2e8 / max(flops(kind, shape), 1.0)))  # about 0.2 GFLOP per timing
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            op()
        times.append((time.perf_counter() - t0) / inner)
    return float(np.median(times))


def build(preset: str, max_new_tokens: int) -> Any:
    import real_model
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

    s = real_model.PRESETS[preset] if preset in real_model.PRESETS else real_model.FULL
    s = dataclasses.replace(s, max_new_tokens=max_new_tokens)
    model, tok, template = real_model.load_model(s)
    train, _ = real_model.tasks(s, template)
    cfg = BridgeConfig(advantage="grpo", G=s.G, prompts_per_step=s.prompts_per_step, lr=s.lr, seed=0,
                       loss_aggregation=s.loss_aggregation, pass_k=(1, s.G))
    return BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True), train,
                         reward_fn=s.reward_fn(), config=cfg)


def snapshot(trainer: Any) -> dict[str, Any]:
    return {"model": copy.deepcopy(trainer.model.state_dict()), "optimizer": copy.deepcopy(trainer.optimizer.state_dict()),
            "rng": copy.deepcopy(trainer.rng.bit_generator.state),
            "fields": {k: copy.deepcopy(getattr(trainer, k)) for k in ("step_count", "initial_entropy", "entropy_ema")}}


def restore(trainer: Any, snap: dict[str, Any]) -> None:
    trainer.model.load_state_dict(snap["model"])
    trainer.optimizer.load_state_dict(snap["optimizer"])
    trainer.rng.bit_generator.state = snap["rng"]
    for k, v in snap["fields"].items():
        setattr(trainer, k, v)
    trainer.history.pop()


def recorded_step(trainer: Any) -> tuple[dict[str, float], list[tuple[str, str, tuple[int, ...]]]]:
    """One step under the recorder, each matrix product tagged with the trainer's phase."""
    import fadesim.bridge.trainer as trainer_module

    rec = MatmulRecorder()
    backend_generate, logprobs = trainer.backend.generate, trainer_module.token_logprobs_and_entropy
    opt_step, backward = trainer.optimizer.step, torch.Tensor.backward

    def tagged(phase: str, fn: Any) -> Any:
        def run(*a: Any, **kw: Any) -> Any:
            rec.phase = phase
            return fn(*a, **kw)
        return run

    trainer.backend.generate = tagged("generate", backend_generate)
    trainer_module.token_logprobs_and_entropy = tagged("forward", logprobs)
    trainer.optimizer.step = tagged("optimizer", opt_step)
    torch.Tensor.backward = tagged("backward", backward)
    try:
        with rec:
            row = trainer.step()
    finally:
        trainer.backend.generate, trainer_module.token_logprobs_and_entropy = backend_generate, logprobs
        trainer.optimizer.step, torch.Tensor.backward = opt_step, backward
    return row, rec.calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4, help="timed steps (default 4)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first (default 1: AdamW's state)")
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--preset", default="paper", help="experiments/real_model.py's preset (default paper; 'full': FULL)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 0:
        ap.error("need --steps >= 1 and --warmup >= 0")
    from tqdm.auto import tqdm

    threads = max(1, os.cpu_count() or 1)
    torch.set_num_threads(threads)
    trainer = build(args.preset, args.max_new_tokens)
    for _ in range(args.warmup):
        trainer.step()
    timed, calls, same = [], [], True
    for _ in tqdm(range(args.steps), desc="steps (recorded, then timed)", unit="step"):
        snap = snapshot(trainer)
        row_rec, step_calls = recorded_step(trainer)
        restore(trainer, snap)
        t0 = time.perf_counter()
        row = trainer.step()
        row["time_step"] = time.perf_counter() - t0
        same &= row["reward_mean"] == row_rec["reward_mean"] and row["response_tokens"] == row_rec["response_tokens"]
        timed.append(row)
        calls.append(step_calls)
    shapes = sorted({(kind, shape) for step_calls in calls for _, kind, shape in step_calls})
    bare = {key: bare_time(*key) for key in tqdm(shapes, desc="bare products", unit="shape")}
    peak = max(flops(*key) / t for key, t in bare.items())
    per = defaultdict(lambda: {"flops": 0.0, "limit": 0.0, "time": 0.0})
    for row, step_calls in zip(timed, calls):
        for phase, kind, shape in step_calls:
            per[phase]["flops"] += flops(kind, shape) / len(timed)
            per[phase]["limit"] += bare[(kind, shape)] / len(timed)
        per["generate"]["time"] += row["time_generate"] / len(timed)
        per["forward"]["time"] += (row["time_score"] + row["time_forward"]) / len(timed)
        per["backward"]["time"] += row["time_backward"] / len(timed)
        per["optimizer"]["time"] += row["time_optimizer"] / len(timed)
    step_time = float(np.mean([r["time_step"] for r in timed]))
    total_flops = sum(p["flops"] for p in per.values())
    limit = sum(p["limit"] for p in per.values())
    print(f"SmolLM2 RL step ({args.preset} preset: 8 prompts x 8 rollouts, up to {args.max_new_tokens} new tokens, "
          f"GRPO, AdamW), {threads} threads, {args.steps} timed steps after {args.warmup} untimed; mean response "
          f"{np.mean([r['response_tokens'] for r in timed]) / 64:.1f} tokens")
    print(f"recorded and timed runs drew the same rollouts: {same}")
    print(f"{'phase':>10} {'GFLOP':>8} {'time s':>8} {'limit s':>8} {'time/limit':>10}")
    for phase in PHASES:
        p = per[phase]
        ratio = p["time"] / p["limit"] if p["limit"] else float("nan")
        print(f"{phase:>10} {p['flops'] / 1e9:8.1f} {p['time']:8.2f} {p['limit']:8.2f} {ratio:10.2f}")
    other = step_time - sum(per[p]["time"] for p in PHASES)
    print(f"{'other':>10} {'':>8} {other:8.2f}")
    print(f"{'step':>10} {total_flops / 1e9:8.1f} {step_time:8.2f} {limit:8.2f} {step_time / limit:10.2f}")
    print(f"bare float32 products: {len(shapes)} distinct shapes, {total_flops / limit / 1e9:.1f} GFLOPS at the step's "
          f"own shapes, best {peak / 1e9:.1f} GFLOPS; step time / (FLOPs / best rate) = "
          f"{step_time / (total_flops / peak):.2f}")
    print(f"RESULT step time / matrix-product limit = {step_time / limit:.2f} (goal <= 1.5)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
