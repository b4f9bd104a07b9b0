"""LLM bridge: run fadesim advantages in a real LLM RL loop and check the simulator's predictions.

1. Measure the model's per-prompt pass rates at step 0 (many samples per prompt).
2. Fit the simulator to them: the default model ("tiny", a random 2-layer GPT-2 on the copy task), a bandit with
   one answer per vocabulary token whose initial distributions are the measured ones; ``--model DIR`` (a local HF
   model on the arithmetic task), a Beta difficulty distribution fitted by beta-binomial maximum likelihood
   (fadesim.tasks.fit_beta), which also gives the exact expected masses M+ and M-.
3. Train the LLM and simulate the bandit with the same advantages, G, steps and optimizer family.
4. Print predicted vs measured entropy change (sign, and the ordering of advantages) a quarter and half way
   through training, and the mass profile per advantage.

Units: the step-0 measurement and each (advantage, seed) run (the LLM's steps and the simulated bandit's, side by
side) are stored as they finish (``--out``), so an interrupted sweep resumes at the next unfinished run; a unit is
reused only under the same settings and the same model files.

    python experiments/llm_bridge.py                        # --quick: tiny random GPT-2 on CPU, copy task
    python experiments/llm_bridge.py --full                 # the same with 4 seeds and 120 steps
    python experiments/llm_bridge.py --model DIR            # a local HF model, transformers sampling (CPU/GPU)
    python experiments/llm_bridge.py --model DIR --backend vllm   # vLLM rollouts on a GPU (scripts/gpu_smoke.sh)
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

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
from fadesim.lab.settings import parse_settings
from fadesim.lab.stats import verdict
from fadesim.lab.units import Executor, executor_from_args, run_units
from fadesim.lab.plots import over_time_figure
from fadesim.lab.results import ResultStore, unit_key, write_atomic
from fadesim.sim import SimConfig, simulate
from fadesim.tasks import Bandit, fit_beta, make_bandit

ROOT = Path(__file__).resolve().parents[1]

BACKENDS = ("hf", "vllm")
OFF_POLICY = ("none", "tis")
VLLM_DTYPES = ("bfloat16", "float16", "float32")
REWARDS = ("auto", "math", "exact")


@dataclass(frozen=True)
class Settings:
    model: str = "tiny"  # "tiny" (a random 2-layer GPT-2, copy task) or a local HF model directory (arithmetic)
    backend: str = "hf"  # hf (transformers' generate) or vllm (a GPU)
    steps: int = 60
    seeds: int = 2
    G: int = 8
    # the tiny copy task
    tiny_prompts_per_step: int = 16
    tiny_lr: float = 1e-2
    tiny_measure_samples: int = 256  # step-0 samples per prompt symbol
    sim_lr: float = 0.05  # the simulated bandit's (adam)
    # --model runs
    max_operand: int = 99  # arithmetic task: a + b, a, b <= this
    max_new_tokens: int = 16
    prompts_per_step: int = 16
    lr: float = 1e-6
    measure_prompts: int = 64  # step-0 pass rates: prompts
    measure_samples: int = 16  # step-0 pass rates: samples each (a multiple of G: they form groups)
    reward: str = "auto"  # math: math-verify; exact: exact match; auto: math-verify if installed
    max_sampler_gap: float = 1e-3  # refuse a batch whose mean per-token |sampler - learner| log-prob gap exceeds it
    off_policy: str = "none"  # tis: train on off-policy batches (e.g. bf16 vLLM) with truncated importance weights
    gpu_memory_utilization: float = 0.3  # vLLM's share of the GPU
    vllm_dtype: str = "bfloat16"  # the vLLM engine's dtype (float32: sampler log-probs equal the learner's)
    max_model_len: int = 0  # vLLM's max_model_len (prompt + response); 0: vLLM's default
    enforce_eager: bool = False  # vLLM without CUDA graphs (faster start)

    def __post_init__(self) -> None:
        for name, value, known in (("backend", self.backend, BACKENDS), ("off_policy", self.off_policy, OFF_POLICY),
                                   ("vllm_dtype", self.vllm_dtype, VLLM_DTYPES), ("reward", self.reward, REWARDS)):
            if value not in known:
                raise ValueError(f"llm_bridge: --{name.replace('_', '-')} must be one of {', '.join(known)}; "
                                 f"got {value!r}")
        if self.backend == "vllm" and self.model == "tiny":
            raise ValueError("llm_bridge: --backend vllm needs --model DIR (a local HF model directory)")
        if self.model != "tiny" and self.measure_samples % self.G:
            raise ValueError(f"llm_bridge: --measure-samples ({self.measure_samples}) must be a multiple of --G "
                             f"({self.G}) so step-0 samples form groups")


QUICK = Settings()
FULL = Settings(steps=120, seeds=4)

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


def report(table: pd.DataFrame, rows: list, *, title: str, path: Path | None) -> Path | None:
    """Print the summary and the entropy verdicts at each checkpoint; write the measured-vs-simulated entropy
    figure (none when ``path`` is None)."""
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
    if path is None:
        return None
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


def model_fingerprint(model: str) -> str:
    """"tiny", or a digest of the model directory's file names, sizes and modification times: a unit computed on
    other weights is not reused (a copied or touched checkpoint is recomputed, never a stale one read)."""
    if model == "tiny":
        return model
    root = Path(model)
    if not root.is_dir():
        raise ValueError(f"llm_bridge: --model {model!r} is not a directory (a local HF model: config.json, weights, "
                         f"tokenizer files)")
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        st = path.stat()
        h.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def identity(s: Settings) -> dict[str, Any]:
    """What a unit's numbers depend on: every setting but the seed count, and the model's files."""
    return {**{k: v for k, v in dataclasses.asdict(s).items() if k != "seeds"},
            "model_files": model_fingerprint(s.model)}


def run_frame(measured: pd.DataFrame, sim: pd.DataFrame) -> pd.DataFrame:
    """One run's unit: the LLM's logged steps and the simulated bandit's, stacked with a ``source`` column."""
    return pd.concat([measured.assign(source="LLM"), sim.assign(source="simulation")], ignore_index=True)


