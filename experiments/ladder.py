"""The fidelity ladder (arXiv 2607.01490's claims, rung by rung): the same protocol on the tabular bandit, the
shared-W linear softmax, the tabular token chain, the neural rung (an MLP over token sequences whose weights
every prompt shares) and a tiny GPT-2 trained by the LLM bridge on CPU; each rung's result predicts the next.

Methods (the same advantage code at every rung): grpo; positive-heavy = sign_scaled(b = +1) (GRPO's positive
part doubled, its negative part dropped); negative-heavy = sign_scaled(b = -1); focal(gamma = 2); fade.

Claims, each a paired difference over seeds with a 95% CI, at a fixed fraction of training:
- C1 positive mass collapses entropy: entropy(positive-heavy) - entropy(grpo) < 0, half way;
- C1p the same at matched pass@1: each of positive-heavy and grpo read where its own pass@1 first reaches the
  lower of their mean pass@1 half way (``fadesim.lab.stats.paired_at_pass1``), so learning speed is out of the comparison
  (simulator rungs; on the bridge rungs pass@1 is a sampled reward, whose first crossing is noise: n/a);
- C2 negative mass damages geometry: geometry(negative-heavy) - geometry(grpo) > 0 at the end (logit norm on
  the tabular rungs, the norm of the shared weights on linear_softmax, neural and GPT-2);
- C3 hard focus sharpens hard prompts at an ESS cost: pass@1 on initially hard prompts (p0 < 0.25) of focal
  minus grpo > 0 half way, and focal's ESS per step below grpo's (not measurable on GPT-2: no exact per-prompt
  pass rates there);
- C4 FADE beats the best static advantage: pass@1(fade) - pass@1(best static) > 0 at the end, the best static
  chosen on the first half of the seeds and judged on the second (held-out) half.
Predictions: a rung predicts the next when the claim's effect has the same sign; and the ordering of the
methods by entropy and by pass@1 at each checkpoint is compared by Kendall tau, with a bootstrap 95% CI over
seeds. The GPT-2 rung's pass@1 is the sampled reward on fresh prompts (its entropy: per token).

A ``sharpen`` rung (a shared sharpening and skill over tabular prompts: the literature protocol's family) runs
only when named (``--rungs``), after the chain; in the math regime (``--regime math``: its calibrated design, one
prompt a step, metrics on held-out prompts; train it with ``--optimizer adam``, the optimizer it was calibrated
under) the bandit, linear_softmax and chain rungs are that regime's controls on the same prompts. With one prompt a
step, C3's ESS cost is not measurable there (a batch of one group), and it says so.

A sixth rung, ``model``, runs only with ``--model DIR``: a real local checkpoint (a Hugging Face model
directory with its tokenizer; nothing is downloaded) trained by the same bridge on the arithmetic task
(a + b = ?, exact-match or math-verify reward), sampled by vLLM on a GPU (``--model-backend vllm``, the
default; it refuses to start without CUDA) or by the HF sampler (``--model-backend hf``, CPU or GPU, slow).
Its predecessor is the GPT-2 rung; its metrics are the bridge's, as there. ``--model smollm2`` (with
``--model-backend hf``) puts the packaged SmolLM2-135M-Instruct there instead (``fadesim.bridge.pretrained``, on
CPU): the real-model rung's task, one- and two-digit sums in its chat template, rewarded by the last integer.

    python experiments/ladder.py            # --quick (default): toy regime, all five rungs
    python experiments/ladder.py --full     # more seeds and steps, both regimes where a rung has them
    python experiments/ladder.py --full --regime math --rungs bandit,linear_softmax,chain,sharpen --optimizer adam \
        --figures paper_figures/ladder/math_regime   # the math regime's rungs (committed there)
    python experiments/ladder.py --model /models/Qwen2.5-0.5B-Instruct   # + the real checkpoint (GPU, vLLM)
    python experiments/ladder.py --rungs gpt2 --model smollm2 --model-backend hf --G 8 --model-steps 24 \
        --model-prompts-per-step 8 --model-max-new-tokens 12 --model-lr 1e-5   # + SmolLM2 on CPU (20 runs, ~7 h)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from fadesim.bridge.pretrained import PRETRAINED
from fadesim.lab.regime_tasks import LLMRegimeSettings, regime_task
from fadesim.lab.settings import check_axes, parse_settings
from fadesim.lab.stats import ci95, paired_at_pass1, split_seeds, verdict
from fadesim.lab.units import Executor, executor_from_args, LOCAL, run_units
from fadesim.lab.plots import save_figure
from fadesim.lab.results import ResultStore, write_atomic, write_text_atomic
from fadesim.sim import SimConfig, simulate
from fadesim.sim.optim import OPTIMIZERS
from fadesim.tasks import REGIMES, make_task
from fadesim.tasks.protocol import groups_per_step

ROOT = Path(__file__).resolve().parents[1]

RUNGS = ("bandit", "linear_softmax", "chain", "neural", "gpt2")
#: the real-checkpoint rung, added by --model DIR (never a default: it needs a checkpoint and, with vLLM, a GPU)
MODEL_RUNG = "model"
#: the shared-sharpening rung (``make_task("sharpen")``), run only when named, after the chain
SHARPEN_RUNG = "sharpen"
ALL_RUNGS = (*RUNGS[:3], SHARPEN_RUNG, *RUNGS[3:], MODEL_RUNG)
#: rungs trained by the LLM bridge (per-batch metrics, one row per step, AdamW)
BRIDGE_RUNGS = ("gpt2", MODEL_RUNG)
MODEL_BACKENDS = ("vllm", "hf")
#: rungs that have the regime presets (the neural and GPT-2 rungs have their own task)
REGIME_RUNGS = ("bandit", "linear_softmax", "chain", SHARPEN_RUNG)
METHODS = {
    "grpo": ("grpo", {}),
    "positive-heavy": ("sign_scaled", {"balance": 1.0}),
    "negative-heavy": ("sign_scaled", {"balance": -1.0}),
    "focal": ("focal", {"gamma": 2.0}),
    "fade": ("fade", {}),
}
STATICS = ("grpo", "positive-heavy", "negative-heavy", "focal")
CLAIMS = {
    "C1": "positive mass collapses entropy",
    "C1p": "positive mass collapses entropy, at matched pass@1",
    "C2": "negative mass damages geometry",
    "C3": "hard focus sharpens hard prompts at an ESS cost",
    "C4": "FADE beats the best static advantage",
}
GEOMETRY = {"bandit": "logit_norm", "chain": "logit_norm", SHARPEN_RUNG: "logit_norm", "linear_softmax": "weight_norm", "neural": "weight_norm",
            "gpt2": "weight_norm", MODEL_RUNG: "weight_norm"}


def packaged(model: str) -> bool:
    """Whether ``model`` names a packaged pretrained model (``fadesim.bridge.pretrained.PRETRAINED``)."""
    return model in PRETRAINED


@dataclass(frozen=True)
class Settings(LLMRegimeSettings):  # + llm_n_prompts, llm_n_answers, llm_n_correct, llm_width
    rungs: tuple[str, ...] = RUNGS
    regimes: tuple[str, ...] = ("toy",)
    optimizer: str = "adam_shared"
    seeds: int = 4  # the first half chooses FADE's opponent (C4), the second half judges
    steps: int = 200
    log_every: int = 10
    G: int = 8
    lr: float = 0.02
    n_prompts: int = 64
    width: int = 8  # linear_softmax
    llm_n_prompts: int = 32  # (LLMRegimeSettings' default: 64)
    neural_prompts: int = 128
    neural_length: int = 3
    neural_vocab: int = 8
    neural_width: int = 32
    neural_rule: str = "modsum"
    neural_lr: float = 0.01
    gpt2_steps: int = 40
    gpt2_seeds: int = 4
    gpt2_lr: float = 0.01
    model: str = ""  # a local checkpoint directory, or a packaged model's name ("smollm2"): adds the model rung
    model_backend: str = "vllm"
    model_steps: int = 30
    model_seeds: int = 4
    model_lr: float = 1e-6
    model_max_new_tokens: int = 16
    model_max_operand: int = 99
    model_prompts_per_step: int = 16
    model_reward: str = "auto"  # auto | math | exact (fadesim.bridge.rewards.reward_by_name)
    model_gpu_memory_utilization: float = 0.3
    model_vllm_dtype: str = "float32"  # the sampler computes the learner's (float32) distribution
    model_off_policy: str = "none"  # none: refuse a batch whose sampler gap exceeds 1e-3; tis: correct for it
    bootstrap: int = 500

    def __post_init__(self) -> None:
        if self.model and MODEL_RUNG not in self.rungs:  # --model DIR adds the rung (frozen: set it once here)
            object.__setattr__(self, "rungs", (*self.rungs, MODEL_RUNG))
        check_axes("ladder", rungs=(self.rungs, ALL_RUNGS), regimes=(self.regimes, REGIMES),
                   optimizer=((self.optimizer,), tuple(OPTIMIZERS)), model_backend=((self.model_backend,), MODEL_BACKENDS),
                   model_vllm_dtype=((self.model_vllm_dtype,), ("float32", "bfloat16", "float16")),
                   model_off_policy=((self.model_off_policy,), ("none", "tis")))
        if MODEL_RUNG in self.rungs and not self.model:
            raise ValueError("ladder: the model rung needs a checkpoint: --model DIR (a local Hugging Face model "
                             "directory with its tokenizer)")
        if self.model and not (packaged(self.model) or Path(self.model).is_dir()):
            raise ValueError(f"ladder: --model {self.model!r} is neither a directory (a local Hugging Face checkpoint; "
                             f"nothing is downloaded) nor a packaged model ({', '.join(PRETRAINED)})")
        if packaged(self.model) and self.model_backend != "hf":
            raise ValueError(f"ladder: the packaged model {self.model!r} runs with the HF sampler on CPU: add "
                             "--model-backend hf")
        if self.seeds < 4 or self.gpt2_seeds < 4 or self.model_seeds < 4:
            raise ValueError(f"ladder: need seeds, gpt2_seeds and model_seeds >= 4 (half to choose FADE's opponent, "
                             f"half to judge); got {self.seeds}, {self.gpt2_seeds}, {self.model_seeds}")
        if self.steps % self.log_every or self.steps < 4 * self.log_every:
            raise ValueError(f"ladder: steps ({self.steps}) must be a multiple of log_every ({self.log_every}) "
                             "and at least 4 log intervals (checkpoints at 1/4, 1/2 and the end)")


QUICK = Settings()
FULL = Settings(regimes=("toy", "llm"), seeds=8, steps=400, n_prompts=128, neural_prompts=512, neural_width=64,
                gpt2_steps=60, gpt2_seeds=6)


def checkpoints(steps: int, log_every: int) -> dict[str, int]:
    """Named checkpoints (updates done), on the logging grid."""
    def snap(x: float) -> int:
        return max(log_every, int(round(x / log_every)) * log_every)

    return {"quarter": snap(steps / 4), "half": snap(steps / 2), "end": steps}


def bridge_steps(s: Settings, rung: str) -> int:
    return s.gpt2_steps if rung == "gpt2" else s.model_steps


def rung_checkpoints(s: Settings, rung: str) -> dict[str, int]:
    """A rung's checkpoints: the simulator's logging grid, or every bridge step (rows 0 .. steps - 1)."""
    if rung in BRIDGE_RUNGS:
        return checkpoints(bridge_steps(s, rung) - 1, 1)
    return checkpoints(s.steps, s.log_every)


def optimizer_of(rung: str, s: Settings) -> str:
    return "AdamW (the bridge's)" if rung in BRIDGE_RUNGS else s.optimizer


def cells(s: Settings) -> list[tuple[str, str]]:
    """(rung, regime) pairs: the regime rungs in each regime, the others once (regime '-')."""
    return [(r, reg) for r in s.rungs for reg in (s.regimes if r in REGIME_RUNGS else ("-",))]


def build_task(s: Settings, rung: str, regime: str):
    if rung == "neural":
        return make_task("neural", n_prompts=s.neural_prompts, length=s.neural_length, vocab=s.neural_vocab,
                         width=s.neural_width, rule=s.neural_rule, seed=0)
    return regime_task(s, rung, regime)


def one_group_a_step(s: Settings, rung: str, regime: str) -> bool:
    """Whether the rung's task in ``regime`` trains on one prompt a step (the math regime's sharpen)."""
    return rung in REGIME_RUNGS and groups_per_step(build_task(s, rung, regime)) == 1


def _sim_unit(s: Settings, spec: dict, task) -> pd.DataFrame:
    name, params = METHODS[spec["method"]]
    lr = s.neural_lr if spec["rung"] == "neural" else s.lr
    cfg = SimConfig(advantage=name, advantage_params=params, G=s.G, steps=s.steps, log_every=s.log_every,
                    optimizer=s.optimizer, lr=lr)
    df = simulate(task, cfg, seeds=list(range(s.seeds))).to_frame()
    df["geometry"] = df[GEOMETRY[spec["rung"]]]
    return df[["seed", "step", "entropy", "pass@1", "pass@1_hard", "ess", "geometry"]]


def _bridge():
    try:
        from fadesim.bridge.backends import HFBackend
        from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer
    except ImportError as err:
        raise ImportError("the gpt2 and model rungs need the LLM bridge: pip install -e '.[bridge]' (or leave them "
                          "out of --rungs)") from err
    return HFBackend, BridgeConfig, BridgeTrainer


def _bridge_frame(seed: int, rows: list[dict]) -> pd.DataFrame:
    # row k is the batch sampled after k - 1 updates: its entropy and reward are the policy's at step k - 1
    return pd.DataFrame({"seed": seed, "step": [r["step"] - 1 for r in rows],
                         "entropy": [r["entropy"] for r in rows], "pass@1": [r["reward_mean"] for r in rows],
                         "pass@1_hard": np.nan, "ess": [r["ess"] for r in rows],
                         "geometry": [r["weight_norm"] for r in rows]})


def _gpt2_unit(s: Settings, spec: dict) -> pd.DataFrame:
    HFBackend, BridgeConfig, BridgeTrainer = _bridge()
    from fadesim.bridge.tasks import CopyTask
    from fadesim.bridge.tokenizer import CharTokenizer
    from fadesim.bridge.pretrained import tiny_gpt2

    task = CopyTask()
    tok = CharTokenizer(task.alphabet)
    name, params = METHODS[spec["method"]]
    model = tiny_gpt2(tok.vocab_size, spec["seed"])
    cfg = BridgeConfig(advantage=name, advantage_params=params, G=s.G, prompts_per_step=16, lr=s.gpt2_lr,
                       seed=spec["seed"])
    trainer = BridgeTrainer(model, HFBackend(model, tok, max_new_tokens=1), task, config=cfg)
    return _bridge_frame(spec["seed"], [trainer.step() for _ in range(s.gpt2_steps)])


def model_device(s: Settings) -> str:
    """Where the model rung trains: CUDA when present; vLLM refuses to run without it."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if s.model_backend == "vllm":
        raise RuntimeError("ladder: the model rung samples with vLLM, which needs a GPU (none is visible to torch); "
                           "--model-backend hf runs it with the HF sampler on CPU (slow)")
    return "cpu"


