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
#   1. builds a tiny GPT-2 checkpoint and its tokenizer locally (nothing can be downloaded there) and warms it up
#      by supervised training on the arithmetic task (SMOKE_SFT_STEPS, default 100: on CPU that takes the exact
#      mean pass@1 over the 100 problems a+b, a, b < 10, from 0.002 to about 0.27), so that RL has a signal;
#   2. the LLM bridge on that checkpoint on the GPU (experiments/llm_bridge.py --model): vLLM rollouts when vLLM
#      imports, else transformers' generate (HFBackend) on the GPU;
#   3. the ladder's GPU rung: experiments/ladder.py --rungs gpt2 --model CHECKPOINT (the GPT-2 rung predicts the
#      model rung), the model rung trained on the GPU with the sampler the bridge step used;
#   4. the jax simulator's full sign-axis sweep (21 balances x 8 seeds x 512 prompts x G = 16 x 1000 steps) on
#      jax's default device (the GPU), as a second check;
#   5. the device contract (tests/test_check_device.py): every registered advantage on CUDA tensors keeps the
#      device and the CPU's values, and a planted numpy detour is caught (its tests skip where there is no GPU).
# Rows and timings land in OUT_DIR: checkpoint.log, bridge.log, figures/, ladder.log, ladder/, sweep.json,
# device_check.log, timings.txt.
# Budget: under 8 minutes. Sizes for a CPU dry run of the plumbing (tests/test_bridge.py): SMOKE_SFT_STEPS,
# SMOKE_STEPS, SMOKE_LADDER_STEPS, SMOKE_SWEEP_STEPS, SMOKE_SWEEP_SEEDS, SMOKE_MEASURE_PROMPTS, and
# GPU_SMOKE_ALLOW_CPU=1.
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
SFT_STEPS="${SMOKE_SFT_STEPS:-100}"
LADDER_STEPS="${SMOKE_LADDER_STEPS:-40}"
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

(python3 - "$OUT_DIR" "$SFT_STEPS" <<'PY'
import os, sys
import numpy as np
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
# 1. a tiny GPT-2 checkpoint and its tokenizer, built here (nothing is downloaded), warmed up by supervised
# training on the arithmetic task so that its pass rates are neither 0 nor 1
from fadesim.bridge.tasks import ArithmeticTask, Problem
from fadesim.bridge.tokenizer import CharTokenizer
task = ArithmeticTask()
tok = CharTokenizer(task.alphabet)
torch.manual_seed(0)
cfg = transformers.GPT2Config(vocab_size=tok.vocab_size, n_positions=32, n_embd=64, n_layer=2, n_head=2,
                              bos_token_id=1, eos_token_id=2, pad_token_id=0)
model = transformers.GPT2LMHeadModel(cfg).to("cuda" if torch.cuda.is_available() else "cpu")


def batch(problems):  # prompt, answer, eos; the loss only on the answer and eos (labels -100 elsewhere)
    seqs = [tok.encode(p.prompt) + tok.encode(p.answer, bos=False) + [tok.eos_token_id] for p in problems]
    ids = torch.full((len(seqs), max(map(len, seqs))), tok.pad_token_id)
    labels = torch.full_like(ids, -100)
    for i, (p, s) in enumerate(zip(problems, seqs)):
        k = len(tok.encode(p.prompt))
        ids[i, :len(s)], labels[i, k:len(s)] = torch.tensor(s), torch.tensor(s[k:])
    return ids.to(model.device), labels.to(model.device), (ids != tok.pad_token_id).to(model.device)


every = [Problem(f"{a}+{b}=", str(a + b)) for a in range(task.max_operand + 1) for b in range(task.max_operand + 1)]


def exact_pass_at_1():  # mean over every problem of P(answer + eos | prompt) at temperature 1: exact, not sampled
    ids, labels, mask = batch(every)
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits[:, :-1].float(), -1)
    target = labels[:, 1:]
    token = logp.gather(-1, target.clamp(min=0)[..., None])[..., 0]
    return float(torch.where(target != -100, token, 0.0).sum(1).exp().mean())


before = exact_pass_at_1()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
rng = np.random.default_rng(0)
for _ in range(int(sys.argv[2])):
    ids, labels, mask = batch(task.sample(rng, 128))
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"supervised warm-up, {sys.argv[2]} steps of 128 problems: exact mean pass@1 {before:.4f} -> "
      f"{exact_pass_at_1():.4f}")
path = os.path.join(sys.argv[1], "tiny-gpt2")
model.cpu().save_pretrained(path)
tok.to_hf().save_pretrained(path)
print(f"checkpoint: {path}")
PY
) 2>&1 | tee "$OUT_DIR/checkpoint.log"
stamp checkpoint "$(( $(date +%s) - start ))s"

# 2. the bridge on the GPU (vLLM when it imports, else transformers' generate)
BACKEND=hf
if python3 -c "import vllm" 2> /dev/null; then BACKEND=vllm; fi
t0=$(date +%s)
python3 experiments/llm_bridge.py --model "$OUT_DIR/tiny-gpt2" --backend "$BACKEND" --steps "$STEPS" --seeds 1 --G 8 \
    --prompts-per-step 16 --measure-prompts "$MEASURE_PROMPTS" --measure-samples 16 --max-new-tokens 3 --max-operand 9 --lr 1e-2 \
    --reward exact --off-policy tis --figures "$OUT_DIR/figures" --out "$OUT_DIR/results/llm_bridge" 2>&1 | tee "$OUT_DIR/bridge.log"
stamp "bridge_$BACKEND" "$(( $(date +%s) - t0 ))s"

# 3. the ladder's GPU rung: the GPT-2 rung (CPU) predicts the model rung, this checkpoint trained on the GPU with
# the sampler of step 2 (the learning rate is the warm-up's; the model rung's default, 1e-6, is for real models)
t0=$(date +%s)
python3 experiments/ladder.py --rungs gpt2 --gpt2-steps "$LADDER_STEPS" --model "$OUT_DIR/tiny-gpt2" \
    --model-backend "$BACKEND" --model-steps "$LADDER_STEPS" --model-lr 3e-3 --model-max-operand 9 \
    --model-max-new-tokens 3 --model-reward exact --out "$OUT_DIR/ladder_results" --figures "$OUT_DIR/ladder" 2>&1 \
    | tee "$OUT_DIR/ladder.log"
stamp "ladder_$BACKEND" "$(( $(date +%s) - t0 ))s"

# 4. the simulator's full sign-axis sweep on jax's default device
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

# 5. the device contract on the GPU
t0=$(date +%s)
python3 -m pytest -p no:cacheprovider -n 0 -q -rA tests/test_check_device.py 2>&1 | tee "$OUT_DIR/device_check.log"
stamp device_check "$(( $(date +%s) - t0 ))s"
stamp total "$(( $(date +%s) - start ))s"
