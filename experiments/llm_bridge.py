"""LLM bridge: run fadesim advantages in a real LLM RL loop and check the simulator's predictions.

1. Measure the model's per-prompt pass rates at step 0 (many samples per prompt).
2. Fit the simulator to them: --quick, a bandit with one answer per vocabulary token whose initial
   distributions are the measured ones; --model, a Beta difficulty distribution fitted by beta-binomial
   maximum likelihood (fadesim.tasks.fit_beta), which also gives the exact expected masses M+ and M-.
3. Train the LLM and simulate the bandit with the same advantages, G, steps and optimizer family.
4. Print predicted vs measured entropy change (sign, and the ordering of advantages) a quarter and half way
   through training, and the mass profile per advantage.

    python experiments/llm_bridge.py                        # --quick: tiny random GPT-2 on CPU, copy task
    python experiments/llm_bridge.py --model DIR            # a local HF model, transformers sampling (CPU/GPU)
    python experiments/llm_bridge.py --model DIR --backend vllm   # vLLM rollouts on a GPU (scripts/gpu_smoke.sh)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

import fadesim
from fadesim.bridge.backends import HFBackend, VLLMBackend
from fadesim.bridge.pretrained import load_local, tiny_gpt2
from fadesim.bridge.rewards import reward_by_name, score
from fadesim.bridge.tasks import ArithmeticTask, CopyTask
from fadesim.bridge.tokenizer import CharTokenizer, HFTokenizer
from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer
from fadesim.experiment import verdict
from fadesim.plots import over_time_figure
from fadesim.sim import SimConfig, simulate
from fadesim.tasks import Bandit, fit_beta, make_bandit

ROOT = Path(__file__).resolve().parents[1]

ADVANTAGES = [("grpo", {}), ("w_reinforce", {"lam": 0.1}), ("psr", {})]


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
    model_args = ap.add_argument_group("--model runs")
    model_args.add_argument("--max-operand", type=int, default=99, help="arithmetic task: a + b, a, b <= this")
    model_args.add_argument("--max-new-tokens", type=int, default=16)
    model_args.add_argument("--prompts-per-step", type=int, default=16)
    model_args.add_argument("--lr", type=float, default=1e-6)
    model_args.add_argument("--measure-prompts", type=int, default=64, help="step-0 pass rates: prompts")
    model_args.add_argument("--measure-samples", type=int, default=16, help="step-0 pass rates: samples each")
    model_args.add_argument("--reward", default="auto", choices=["auto", "math", "exact"],
                            help="math: math-verify; exact: exact match; auto: math-verify if installed")
    model_args.add_argument("--max-sampler-gap", type=float, default=1e-3,
                            help="refuse a batch whose mean per-token |sampler - learner| log-prob gap exceeds this")
    model_args.add_argument("--off-policy", default="none", choices=["none", "tis"],
                            help="tis: train on off-policy batches (e.g. a bf16 vLLM engine) with truncated "
                                 "importance weights instead of refusing them")
    model_args.add_argument("--gpu-memory-utilization", type=float, default=0.3, help="vLLM's share of the GPU")
    model_args.add_argument("--vllm-dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"],
                            help="the vLLM engine's dtype (float32: sampler log-probs equal the learner's)")
    model_args.add_argument("--max-model-len", type=int, default=None, help="vLLM's max_model_len (prompt + response)")
    model_args.add_argument("--enforce-eager", action="store_true", help="vLLM without CUDA graphs (faster start)")
    args = ap.parse_args(argv)
    if args.backend == "vllm" and not args.model:
        raise SystemExit("llm_bridge: --backend vllm needs --model DIR (a local HF model directory)")
    if args.model:
        try:
            return run_model(args)
        except (ValueError, ImportError, RuntimeError) as err:  # bad settings, a missing package or engine
            print(f"llm_bridge: {err}" if not str(err).startswith("llm_bridge") else str(err), file=sys.stderr)
            return 2
    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    rows, summary = [], []
    for seed in range(args.seeds):
        base = tiny_gpt2(tok.vocab_size, seed)
        p0, counts = measure_pass_rates(base, tok, task, samples=256, seed=seed)
        correct = np.array([[tok.encode(c, bos=False)[0] == v for v in range(tok.vocab_size)] for c in task.symbols])
        bandit = fitted_bandit(counts, correct)
        for name, params in ADVANTAGES:
            model = tiny_gpt2(tok.vocab_size, seed)
            cfg = BridgeConfig(advantage=name, advantage_params=params, G=args.G, prompts_per_step=16, lr=1e-2,
                               seed=seed)
            trainer = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=cfg)
            measured = pd.DataFrame([trainer.step() for _ in tqdm(range(args.steps), leave=False,
                                                                  desc=f"{name} seed {seed}")])
            sim = simulate(bandit, SimConfig(advantage=name, advantage_params=params, G=args.G, steps=args.steps,
                                             log_every=1, optimizer="adam", lr=0.05), seeds=[seed]).to_frame()
            curves, row = compare_runs(measured, sim, label_of(name, params), seed)
            rows.extend(curves)
            summary.append({**row, "measured p0": float(p0.mean())})
    report(pd.DataFrame(summary), rows, title="LLM bridge: measured vs simulated entropy (tiny GPT-2, copy task)",
           path=Path(args.figures) / "llm_bridge_entropy_quick.png")
    return 0


def label_of(name: str, params: dict) -> str:
    return name + "".join(f"({k}={v})" for k, v in params.items())


def checkpoints(steps: int) -> list[int]:
    """The update counts at which runs are compared: a quarter and half way, before runs that collapse have
    all collapsed (the final entropy of collapsed runs cannot rank anything)."""
    return sorted({c for c in (steps // 4, steps // 2) if 1 <= c <= steps - 1} or {max(1, steps - 1)})


def compare_runs(measured: pd.DataFrame, sim: pd.DataFrame, label: str, seed: int) -> tuple[list, dict]:
    """Curves (LLM and simulation, tidy) and one summary row for an advantage and seed: the entropy change
    after c updates at each checkpoint c. The LLM's row k logs the entropy of the policy that sampled batch k
    (after k - 1 updates); the simulation's step c is after c updates."""
    curves = [frame[["step", "entropy", "reward_mean", "positive_mass", "negative_mass"]]
              .assign(source=source, advantage=label, seed=seed)
              for source, frame in (("LLM", measured), ("simulation", sim[sim.step > 0]))]
    h_llm = measured.set_index("step").entropy
    h_sim = sim.set_index("step").entropy
    row = {"advantage": label, "seed": seed,
           "M+ LLM": measured.positive_mass.mean(), "M+ sim": sim.positive_mass.mean(),
           "M- LLM": measured.negative_mass.mean(), "M- sim": sim.negative_mass.mean()}
    for c in checkpoints(len(measured)):
        row[f"dH@{c} LLM"] = h_llm[c + 1] - h_llm[1]
        row[f"dH@{c} sim"] = h_sim[c] - h_sim[0]
    return curves, row