class ModelRung:
    """The real-checkpoint rung: one tokenizer, reward and (with vLLM) one engine for all its units; each unit
    loads fresh float32 weights and trains them with the bridge (the engine is synced from them every step)."""

    def __init__(self, s: Settings):
        HFBackend, self.BridgeConfig, self.BridgeTrainer = _bridge()
        from fadesim.bridge.backends import VLLMBackend
        from fadesim.bridge.tasks import ArithmeticTask
        from fadesim.bridge.tokenizer import HFTokenizer
        from fadesim.bridge.rewards import reward_by_name

        self.s, self.device = s, model_device(s)
        if packaged(s.model):
            self._packaged(HFBackend)
            return
        self.tok = HFTokenizer.from_pretrained(s.model)
        self.task = ArithmeticTask(max_operand=s.model_max_operand)
        try:
            self.reward_fn, self.reward_name = reward_by_name(s.model_reward)
        except ImportError as err:
            raise ValueError(f"ladder: {err}") from err
        if s.model_backend == "vllm":
            engine = VLLMBackend(s.model, self.tok, max_new_tokens=s.model_max_new_tokens,
                                 gpu_memory_utilization=s.model_gpu_memory_utilization, dtype=s.model_vllm_dtype)
            self.make_backend = lambda model: engine
        else:  # min_new_tokens=0: sample from the model itself (an immediate eos is an empty, wrong completion)
            self.make_backend = lambda model: HFBackend(model, self.tok, max_new_tokens=s.model_max_new_tokens,
                                                        min_new_tokens=0)

    def _packaged(self, HFBackend) -> None:
        """A packaged model (SmolLM2): the real-model rung's task, one- and two-digit sums in the model's chat
        template with an empty system turn, rewarded by the last integer of the answer (``experiments/real_model.py``);
        the HF sampler with one prefill per prompt (``shared_prefix``)."""
        from fadesim.bridge.pretrained import load_pretrained
        from fadesim.bridge.rewards import last_integer
        from fadesim.bridge.tasks import ChatArithmetic, TaskMixture, chat_template

        s = self.s
        _, self.tok = load_pretrained(s.model)
        template = chat_template(self.tok, system="")
        self.task = TaskMixture(tuple(ChatArithmetic(digits=d, template=template) for d in (1, 2)))
        self.reward_fn, self.reward_name = last_integer, "last integer"
        self.make_backend = lambda model: HFBackend(model, self.tok, max_new_tokens=s.model_max_new_tokens,
                                                    shared_prefix=True)

    def load(self) -> Any:
        """Fresh weights for one unit."""
        from fadesim.bridge.pretrained import load_local, load_pretrained

        if packaged(self.s.model):
            return load_pretrained(self.s.model)[0].to(self.device)
        return load_local(self.s.model, self.device)

    def unit(self, spec: dict) -> pd.DataFrame:
        s = self.s
        name, params = METHODS[spec["method"]]
        model = self.load()
        cfg = self.BridgeConfig(advantage=name, advantage_params=params, G=s.G, lr=s.model_lr, seed=spec["seed"],
                                prompts_per_step=s.model_prompts_per_step,
                                off_policy=None if s.model_off_policy == "none" else s.model_off_policy)
        trainer = self.BridgeTrainer(model, self.make_backend(model), self.task, reward_fn=self.reward_fn, config=cfg)
        rows = []
        for _ in tqdm(range(s.model_steps), desc=f"model rung, {spec['method']} seed {spec['seed']}", leave=False):
            rows.append(trainer.step())
        return _bridge_frame(spec["seed"], rows)


