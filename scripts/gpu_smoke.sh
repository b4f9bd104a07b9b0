#!/usr/bin/env bash
# GPU smoke run, written for the GPU machine this project can borrow (nvidia-h200: python 3.12 with torch 2.11
# + CUDA 13, transformers, jax with CUDA, pandas, scipy, sympy, matplotlib, hypothesis, tqdm; no vLLM, no
# array-api-compat, no package registry, at most 64 MiB carried with the source tree). Never run by CI.
#
# It runs from the source tree with that machine's packages (no `pip install -e`); the pure-Python wheels it
# lacks travel in the gitignored .whl/ folder, fetched beforehand on a machine with a registry:
#     bash scripts/gpu_smoke.sh --fetch-wheels
# and then, on the GPU machine (carry .whl):
#     bash scripts/gpu_smoke.sh [OUT_DIR]          # default: $OUT, else /tmp/gpu_smoke
# Steps, each timed:
#   1. builds a tiny GPT-2 checkpoint and its tokenizer locally (nothing can be downloaded there);
#   2. the LLM bridge on that checkpoint on the GPU (experiments/llm_bridge.py --model): vLLM rollouts when vLLM
#      imports, else transformers' generate (HFBackend) on the GPU;
#   3. the jax simulator's full sign-axis sweep (21 balances x 8 seeds x 512 prompts x G = 16 x 1000 steps) on
#      jax's default device (the GPU), as a second check.
# Rows and timings land in OUT_DIR: bridge.log, figures/, sweep.json, timings.txt. Budget: under 8 minutes.
# Sizes for a CPU dry run of the plumbing (tests/test_bridge.py): SMOKE_STEPS, SMOKE_SWEEP_STEPS,
# SMOKE_SWEEP_SEEDS, SMOKE_MEASURE_PROMPTS, and GPU_SMOKE_ALLOW_CPU=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

if [[ "${1:-}" == "--fetch-wheels" ]]; then
    mkdir -p .whl
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
        "array-api-compat==1.16.0"  # the version the CPU environment runs (pyproject: >=1.9,<2)
    ls -l .whl
    exit 0
fi

OUT_DIR="${1:-${OUT:-/tmp/gpu_smoke}}"
mkdir -p "$OUT_DIR"
STEPS="${SMOKE_STEPS:-20}"
SWEEP_STEPS="${SMOKE_SWEEP_STEPS:-1000}"
SWEEP_SEEDS="${SMOKE_SWEEP_SEEDS:-8}"
MEASURE_PROMPTS="${SMOKE_MEASURE_PROMPTS:-32}"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gpu_smoke_site \
        .whl/*.whl
    export PYTHONPATH="/tmp/gpu_smoke_site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
: > "$OUT_DIR/timings.txt"
stamp() { echo "$1 $2" | tee -a "$OUT_DIR/timings.txt"; }
start=$(date +%s)

python3 - "$OUT_DIR" <<'PY'
import os, sys
import torch
if not torch.cuda.is_available() and os.environ.get("GPU_SMOKE_ALLOW_CPU") != "1":
    raise SystemExit("gpu_smoke.sh needs a CUDA GPU (GPU_SMOKE_ALLOW_CPU=1 runs the plumbing on CPU)")
import jax, transformers
try:
    import vllm
    engine = f"vllm {vllm.__version__}"
except ImportError:
    engine = "no vLLM: HFBackend (transformers generate)"
device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
print(f"torch {torch.__version__}, transformers {transformers.__version__}, jax {jax.__version__} on "
      f"{jax.devices()[0].platform}, {engine}, device {device}")
# 1. a tiny GPT-2 checkpoint and its tokenizer, built here (nothing is downloaded)
from fadesim.bridge.tasks import ArithmeticTask
from fadesim.bridge.tokenizer import CharTokenizer
tok = CharTokenizer(ArithmeticTask().alphabet)
torch.manual_seed(0)
cfg = transformers.GPT2Config(vocab_size=tok.vocab_size, n_positions=32, n_embd=64, n_layer=2, n_head=2,
                              bos_token_id=1, eos_token_id=2, pad_token_id=0)
path = os.path.join(sys.argv[1], "tiny-gpt2")
transformers.GPT2LMHeadModel(cfg).save_pretrained(path)
tok.to_hf().save_pretrained(path)
print(f"checkpoint: {path}")
PY
stamp checkpoint "$(( $(date +%s) - start ))s"

# 2. the bridge on the GPU (vLLM when it imports, else transformers' generate)
BACKEND=hf
if python3 -c "import vllm" 2> /dev/null; then BACKEND=vllm; fi
t0=$(date +%s)
python3 experiments/llm_bridge.py --model "$OUT_DIR/tiny-gpt2" --backend "$BACKEND" --steps "$STEPS" --seeds 1 --G 8 \
    --prompts-per-step 16 --measure-prompts "$MEASURE_PROMPTS" --measure-samples 16 --max-new-tokens 3 --max-operand 9 --lr 1e-2 \
    --reward exact --off-policy tis --figures "$OUT_DIR/figures" 2>&1 | tee "$OUT_DIR/bridge.log"
stamp "bridge_$BACKEND" "$(( $(date +%s) - t0 ))s"

# 3. the simulator's full sign-axis sweep on jax's default device
t0=$(date +%s)
python3 - "$OUT_DIR" "$SWEEP_STEPS" "$SWEEP_SEEDS" <<'PY'
import json, sys, time
import jax
from benchmarks.simulator import BALANCES, bandit_task, sweep_config  # the benchmark's full sign-axis sweep
from fadesim.sim import simulate
out, steps, n_seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
task, cfg = bandit_task(), sweep_config(steps)
sweep = {"balance": BALANCES}
t = time.time(); simulate(task, cfg, seeds=list(range(n_seeds)), sweep=sweep); first = time.time() - t
t = time.time(); res = simulate(task, cfg, seeds=list(range(n_seeds)), sweep=sweep); run = time.time() - t
rollouts = 21 * n_seeds * 512 * 16 * steps
row = {"device": str(jax.devices()[0]), "devices": list(res.devices), "steps": steps, "seeds": n_seeds,
       "seconds_with_compile": first, "seconds": run, "rollouts_per_second": rollouts / run,
       "final_entropy_b-1": float(res.metrics["entropy"][0, :, -1].mean()),
       "final_entropy_b+1": float(res.metrics["entropy"][-1, :, -1].mean())}
json.dump(row, open(f"{out}/sweep.json", "w"), indent=1)
print(json.dumps(row))
PY
stamp sweep "$(( $(date +%s) - t0 ))s"
stamp total "$(( $(date +%s) - start ))s"