def report(table: pd.DataFrame, rows: list, *, title: str, path: Path) -> Path:
    """Print the summary and the entropy verdicts at each checkpoint; write the measured-vs-simulated entropy
    figure."""
    print(table.to_string(index=False, float_format=lambda v: f"{v:8.3f}"))
    rung = "[toy bandit rung (adam) -> LLM bridge rung (AdamW)]"
    for c in sorted({int(col.split("@")[1].split()[0]) for col in table.columns if col.startswith("dH@")}):
        llm, sim = f"dH@{c} LLM", f"dH@{c} sim"
        agree = np.sign(table[llm]) == np.sign(table[sim])
        by_adv = table.groupby("advantage")[[llm, sim]].mean()
        order_llm, order_sim = list(by_adv[llm].sort_values().index), list(by_adv[sim].sort_values().index)
        print(f"{rung} simulation predicts the sign of the entropy change after {c} updates: "
              f"{verdict(bool(agree.all()))} ({int(agree.sum())}/{len(agree)} runs agree)")
        print(f"{rung} simulation predicts the ordering of advantages by entropy change after {c} updates: "
              f"{verdict(order_llm == order_sim)} (LLM: {' < '.join(order_llm)}; simulation: {' < '.join(order_sim)})")
    curves = pd.concat(rows, ignore_index=True)
    curves["source"] = curves.source.replace({"LLM": "LLM (measured)", "simulation": "bandit (simulated)"})
    out = over_time_figure(curves, metric="entropy", label="entropy (nats; LLM: per token)", line="source",
                           line_label="curve", facet="advantage", title=title, path=path)
    print(f"figure: {out}")
    return out


# --------------------------------------------------------------------------------------------------------------
# --model DIR: a real (local) model on the arithmetic task


def measure_counts(backend, model, task, reward_fn, *, prompts: int, samples: int, seed: int,
                   chunk: int = 8) -> np.ndarray:
    """(prompts, samples) 0/1 rewards of the step-0 model on fixed arithmetic problems."""
    if hasattr(backend, "sync_weights"):
        backend.sync_weights(model)
    problems = task.sample(np.random.default_rng(10_000 + seed), prompts)
    out = []
    for i in tqdm(range(0, prompts, chunk), desc="step-0 pass rates", leave=False):
        part = problems[i:i + chunk]
        ro = backend.generate([p.prompt for p in part], n=samples, seed=seed * 7919 + i)
        ro.validate()
        answers = [p.answer for p in part for _ in range(samples)]
        out.append(np.array(score(ro.completions, answers, reward_fn)).reshape(len(part), samples))
    return (np.concatenate(out) > 0.5).astype(float)


