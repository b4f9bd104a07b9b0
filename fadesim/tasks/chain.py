"""Chain task: T-step tabular-softmax "reasoning", each step a softmax over V tokens given (prompt, step,
previous token); reward 1 iff the whole chain equals one of the prompt's C correct sequences.

Like an LLM it has token-level log-probs and entropies; unlike one, its pass rate is exact: the sum over
correct sequences of the product of their step probabilities. Correct sequences use distinct tokens at
every step, so each has its own states, and the initial table puts probability q = p^(1/T) on the
correct continuation at each of a correct path's states (split unevenly over the C first tokens), giving
an initial pass rate of exactly p.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.bandit import P_MIN, P_MIN_ZIPF, check_prior, zipf_shares
from fadesim.tasks.pass_rates import DifficultyDistribution, _rng, as_distribution


@dataclass(frozen=True, eq=False)
class Chain:
    """Task data; parameters {'table': (N, T, V, V)} of logits[n, t, previous token, next token]."""

    table0: np.ndarray  # (N, T, V, V); step 0 reads row previous = 0 (the start state)
    targets: np.ndarray  # (N, C, T) int: the correct sequences
    name: str = "chain"
    #: every training prompt trains at every step (a class constant: not a parameter of this family)
    prompts_per_step: ClassVar[int] = 0

    def evaluated(self) -> None:
        """No prompt is held out: every logged metric averages all of them."""
        return None

    @property
    def n_prompts(self) -> int:
        return self.table0.shape[0]

    @property
    def length(self) -> int:
        return self.table0.shape[1]

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        return {"table": xp.asarray(self.table0, dtype=dtype)}

    def uniform_shape(self, G: int) -> tuple[int, ...]:
        return (self.n_prompts, G, self.length)

    def _step_logp(self, logp_table: Any, t: int, prev: Any, xp: Any) -> Any:
        """log pi(. | n, t, prev) for prev (N, M) -> (N, M, V)."""
        return xp.take_along_axis(logp_table[:, t], prev[:, :, None], axis=1)

    def rollout(self, params: dict[str, Any], u: Any, xp: Any) -> dict[str, Any]:
        logp_table = sp.log_softmax(params["table"], xp)
        N, G = u.shape[0], u.shape[1]
        prev = xp.zeros((N, G), dtype=xp.int32)
        total = xp.zeros((N, G), dtype=logp_table.dtype)
        ent = xp.zeros((N, G), dtype=logp_table.dtype)
        tokens = []
        for t in range(self.length):
            step = self._step_logp(logp_table, t, prev, xp)
            tok = sp.sample_categorical(step, u[:, :, t, None], xp)[..., 0]
            total = total + sp.gather_last(step, tok[..., None], xp)[..., 0]
            ent = ent + sp.entropy(step, xp)
            tokens.append(tok)
            prev = tok
        actions = xp.stack(tokens, axis=-1)
        return {"actions": actions, "logprobs": total, "rewards": self.reward(actions, xp).astype(total.dtype),
                "token_entropy": ent / self.length}

    def reward(self, actions: Any, xp: Any) -> Any:
        targets = xp.asarray(self.targets)
        match = xp.all(actions[:, :, None, :] == targets[:, None, :, :], axis=-1)
        return xp.any(match, axis=-1)  # bool; rollout casts to the policy's dtype

    def logprob(self, params: dict[str, Any], actions: Any, xp: Any) -> Any:
        logp_table = sp.log_softmax(params["table"], xp)
        prev = xp.zeros(actions.shape[:2], dtype=actions.dtype)
        total = 0.0
        for t in range(self.length):
            step = self._step_logp(logp_table, t, prev, xp)
            total = total + sp.gather_last(step, actions[:, :, t:t + 1], xp)[..., 0]
            prev = actions[:, :, t]
        return total

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        """d/dtable of (1/N) sum_n (1/G) sum_i w_ni log pi(chain_ni | n)."""
        logp_table = sp.log_softmax(params["table"], xp)
        N, G, T = actions.shape
        V = logp_table.shape[-1]
        prev = xp.zeros((N, G), dtype=actions.dtype)
        grads = []
        for t in range(T):
            probs = xp.exp(self._step_logp(logp_table, t, prev, xp))
            diff = sp.one_hot(actions[:, :, t], V, probs.dtype, xp) - probs
            at_prev = sp.one_hot(prev, V, probs.dtype, xp) * weights[..., None]
            grads.append(xp.einsum("ngp,ngv->npv", at_prev, diff) / (G * N))
            prev = actions[:, :, t]
        return {"table": xp.stack(grads, axis=1)}

    def exact(self, params: dict[str, Any], xp: Any, floor: float = 0.01) -> dict[str, Any]:
        table = params["table"]
        logp_table = sp.log_softmax(table, xp)
        targets = xp.asarray(self.targets)
        N, C, T = self.targets.shape
        prev = xp.zeros((N, C), dtype=targets.dtype)
        path = 0.0
        for t in range(T):
            step = self._step_logp(logp_table, t, prev, xp)
            path = path + sp.gather_last(step, targets[:, :, t:t + 1], xp)[..., 0]
            prev = targets[:, :, t]
        seq_probs = xp.exp(path)  # (N, C)
        # expected token entropy along the policy's own trajectories: visitation d_t(prev) forward
        V = table.shape[-1]
        visit = (xp.arange(V) == 0).astype(table.dtype)[None, :] * xp.ones((N, 1), dtype=table.dtype)
        ent = 0.0
        for t in range(T):
            probs_t = xp.exp(logp_table[:, t])  # (N, V_prev, V_next)
            ent = ent + xp.sum(visit * sp.entropy(logp_table[:, t], xp), axis=-1)
            visit = xp.einsum("np,npv->nv", visit, probs_t)
        centred = table - xp.mean(table, axis=-1, keepdims=True)
        return {
            "pass_rate": xp.sum(seq_probs, axis=-1),
            "entropy": ent / T,
            "distinct_correct": xp.sum((seq_probs > floor).astype(table.dtype), axis=-1),
            "correct_entropy": sp.restricted_entropy(seq_probs, xp.ones(seq_probs.shape, dtype=bool), xp),
            "logit_norm": xp.sqrt(xp.sum(centred * centred, axis=(1, 2, 3))),
        }

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        return {}


def make_chain(
    n_prompts: int = 64,
    length: int = 4,
    vocab: int = 8,
    n_correct: int = 3,
    difficulty: DifficultyDistribution | str = "mixed",
    *,
    spread: float | None = None,
    prior: str = "normal",
    zipf_exponent: float = 1.0,
    seed: int = 0,
) -> Chain:
    """A chain task of ``length`` T steps over ``vocab`` V tokens with C correct sequences per prompt.

    ``prior`` "normal": the C correct sequences share the pass rate by lognormal weights (``spread``, default
    1.0) and every other next-token distribution is softmax(spread * z). "zipf": the correct sequences share it
    by a Zipf law (rank^-zipf_exponent, random order), and every next-token distribution off the correct paths
    is a Zipf law over its tokens (random order), so the wrong sequences have a long tail too.
    """
    N = sp.check_positive_int(n_prompts, "n_prompts")
    T = sp.check_positive_int(length, "length (T)")
    V = sp.check_positive_int(vocab, "vocab (V)", minimum=2)
    C = sp.check_positive_int(n_correct, "n_correct (C)")
    if C >= V:
        raise ValueError(f"n_correct (C = {C}) must be smaller than vocab (V = {V})")
    spread = check_prior(prior, zipf_exponent, spread)
    rng = _rng(seed)
    p_min = P_MIN_ZIPF if prior == "zipf" else P_MIN
    p = np.clip(as_distribution(difficulty).sample(rng, N), p_min, 1.0 - p_min)
    q = p ** (1.0 / T)
    targets = np.stack([np.stack([rng.choice(V, size=C, replace=False) for _ in range(T)], axis=-1)
                        for _ in range(N)])  # (N, C, T)
    if prior == "zipf":  # every row a Zipf law over its V tokens, in a random order
        noise = np.log(np.stack([zipf_shares(V, zipf_exponent, rng) for _ in range(N * T * V)]).reshape(N, T, V, V))
    else:
        noise = spread * rng.standard_normal((N, T, V, V))
    table = noise.copy()

    def set_row(n: int, t: int, prev: int, favoured: np.ndarray, mass: np.ndarray) -> None:
        others = np.ones(V, dtype=bool)
        others[favoured] = False
        e = np.exp(noise[n, t, prev] - noise[n, t, prev].max()) * others
        probs = (1.0 - mass.sum()) * e / e.sum()
        probs[favoured] = mass
        table[n, t, prev] = np.log(probs)

    for n in range(N):
        share = zipf_shares(C, zipf_exponent, rng) if prior == "zipf" else np.exp(spread * rng.standard_normal(C))
        set_row(n, 0, 0, targets[n, :, 0], q[n] * share / share.sum())
        for t in range(1, T):
            for c in range(C):
                set_row(n, t, targets[n, c, t - 1], targets[n, c, t:t + 1], np.array([q[n]]))
    return Chain(table0=table, targets=targets)
