#!/usr/bin/env bash
# GPU smoke test of the LLM bridge's vLLM backend: a few RL steps of a local model, with timings.
# Usage (on a GPU machine with vLLM and a local HF model directory):
#     bash scripts/gpu_smoke.sh /path/to/local/model [steps]
# Never run by CI. Needs: pip install -e ".[bridge]" vllm
set -euo pipefail
MODEL="${1:?usage: gpu_smoke.sh MODEL_DIR [steps]}"
STEPS="${2:-3}"
cd "$(dirname "$0")/.."
python - "$MODEL" "$STEPS" <<'PY'
import sys, time
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from fadesim.bridge.backends import VLLMBackend
from fadesim.bridge.tasks import ArithmeticTask
from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

model_dir, steps = sys.argv[1], int(sys.argv[2])
print(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}, device {torch.cuda.get_device_name(0)}")
hf_tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)

class Tok:  # the bridge's tokenizer interface over an HF tokenizer
    pad_token_id = hf_tok.pad_token_id or hf_tok.eos_token_id
    eos_token_id = hf_tok.eos_token_id
    def encode(self, text, bos=True):
        return hf_tok(text, add_special_tokens=bos)["input_ids"]
    def decode(self, ids):
        return hf_tok.decode(ids, skip_special_tokens=True)

t0 = time.time()
model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, torch_dtype=torch.bfloat16).cuda()
backend = VLLMBackend(model_dir, Tok(), max_new_tokens=8, gpu_memory_utilization=0.4)
print(f"load: {time.time() - t0:.1f}s")
trainer = BridgeTrainer(model, backend, ArithmeticTask(), config=BridgeConfig(G=8, prompts_per_step=16, lr=1e-6))
for step in range(steps):
    t = time.time()
    backend.sync_weights(model)
    t_sync = time.time() - t
    row = trainer.step()
    print(f"step {step}: sync {t_sync:.2f}s, step {time.time() - t - t_sync:.2f}s, reward {row['reward_mean']:.3f}, "
          f"entropy {row['entropy']:.3f}, M+ {row['positive_mass']:.3f}, M- {row['negative_mass']:.3f}")
PY