def run_sweep(s: Settings, store: ResultStore, executor: Executor = LOCAL) -> pd.DataFrame:
    """One unit per (rung, regime, method) on the simulator rungs (all seeds in one vmapped call), one per
    (method, seed) on GPT-2. Resumable."""
    specs = []
    bridge_seeds = {"gpt2": s.gpt2_seeds, MODEL_RUNG: s.model_seeds}
    for rung, regime in cells(s):
        for method in METHODS:
            seeds = range(bridge_seeds[rung]) if rung in BRIDGE_RUNGS else [None]
            for seed in seeds:
                specs.append({"experiment": "ladder", "rung": rung, "regime": regime, "method": method, "seed": seed,
                              **dataclasses.asdict(s)})

    tasks: dict[tuple[str, str], object] = {}  # one task per (rung, regime), shared by its five methods
    model_rung: list[ModelRung] = []  # built on the first model unit that is not already stored

    def compute(spec: dict) -> pd.DataFrame:
        if spec["rung"] == "gpt2":
            frame = _gpt2_unit(s, spec)
        elif spec["rung"] == MODEL_RUNG:
            if not model_rung:
                model_rung.append(ModelRung(s))
            frame = model_rung[0].unit(spec)
        else:
            key = (spec["rung"], spec["regime"])
            if key not in tasks:
                tasks[key] = build_task(s, *key)
            frame = _sim_unit(s, spec, tasks[key])
        return frame.assign(rung=spec["rung"], regime=spec["regime"], method=spec["method"])

    return run_units(specs, compute, store, "ladder", executor)


