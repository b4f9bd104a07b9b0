#!/usr/bin/env bash
# GPU smoke test of the LLM bridge's vLLM backend: a few RL steps of a local model, with per-step timings
# (weight sync, vLLM generation, training), the step-0 beta-binomial fit and the predicted-vs-measured masses.
# Usage (on a GPU machine with vLLM and a local HF model directory, e.g. a 0.5B instruct model):
#     bash scripts/gpu_smoke.sh /path/to/local/model [steps] [figures_dir]
# Never run by CI. Needs: pip install -e ".[bridge]" vllm   (with a CUDA build of torch that vLLM accepts)
set -euo pipefail
MODEL="${1:?usage: gpu_smoke.sh MODEL_DIR [steps] [figures_dir]}"
STEPS="${2:-3}"
FIGURES="${3:-${OUT:-/tmp}/gpu_smoke_figures}"
cd "$(dirname "$0")/.."
python - <<'PY'
import torch
assert torch.cuda.is_available(), "gpu_smoke.sh needs a CUDA GPU"
import vllm
print(f"torch {torch.__version__}, vllm {vllm.__version__}, device {torch.cuda.get_device_name(0)}")
PY
start=$(date +%s)
python experiments/llm_bridge.py --model "$MODEL" --backend vllm --steps "$STEPS" --seeds 1 --G 8 \
    --prompts-per-step 16 --measure-prompts 32 --measure-samples 16 --max-new-tokens 16 --lr 1e-6 \
    --off-policy tis \
    --figures "$FIGURES"
echo "gpu_smoke: total $(( $(date +%s) - start ))s"