def realised_masses(name: str, params: dict, correct: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-group M+ and M- of the advantage on the step-0 samples cut into groups of G."""
    groups = correct.reshape(-1, G)
    d = fadesim.decompose(fadesim.get(name, **params)(groups), groups)
    return np.asarray(d.positive_mass), np.asarray(d.negative_mass)


def run_model(args: argparse.Namespace) -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.measure_samples % args.G:
        raise ValueError(f"llm_bridge: --measure-samples ({args.measure_samples}) must be a multiple of --G "
                         f"({args.G}) so step-0 samples form groups")
    tok = HFTokenizer.from_pretrained(args.model)
    reward_fn, reward_name = reward_by_name(args.reward)
    task = ArithmeticTask(max_operand=args.max_operand)
    t0 = time.perf_counter()
    model = load_local(args.model, device)
    if args.backend == "vllm":
        try:
            backend = VLLMBackend(args.model, tok, max_new_tokens=args.max_new_tokens,
                                  gpu_memory_utilization=args.gpu_memory_utilization, dtype=args.vllm_dtype,
                                  max_model_len=args.max_model_len, enforce_eager=args.enforce_eager)
        except (ImportError, RuntimeError) as err:
            raise RuntimeError(f"llm_bridge: {err}") from err
        make_backend = lambda m: backend  # noqa: E731 - one engine, synced from each fresh model every step
    else:
        # min_new_tokens=0: sample from the model itself (an immediate eos is an empty, wrong completion)
        make_backend = lambda m: HFBackend(m, tok, max_new_tokens=args.max_new_tokens, min_new_tokens=0)  # noqa: E731 - one line, as the vllm branch's
    print(f"model {args.model} on {device}, backend {args.backend}, reward {reward_name}, "
          f"load {time.perf_counter() - t0:.1f}s")
    t0 = time.perf_counter()
    correct = measure_counts(make_backend(model), model, task, reward_fn, prompts=args.measure_prompts,
                             samples=args.measure_samples, seed=0)
    k = correct.sum(axis=1)
    fit = fit_beta(k, args.measure_samples)
    print(f"step 0: {args.measure_prompts} prompts x {args.measure_samples} samples in "
          f"{time.perf_counter() - t0:.1f}s; mean pass rate {k.mean() / args.measure_samples:.3f}; "
          f"fitted difficulty Beta(a={fit.a:.3g}, b={fit.b:.3g}) (beta-binomial maximum likelihood)")
    bandit = make_bandit(n_prompts=128, difficulty=fit, seed=0)
    mass_rows, rows, summary = [], [], []
    for name, params in ADVANTAGES:
        label = label_of(name, params)
        exact = fadesim.profile(name, args.G, **params).under_beta(fit.a, fit.b)
        pos, neg = realised_masses(name, params, correct, args.G)
        se = np.array([pos.std(ddof=1), neg.std(ddof=1)]) / np.sqrt(len(pos)) if len(pos) > 1 else np.zeros(2)
        within = (abs(pos.mean() - exact.positive_mass) <= 4 * se[0] + 1e-9 and
                  abs(neg.mean() - exact.negative_mass) <= 4 * se[1] + 1e-9)
        mass_rows.append({"advantage": label, "E[M+] fitted": exact.positive_mass, "M+ step 0": pos.mean(),
                          "E[M-] fitted": exact.negative_mass, "M- step 0": neg.mean(), "within 4 SE": within})
        for seed in range(args.seeds):
            model = load_local(args.model, device)
            cfg = BridgeConfig(advantage=name, advantage_params=params, G=args.G, lr=args.lr, seed=seed,
                               max_sampler_logprob_gap=args.max_sampler_gap,
                               off_policy=None if args.off_policy == "none" else args.off_policy,
                               prompts_per_step=args.prompts_per_step)
            trainer = BridgeTrainer(model, make_backend(model), task, reward_fn=reward_fn, config=cfg)
            steps = []
            for _ in tqdm(range(args.steps), desc=f"{label} seed {seed}", leave=False):
                r = trainer.step()
                steps.append(r)
                print(f"  {label} seed {seed} step {r['step']}: sync {r['time_sync']:.2f}s generate "
                      f"{r['time_generate']:.2f}s train {r['time_train']:.2f}s | reward {r['reward_mean']:.3f} "
                      f"entropy {r['entropy']:.3f} M+ {r['positive_mass']:.3f} M- {r['negative_mass']:.3f} "
                      f"sampler gap {r.get('sampler_logprob_gap', float('nan')):.2e}", flush=True)
            sim = simulate(bandit, SimConfig(advantage=name, advantage_params=params, G=args.G, steps=args.steps,
                                             log_every=1, optimizer="adam", lr=0.05), seeds=[seed]).to_frame()
            curves, row = compare_runs(pd.DataFrame(steps), sim, label, seed)
            rows.extend(curves)
            summary.append(row)
            del model, trainer
    masses = pd.DataFrame(mass_rows)
    print(masses.to_string(index=False, float_format=lambda v: f"{v:8.3f}"))
    print(f"exact masses under the fitted Beta predict the step-0 masses (4 SE): "
          f"{verdict(bool(masses['within 4 SE'].all()))}")
    model_name = Path(args.model.rstrip("/")).name
    report(pd.DataFrame(summary), rows, title=f"LLM bridge: measured vs simulated entropy ({model_name}, arithmetic)",
           path=Path(args.figures) / f"llm_bridge_entropy_{args.backend}.png")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