# ------------------------------------------------------------------------------------------------ analysis
def _at(df: pd.DataFrame, step: int, metric: str) -> pd.DataFrame:
    """(seed x method) table of ``metric`` at ``step`` (the bridge rungs: mean over the 5 logged steps up to it,
    their per-batch metrics being noisy)."""
    if df.rung.iloc[0] in BRIDGE_RUNGS:
        part = df[(df.step > step - 5) & (df.step <= step)]
    else:
        part = df[df.step == step]
    return part.groupby(["seed", "method"])[metric].mean().unstack("method")


def matched_c1(part: pd.DataFrame, half: int) -> dict:
    """C1 at matched pass@1: positive-heavy minus grpo entropy, each read where its own pass@1 first reaches the lower
    of their mean pass@1 at step ``half``, paired over the seeds where both reach it."""
    if part.rung.iloc[0] in BRIDGE_RUNGS:
        return {"claim": "C1p", "effect": np.nan, "ci": np.nan, "ok": None,
                "note": "not measurable (pass@1 is a sampled reward here: its first crossing is noise)"}
    p1 = _at(part, half, "pass@1")
    target = float(min(p1["positive-heavy"].mean(), p1["grpo"].mean()))
    pairs, n = paired_at_pass1(part[part.method == "positive-heavy"], part[part.method == "grpo"], target, "entropy")
    if len(pairs) < 2:
        return {"claim": "C1p", "effect": np.nan, "ci": np.nan, "ok": None,
                "note": f"not measurable (pass@1 {target:.3f} reached during training by both in {len(pairs)} seeds)"}
    e, h = ci95(pairs)
    return {"claim": "C1p", "effect": e, "ci": h, "ok": e + h < 0,
            "note": f"entropy where each first reaches pass@1 {target:.3f} (the lower mean at step {half}), "
                    f"{len(pairs)}/{n} seeds"}