def split_run(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(measured, simulated) of a stored run unit, each as it was logged."""
    parts = []
    for source in ("LLM", "simulation"):
        part = frame[frame.source == source].drop(columns=["source", "unit"], errors="ignore")
        parts.append(part.dropna(axis=1, how="all").reset_index(drop=True))
    return parts[0], parts[1]


def simulate_run(bandit: Bandit, s: Settings, name: str, params: Mapping[str, Any], seed: int) -> pd.DataFrame:
    return simulate(bandit, SimConfig(advantage=name, advantage_params=dict(params), G=s.G, steps=s.steps,
                                      log_every=1, optimizer="adam", lr=s.sim_lr), seeds=[seed]).to_frame()


def run_specs(s: Settings, ident: Mapping[str, Any], *, by_seed: bool) -> list[dict[str, Any]]:
    """One unit per (advantage, seed) under ``ident`` (``identity(s)``): seed-major when ``by_seed`` (the copy task:
    each seed is its own model), advantage-major otherwise (one model, seeds of each advantage together)."""
    pairs = ([(a, seed) for seed in range(s.seeds) for a in ADVANTAGES] if by_seed
             else [(a, seed) for a in ADVANTAGES for seed in range(s.seeds)])
    return [{"experiment": "llm_bridge", "unit": "run", "advantage": name, "params": params, "seed": seed,
             "settings": ident} for (name, params), seed in pairs]


def compare_stored(table: pd.DataFrame, specs: list[dict[str, Any]]) -> tuple[list, list]:
    """(curves, summary rows) of the stored runs, in the order of ``specs``."""
    rows, summary = [], []
    for spec in specs:
        measured, sim = split_run(table[table.unit == unit_key(spec)])
        curves, row = compare_runs(measured, sim, label_of(spec["advantage"], spec["params"]), spec["seed"])
        rows.extend(curves)
        summary.append(row)
    return rows, summary


def run_tiny(s: Settings, store: ResultStore, executor: Executor) -> tuple[pd.DataFrame, list]:
    """The copy task on a tiny random GPT-2 per seed: each run measures the seed's step-0 token distributions,
    fits the bandit to them, trains the model and simulates the bandit."""
    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    correct = np.array([[tok.encode(c, bos=False)[0] == v for v in range(tok.vocab_size)] for c in task.symbols])
    fits: dict[int, tuple[float, Bandit]] = {}  # per seed: its step-0 pass rate and fitted bandit, measured once

    def fit(seed: int) -> tuple[float, Bandit]:
        if seed not in fits:
            p0, counts = measure_pass_rates(tiny_gpt2(tok.vocab_size, seed), tok, task,
                                            samples=s.tiny_measure_samples, seed=seed)
            fits[seed] = float(p0.mean()), fitted_bandit(counts, correct)
        return fits[seed]

    def compute(spec: Mapping[str, Any]) -> pd.DataFrame:
        seed, name, params = spec["seed"], spec["advantage"], spec["params"]
        p0, bandit = fit(seed)
        model = tiny_gpt2(tok.vocab_size, seed)
        cfg = BridgeConfig(advantage=name, advantage_params=dict(params), G=s.G, prompts_per_step=s.tiny_prompts_per_step,
                           lr=s.tiny_lr, seed=seed)
        trainer = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=cfg)
        measured = pd.DataFrame([trainer.step() for _ in tqdm(range(s.steps), leave=False, desc=f"{name} seed {seed}")])
        return run_frame(measured.assign(measured_p0=p0), simulate_run(bandit, s, name, params, seed))

    specs = run_specs(s, identity(s), by_seed=True)
    table = run_units(specs, compute, store, "llm_bridge runs", executor)
    rows, summary = compare_stored(table, specs)
    p0 = {unit: float(v) for unit, v in table.groupby("unit").measured_p0.first().items()}
    for spec, row in zip(specs, summary):
        row["measured p0"] = p0[unit_key(spec)]
    return pd.DataFrame(summary), rows


def run_model(s: Settings, store: ResultStore, executor: Executor) -> tuple[pd.DataFrame, list, str]:
    """A local model on the arithmetic task: step-0 pass rates (one unit) -> beta-binomial fit -> exact masses vs
    the step-0 groups; then each (advantage, seed) run trained and its fitted bandit simulated."""
    if s.backend == "vllm" and executor.kind != "local":
        raise ValueError("llm_bridge: --backend vllm runs one engine in this process; use --executor local")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = HFTokenizer.from_pretrained(s.model)
    reward_fn, reward_name = reward_by_name(s.reward)
    task = ArithmeticTask(max_operand=s.max_operand)
    engine: dict[str, Any] = {}

    def make_backend(model: Any) -> Any:
        if s.backend == "hf":  # min_new_tokens=0: sample from the model itself (an immediate eos is an empty, wrong
            return HFBackend(model, tok, max_new_tokens=s.max_new_tokens, min_new_tokens=0)  # completion)
        if "vllm" not in engine:  # one engine, synced from each fresh model every step
            try:
                engine["vllm"] = VLLMBackend(s.model, tok, max_new_tokens=s.max_new_tokens,
                                             gpu_memory_utilization=s.gpu_memory_utilization, dtype=s.vllm_dtype,
                                             max_model_len=s.max_model_len or None, enforce_eager=s.enforce_eager)
            except (ImportError, RuntimeError) as err:
                raise RuntimeError(f"llm_bridge: {err}") from err
        return engine["vllm"]

    def load() -> Any:
        t0 = time.perf_counter()
        model = load_local(s.model, device)
        print(f"model {s.model} on {device}, backend {s.backend}, reward {reward_name}, "
              f"load {time.perf_counter() - t0:.1f}s")
        return model

    ident = identity(s)  # the model directory's digest, read once
    step0_spec = {"experiment": "llm_bridge", "unit": "step0", "settings": ident}

    def measure(_: Mapping[str, Any]) -> pd.DataFrame:
        model = load()
        t0 = time.perf_counter()
        correct = measure_counts(make_backend(model), model, task, reward_fn, prompts=s.measure_prompts,
                                 samples=s.measure_samples, seed=0)
        print(f"step 0: {s.measure_prompts} prompts x {s.measure_samples} samples in "
              f"{time.perf_counter() - t0:.1f}s")
        prompt, sample = np.indices(correct.shape)
        return pd.DataFrame({"prompt": prompt.ravel(), "sample": sample.ravel(), "correct": correct.ravel()})

    step0 = run_units([step0_spec], measure, store, "llm_bridge step 0", executor)
    correct = step0.sort_values(["prompt", "sample"]).correct.to_numpy(float).reshape(s.measure_prompts,
                                                                                       s.measure_samples)
    k = correct.sum(axis=1)
    fit = fit_beta(k, s.measure_samples)
    print(f"step 0: reward {reward_name}; mean pass rate {k.mean() / s.measure_samples:.3f}; "
          f"fitted difficulty Beta(a={fit.a:.3g}, b={fit.b:.3g}) (beta-binomial maximum likelihood)")
    bandit = make_bandit(n_prompts=128, difficulty=fit, seed=0)
    mass_rows = []
    for name, params in ADVANTAGES:
        exact = fadesim.profile(name, s.G, **params).under_beta(fit.a, fit.b)
        pos, neg = realised_masses(name, params, correct, s.G)
        se = np.array([pos.std(ddof=1), neg.std(ddof=1)]) / np.sqrt(len(pos)) if len(pos) > 1 else np.zeros(2)
        within = (abs(pos.mean() - exact.positive_mass) <= 4 * se[0] + 1e-9 and
                  abs(neg.mean() - exact.negative_mass) <= 4 * se[1] + 1e-9)
        mass_rows.append({"advantage": label_of(name, params), "E[M+] fitted": exact.positive_mass,
                          "M+ step 0": pos.mean(), "E[M-] fitted": exact.negative_mass, "M- step 0": neg.mean(),
                          "within 4 SE": within})
    masses = pd.DataFrame(mass_rows)
    print(masses.to_string(index=False, float_format=lambda v: f"{v:8.3f}"))
    print(f"exact masses under the fitted Beta predict the step-0 masses (4 SE): "
          f"{verdict(bool(masses['within 4 SE'].all()))}")

    def compute(spec: Mapping[str, Any]) -> pd.DataFrame:
        seed, name, params = spec["seed"], spec["advantage"], spec["params"]
        label = label_of(name, params)
        model = load()
        cfg = BridgeConfig(advantage=name, advantage_params=dict(params), G=s.G, lr=s.lr, seed=seed,
                           max_sampler_logprob_gap=s.max_sampler_gap,
                           off_policy=None if s.off_policy == "none" else s.off_policy,
                           prompts_per_step=s.prompts_per_step)
        trainer = BridgeTrainer(model, make_backend(model), task, reward_fn=reward_fn, config=cfg)
        steps = []
        for _ in tqdm(range(s.steps), desc=f"{label} seed {seed}", leave=False):
            r = trainer.step()
            steps.append(r)
            print(f"  {label} seed {seed} step {r['step']}: sync {r['time_sync']:.2f}s generate "
                  f"{r['time_generate']:.2f}s train {r['time_train']:.2f}s | reward {r['reward_mean']:.3f} "
                  f"entropy {r['entropy']:.3f} M+ {r['positive_mass']:.3f} M- {r['negative_mass']:.3f} "
                  f"sampler gap {r.get('sampler_logprob_gap', float('nan')):.2e}", flush=True)
        return run_frame(pd.DataFrame(steps), simulate_run(bandit, s, name, params, seed))

    specs = run_specs(s, ident, by_seed=False)
    table = run_units(specs, compute, store, "llm_bridge runs", executor)
    rows, summary = compare_stored(table, specs)
    return pd.DataFrame(summary), rows, Path(s.model.rstrip("/")).name


def main(argv: list[str] | None = None) -> int:
    s, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "llm_bridge")
    store = ResultStore(Path(args.out) / suffix)
    try:
        executor = executor_from_args(args)
        if s.model == "tiny":
            summary, rows = run_tiny(s, store, executor)
            title, name = "LLM bridge: measured vs simulated entropy (tiny GPT-2, copy task)", "quick"
        else:
            summary, rows, model_name = run_model(s, store, executor)
            title, name = f"LLM bridge: measured vs simulated entropy ({model_name}, arithmetic)", s.backend
    except (ValueError, ImportError, RuntimeError) as err:  # bad settings, a missing package or engine
        print(f"llm_bridge: {err}" if not str(err).startswith("llm_bridge") else str(err), file=sys.stderr)
        return 2
    path = Path(args.figures) / f"llm_bridge_entropy_{name}.png"
    report(summary, rows, title=title, path=None if args.no_figures else path)
    write_atomic(path.with_suffix(".csv"), summary)
    print(f"table: {path.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
