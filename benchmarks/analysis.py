"""Time ``fadesim analyze`` on a generated run of 1M rollouts, as a CSV, a JSONL and a Parquet table, side by side.

    python benchmarks/analysis.py [--steps 125] [--prompts 1000] [--G 8] [--compare focal,psr] [--formats csv,parquet]

The run: ``--steps`` steps, each drawing ``--prompts`` prompts with ``--G`` rollouts (125 x 1000 x 8 = 1M rows),
each prompt's pass rate starting from Beta(0.6, 1.2) and rising by a prompt-specific rate, rewards 0/1, and the
run's own GRPO advantages in an ``advantage`` column (as TRL logs them). The tables are written in chunks to a
temporary folder (never held in memory whole), then each is analysed end to end (reading, grouping, the run's
masses and those of ``--compare``, prompt tracking, the forecast, the figure and the report), timed by wall clock
after a first call on a 2-step run (imports, the figure backend, the forecast's jit compilation, timed and printed
apart). The forecast compiles once per run length, so the first format timed also carries that compilation
(about 10 s on 2 cores); the others reuse it.
Prints seconds, rollouts per second, the ratio of each format to CSV, and the peak resident memory of the process,
so the streaming claim (memory of one step, not of the run) can be read off against the table's size.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fadesim
from fadesim.apps.analysis import analyze

FORMATS = ("csv", "jsonl", "parquet")


def generate(folder: Path, steps: int, prompts: int, G: int, formats: list[str], seed: int = 0) -> dict[str, Path]:
    """Write the run, one step at a time, to folder/run.{csv,jsonl,parquet}; returns the paths."""
    rng = np.random.default_rng(seed)
    p0 = rng.beta(0.6, 1.2, size=prompts)
    rate = rng.uniform(0.0, 0.03, size=prompts)
    grpo = fadesim.get("grpo")
    paths = {fmt: folder / f"run.{fmt}" for fmt in formats}
    writer = None
    try:
        for step in range(1, steps + 1):
            p = 1.0 - (1.0 - p0) * np.exp(-rate * step)
            rewards = (rng.random((prompts, G)) < p[:, None]).astype(float)
            frame = pd.DataFrame({"step": step, "prompt": np.repeat([f"p{i}" for i in range(prompts)], G),
                                  "reward": rewards.ravel(), "advantage": np.asarray(grpo(rewards)).ravel()})
            if "csv" in paths:
                frame.to_csv(paths["csv"], mode="a", header=step == 1, index=False)
            if "jsonl" in paths:
                with open(paths["jsonl"], "a") as fh:
                    frame.to_json(fh, orient="records", lines=True)
            if "parquet" in paths:
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(frame, preserve_index=False)
                writer = writer or pq.ParquetWriter(paths["parquet"], table.schema)
                writer.write_table(table)  # one row group per step
    finally:
        if writer is not None:
            writer.close()
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=125)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--G", type=int, default=8)
    ap.add_argument("--compare", default="focal,psr")
    ap.add_argument("--formats", default="csv,jsonl,parquet")
    args = ap.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    if set(formats) - set(FORMATS):
        ap.error(f"--formats: choose from {', '.join(FORMATS)}")
    n = args.steps * args.prompts * args.G
    folder = Path(tempfile.mkdtemp(prefix="fadesim-analysis-bench-"))
    try:
        t0 = time.perf_counter()
        paths = generate(folder, args.steps, args.prompts, args.G, formats)
        print(f"generated {n:,} rollouts ({args.steps} steps x {args.prompts} prompts x G = {args.G}) in "
              f"{time.perf_counter() - t0:.1f}s: " + ", ".join(f"{fmt} {paths[fmt].stat().st_size / 2**20:.0f} MiB"
                                                            for fmt in formats))
        # one-time start-up (imports, the forecast's jit compilation), timed apart on a 2-step run
        (folder / "warm").mkdir()
        small = generate(folder / "warm", 2, 50, args.G, formats[:1])
        t0 = time.perf_counter()
        analyze(small[formats[0]], folder / "out_warm", compare=args.compare, progress=False)
        print(f"start-up (first call: imports, jit compilation for 2 steps), on 2 steps: {time.perf_counter() - t0:.1f}s")
        seconds = {}
        for fmt in formats:
            t0 = time.perf_counter()
            result = analyze(paths[fmt], folder / f"out_{fmt}", compare=args.compare, progress=False)
            seconds[fmt] = time.perf_counter() - t0
            assert result["steps"].step.nunique() == args.steps
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
            print(f"analyze {fmt:8s} {seconds[fmt]:7.1f}s  {n / seconds[fmt]:>10,.0f} rollouts/s  "
                  f"(x{seconds[fmt] / seconds[formats[0]]:.2f} of {formats[0]})  peak RSS so far {peak:.0f} MiB")
        print(f"target: {n:,} rollouts in under 60 s: "
              + ", ".join(f"{fmt} {'met' if t < 60 else 'NOT met'}" for fmt, t in seconds.items()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