def _diff(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    return ci95((a - b).dropna())


def claim_effects(df: pd.DataFrame, s: Settings) -> list[dict]:
    """One record per (rung, regime, claim): effect, 95% CI half-width, verdict."""
    out = []
    for (rung, regime), part in df.groupby(["rung", "regime"], sort=False):
        cp = rung_checkpoints(s, rung)
        half, end = cp["half"], cp["end"]
        ent = _at(part, half, "entropy")
        geo = _at(part, end, "geometry")
        rec = {"rung": rung, "regime": regime}
        e, h = _diff(ent["positive-heavy"], ent["grpo"])
        out.append({**rec, "claim": "C1", "effect": e, "ci": h, "ok": e + h < 0, "note": f"entropy, step {half}"})
        out.append({**rec, **matched_c1(part, half)})
        e, h = _diff(geo["negative-heavy"], geo["grpo"])
        out.append({**rec, "claim": "C2", "effect": e, "ci": h, "ok": e - h > 0,
                    "note": f"{GEOMETRY[rung]}, step {end}"})
        hard = _at(part, half, "pass@1_hard")
        if hard.isna().all().all():
            out.append({**rec, "claim": "C3", "effect": np.nan, "ci": np.nan, "ok": None,
                        "note": "not measurable (no exact per-prompt pass rates)"})
        elif one_group_a_step(s, rung, regime):
            out.append({**rec, "claim": "C3", "effect": np.nan, "ci": np.nan, "ok": None,
                        "note": "not measurable (one prompt a step: no ESS cost within a batch of one group)"})
        else:
            ess = part[part.step <= half].groupby(["seed", "method"]).ess.mean().unstack("method")
            e, h = _diff(hard["focal"], hard["grpo"])
            ess_cut = float((ess["focal"] - ess["grpo"]).mean())
            out.append({**rec, "claim": "C3", "effect": e, "ci": h, "ok": e - h > 0 and ess_cut < 0,
                        "note": f"pass@1_hard, step {half}; ESS/step focal - grpo {ess_cut:+.2f}"})
        p1 = _at(part, end, "pass@1")
        choose, judge = split_seeds(p1.index, f"ladder C4 ({rec['rung']}, {rec['regime']})")
        best = p1.loc[choose, list(STATICS)].mean().idxmax()
        e, h = _diff(p1.loc[judge, "fade"], p1.loc[judge, best])
        out.append({**rec, "claim": "C4", "effect": e, "ci": h, "ok": e - h > 0,
                    "note": f"pass@1, step {end}, vs {best} (chosen on seeds {choose})"})
    return out


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-a between two score vectors over the same items."""
    n, s = len(a), 0.0
    for i in range(n):
        for j in range(i + 1, n):
            s += np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
    return s / (n * (n - 1) / 2)


def predecessors(cell_list: list[tuple[str, str]], i: int) -> list[tuple[str, str]]:
    """The cells of the rung below cell i that predict it: the previous rung's cell of the same regime (a rung
    without regimes, '-', is predicted by every regime of the rung below, and predicts every regime above)."""
    rung, regime = cell_list[i]
    below = [c for c in cell_list[:i] if c[0] != rung]
    if not below:
        return []
    prev_rung = below[-1][0]
    return [c for c in below if c[0] == prev_rung and (regime == "-" or c[1] in (regime, "-"))]


def ordering_predictions(df: pd.DataFrame, s: Settings, rng: np.random.Generator) -> list[dict]:
    """Kendall tau (bootstrap 95% CI over seeds) between each rung's ordering of the methods by entropy and by
    pass@1 and its predecessors' (``predecessors``), at each checkpoint (as a fraction of training)."""
    cell_list = list(dict.fromkeys(zip(df.rung, df.regime)))
    out = []
    for i, (r2, g2) in enumerate(cell_list):
        for r1, g1 in predecessors(cell_list, i):
            a_df, b_df = df[(df.rung == r1) & (df.regime == g1)], df[(df.rung == r2) & (df.regime == g2)]
            for frac in ("quarter", "half", "end"):
                steps = [rung_checkpoints(s, r)[frac] for r in (r1, r2)]
                for metric in ("entropy", "pass@1"):
                    ta = _at(a_df, steps[0], metric)[list(METHODS)]
                    tb = _at(b_df, steps[1], metric)[list(METHODS)]
                    tau = kendall_tau(ta.mean().values, tb.mean().values)
                    boots = [kendall_tau(ta.values[rng.integers(0, len(ta), len(ta))].mean(0),
                                         tb.values[rng.integers(0, len(tb), len(tb))].mean(0))
                             for _ in range(s.bootstrap)]
                    lo, hi = np.nanpercentile(boots, [2.5, 97.5])
                    out.append({"source": f"{r1} ({g1})", "target": f"{r2} ({g2})", "checkpoint": frac,
                                "metric": metric, "tau": tau, "lo": lo, "hi": hi, "predicted": lo > 0})
    return out


