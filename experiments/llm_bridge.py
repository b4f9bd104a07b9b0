"""LLM bridge: run fadesim advantages in a real (tiny) LLM RL loop and check the simulator's predictions.

1. Measure the model's per-prompt pass rates at step 0 (many samples per prompt).
2. Fit the simulator: a bandit with one answer per vocabulary token, one of them correct, initial pass
   rates = the measured ones (Empirical difficulty distribution).
3. Train the LLM and simulate the bandit with the same advantages, G, steps and optimizer family.
4. Print predicted vs measured entropy drift (sign and size) and mass profile per advantage.

    python experiments/llm_bridge.py                      # --quick: tiny random GPT-2 on CPU, copy task
    python experiments/llm_bridge.py --model PATH --backend vllm   # a real model on a GPU (not run by CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fadesim.bridge.backends import HFBackend  # noqa: E402
from fadesim.bridge.tasks import CopyTask  # noqa: E402
from fadesim.bridge.tokenizer import CharTokenizer  # noqa: E402
from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer  # noqa: E402
from fadesim.experiment import verdict  # noqa: E402
from fadesim.plots import over_time_figure  # noqa: E402
from fadesim.sim import SimConfig, simulate  # noqa: E402
from fadesim.tasks import Bandit  # noqa: E402

ADVANTAGES = [("grpo", {}), ("w_reinforce", {"lam": 0.1}), ("psr", {})]


def tiny_model(vocab_size: int, seed: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=0))


def measure_pass_rates(model, tok, task: CopyTask, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt symbol: pass rate over ``samples`` one-token completions, and the token distribution."""
    backend = HFBackend(model, tok, max_new_tokens=1)
    prompts = [f"{c}=" for c in task.symbols]
    ro = backend.generate(prompts, n=samples, seed=seed)
    tokens = ro.response_ids[:, 0].numpy().reshape(len(prompts), samples)
    counts = np.stack([np.bincount(row, minlength=tok.vocab_size) for row in tokens]) / samples
    correct = np.array([[tok.encode(c, bos=False)[0] == v for v in range(tok.vocab_size)] for c in task.symbols])
    return (counts * correct).sum(axis=1), counts


def fitted_bandit(counts: np.ndarray, correct: np.ndarray) -> Bandit:
    """The simulator's fit: each prompt's measured next-token distribution (smoothed) as bandit logits."""
    probs = (counts + 1e-3) / (counts + 1e-3).sum(axis=1, keepdims=True)
    logits = np.log(probs)
    return Bandit(logits0=logits - logits.mean(axis=1, keepdims=True), correct=correct)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny random GPT-2 on CPU (default)")
    ap.add_argument("--model", help="a local model path (with --backend vllm on a GPU)")
    ap.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--G", type=int, default=8)
    ap.add_argument("--figures", default=str(ROOT / "paper_figures"))
    args = ap.parse_args(argv)
    if args.model or args.backend == "vllm":
        raise SystemExit("llm_bridge: --model/--backend vllm need a GPU machine with vLLM and a local model; "
                         "see scripts/gpu_smoke.sh. This CPU run uses the tiny random model.")
    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    rows, summary = [], []
    for seed in range(args.seeds):
        base = tiny_model(tok.vocab_size, seed)
        p0, counts = measure_pass_rates(base, tok, task, samples=256, seed=seed)
        correct = np.array([[tok.encode(c, bos=False)[0] == v for v in range(tok.vocab_size)] for c in task.symbols])
        bandit = fitted_bandit(counts, correct)
        for name, params in ADVANTAGES:
            model = tiny_model(tok.vocab_size, seed)
            cfg = BridgeConfig(advantage=name, advantage_params=params, G=args.G, prompts_per_step=16, lr=1e-2,
                               seed=seed)
            trainer = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=cfg)
            measured = pd.DataFrame([trainer.step() for _ in range(args.steps)])
            sim = simulate(bandit, SimConfig(advantage=name, advantage_params=params, G=args.G, steps=args.steps,
                                             log_every=1, optimizer="adam", lr=0.05), seeds=[seed]).to_frame()
            label = name + "".join(f"({k}={v})" for k, v in params.items())
            for source, frame in (("LLM", measured), ("simulation", sim[sim.step > 0])):
                rows.append(frame[["step", "entropy", "reward_mean", "positive_mass", "negative_mass"]]
                            .assign(source=source, advantage=label, seed=seed))
            h_sim = sim.entropy.values
            summary.append({"advantage": label, "seed": seed, "measured p0": float(p0.mean()),
                            "entropy drift LLM": measured.entropy.iloc[-1] - measured.entropy.iloc[0],
                            "entropy drift sim": h_sim[-1] - h_sim[0],
                            "M+ LLM": measured.positive_mass.mean(), "M+ sim": sim.positive_mass.mean(),
                            "M- LLM": measured.negative_mass.mean(), "M- sim": sim.negative_mass.mean()})
    table = pd.DataFrame(summary)
    print(table.to_string(index=False, float_format=lambda v: f"{v:8.3f}"))
    agree = np.sign(table["entropy drift LLM"]) == np.sign(table["entropy drift sim"])
    by_adv = table.groupby("advantage")[["entropy drift LLM", "entropy drift sim"]].mean()
    order_llm = list(by_adv["entropy drift LLM"].sort_values().index)
    order_sim = list(by_adv["entropy drift sim"].sort_values().index)
    print(f"simulation predicts the sign of the entropy drift: {verdict(bool(agree.all()))} "
          f"({int(agree.sum())}/{len(agree)} runs agree)")
    print(f"simulation predicts the ordering of entropy drift across advantages: {verdict(order_llm == order_sim)} "
          f"(LLM: {' < '.join(order_llm)}; simulation: {' < '.join(order_sim)})")
    curves = pd.concat(rows, ignore_index=True)
    curves["line"] = (curves.source == "LLM").astype(float)
    path = over_time_figure(curves, metric="entropy", label="token entropy (nats)", line="line",
                            line_label="LLM (1) vs simulation (0)", facet="advantage",
                            title="LLM bridge: measured vs simulated entropy (tiny GPT-2, copy task)",
                            path=Path(args.figures) / "llm_bridge_entropy_quick.png")
    print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