def sign_predictions(effects: list[dict]) -> dict[tuple[str, str, str], str]:
    """(rung, regime, claim) -> whether its predecessors (the rung below) predicted the sign of the effect."""
    table = pd.DataFrame(effects)
    cell_list = list(dict.fromkeys(zip(table.rung, table.regime)))

    def effect(cell: tuple[str, str], claim: str) -> float:
        rows = table[(table.rung == cell[0]) & (table.regime == cell[1]) & (table.claim == claim)]
        return float(rows.effect.iloc[0])

    out = {}
    for i, cell in enumerate(cell_list):
        preds = predecessors(cell_list, i)
        for claim in CLAIMS:
            here = effect(cell, claim)
            if not preds:
                out[(*cell, claim)] = "(first rung)"
                continue
            parts = []
            for p in preds:
                before = effect(p, claim)
                name = p[0] if p[1] == "-" else f"{p[0]}, {p[1]}"
                if np.isnan(here) or np.isnan(before):
                    parts.append(f"n/a (from {name})")
                else:
                    parts.append(f"yes (from {name})" if np.sign(here) == np.sign(before)
                                 else f"NO (from {name}: {before:+.3g})")
            out[(*cell, claim)] = "; ".join(parts)
    return out


def ladder_table(effects: list[dict], predicted: dict, s: Settings) -> str:
    lines = ["| claim | rung | regime | optimizer | verdict | effect (95% CI) | measured "
             "| sign predicted by the rung below |",
             "|---|---|---|---|---|---|---|---|"]  # regime '-': the rung has no toy / llm presets
    for e in effects:
        v = "n/a" if e["ok"] is None else verdict(bool(e["ok"]))
        eff = "—" if np.isnan(e["effect"]) else f"{e['effect']:+.3g} ± {e['ci']:.2g}"
        lines.append(f"| {e['claim']} {CLAIMS[e['claim']]} | {e['rung']} | {e['regime']} | {optimizer_of(e['rung'], s)} "
                     f"| {v} | {eff} | {e['note']} | {predicted[(e['rung'], e['regime'], e['claim'])]} |")
    return "\n".join(lines)


def effects_figure(effects: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.DataFrame(effects)
    table["cell"] = np.where(table.regime == "-", table.rung, table.rung + " (" + table.regime + ")")
    fig, axes = plt.subplots(1, len(CLAIMS), figsize=(4.6 * len(CLAIMS), 4.2), squeeze=False)
    for ax, (claim, text) in zip(axes[0], CLAIMS.items()):
        part = table[table.claim == claim].reset_index(drop=True)
        x = np.arange(len(part))
        colors = ["tab:green" if ok else ("tab:gray" if ok is None else "tab:red") for ok in part.ok]
        ax.errorbar(x, part.effect, yerr=part.ci, fmt="none", ecolor="black", capsize=3)
        ax.scatter(x, part.effect, c=colors, zorder=3)
        for xi, eff in zip(x, part.effect):
            if np.isnan(eff):
                ax.annotate("n/a", (xi, 0.0), ha="center", va="bottom", color="tab:gray", fontsize=8)
        ax.axhline(0.0, color="gray", lw=0.8, ls="--")
        ax.set_xlim(-0.5, len(part) - 0.5)  # every rung, also one whose effect is n/a (NaN: no autoscale)
        ax.set_xticks(x, part.cell, fontsize=8, rotation=40, ha="right")
        ax.set_xlabel("rung")
        ax.set_ylabel("effect (mean ± 95% CI over seeds)")
        ax.set_title(f"{claim}: {text}", fontsize=9)
    fig.suptitle("Fidelity ladder: each claim's effect per rung (green CONFIRMED, red not, gray not measurable)",
                 fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path, dpi=130)


def cell_name(rung: str, regime: str, s: Settings) -> str:
    """What a verdict holds in: regime (where the rung has one), rung and optimizer."""
    optimizer = optimizer_of(rung, s)
    return f"{regime} regime, {rung} rung, {optimizer}" if regime != "-" else f"{rung} rung, {optimizer}"


def main(argv: list[str] | None = None) -> int:
    settings, suffix, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "ladder")
    executor = executor_from_args(args)
    df = run_sweep(settings, ResultStore(Path(args.out) / suffix), executor)
    effects = claim_effects(df, settings)
    predicted = sign_predictions(effects)
    for e in effects:
        v = "n/a (not measurable)" if e["ok"] is None else verdict(bool(e["ok"]))
        print(f"[{cell_name(e['rung'], e['regime'], settings)}] {e['claim']} {CLAIMS[e['claim']]}: {v} "
              f"(effect {e['effect']:+.3g} ± {e['ci']:.2g}; {e['note']}; sign predicted by the rung below: "
              f"{predicted[(e['rung'], e['regime'], e['claim'])]})")
    orders = pd.DataFrame(ordering_predictions(df, settings, np.random.default_rng(0)))
    for o in orders.itertuples():
        optimizers = " -> ".join(optimizer_of(cell.split(" (")[0], settings) for cell in (o.source, o.target))
        print(f"[{o.source} -> {o.target}, {optimizers}] the ordering of the methods by {o.metric} at the {o.checkpoint} checkpoint "
              f"is predicted: {verdict(bool(o.predicted))} (Kendall tau {o.tau:+.2f}, 95% CI [{o.lo:+.2f}, {o.hi:+.2f}])")
    figures = Path(args.figures)
    figures.mkdir(parents=True, exist_ok=True)
    table = ladder_table(effects, predicted, settings)
    write_text_atomic(figures / f"ladder_{suffix}.md", f"# Fidelity ladder ({suffix})\n\n{table}\n")
    write_atomic(figures / f"ladder_{suffix}.csv", pd.DataFrame(effects))
    write_atomic(figures / f"ladder_orderings_{suffix}.csv", orders)
    print(f"table: {figures / f'ladder_{suffix}.md'}")
    if not args.no_figures:
        print(f"figure: {effects_figure(effects, figures / f'ladder_{suffix}.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
