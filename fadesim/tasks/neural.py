"""Neural rung: an autoregressive policy whose weights every prompt, position and token share.

The policy writes T output tokens from a vocabulary of V for a prompt of T tokens. At output position t,
with previous output token y_{t-1} (a learned start vector at t = 0), its input is

    x(n, t, y_{t-1}) = sum_l E_in[l, prompt_n[l]] + E_pos[t] + E_prev[y_{t-1}]          (width d)

followed by one tanh hidden layer of width H and an unembedding: logits = tanh(x W1 + b1) U + c. The reward is
verifiable on the whole sequence: 1 iff the output equals the rule's answer for the prompt:

- ``modsum``: the running sum modulo V, y_t = (prompt_0 + ... + prompt_t) mod V (the next token needs the
  previous one and the prompt token at t: a nonlinear function the hidden layer must learn);
- ``copy``: y_t = prompt_t; ``reverse``: y_t = prompt_{T-1-t}.

Unlike the bandit, linear-softmax and chain tasks, a gradient step for one prompt moves every other prompt's
distribution (the embeddings, W1 and U are shared), which is what an LLM's update does.

Exact metrics for any V^T: the next-token distribution depends only on (prompt, t, previous token), so the
policy is a Markov chain whose (N, T, V, V) logits table the network computes in one pass; pass rate, the
expected token entropy along the policy's own trajectories and the rest are then the chain task's exact
formulas (``fadesim.tasks.chain``), with no enumeration of the V^T sequences and no sampling. Rollouts,
log-probs and the score are the chain's on that table; the score is back-propagated through the network by
hand (written once for numpy and jax.numpy, so the numpy reference runs the same step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.chain import Chain
from fadesim.tasks.pass_rates import _rng

RULES = ("modsum", "copy", "reverse")
MAX_VOCAB, MAX_LENGTH = 1024, 32
#: the network's parameters (``init_params`` keys); the task holds their initial values as ``<name>0``
PARAMS = ("enc", "pos", "prev", "start", "W1", "b1", "U", "c")


def answer(prompts: np.ndarray, rule: str, vocab: int) -> np.ndarray:
    """(N, T) int: the rule's correct output for each prompt."""
    if rule == "modsum":
        return np.cumsum(prompts, axis=1) % vocab
    if rule == "copy":
        return prompts.copy()
    if rule == "reverse":
        return prompts[:, ::-1].copy()
    raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")


@dataclass(frozen=True, eq=False)
class Neural:
    """Task data: the prompts, the correct outputs and the network's initial weights (shared by all prompts)."""

    prompts: np.ndarray  # (N, T) int tokens in [0, V)
    targets: np.ndarray  # (N, 1, T) int: the one correct output per prompt
    enc0: np.ndarray  # (T, V, d) position-specific prompt-token embeddings
    pos0: np.ndarray  # (T, d) output-position embeddings
    prev0: np.ndarray  # (V, d) previous-output-token embeddings
    start0: np.ndarray  # (d,) the previous-token input at t = 0
    W10: np.ndarray  # (d, H)
    b10: np.ndarray  # (H,)
    U0: np.ndarray  # (H, V) unembedding
    c0: np.ndarray  # (V,)
    name: str = "neural"
    #: every training prompt trains at every step (a class constant: not a parameter of this family)
    prompts_per_step: ClassVar[int] = 0

    def evaluated(self) -> None:
        """No prompt is held out: every logged metric averages all of them."""
        return None

    @property
    def n_prompts(self) -> int:
        return self.prompts.shape[0]

    @property
    def length(self) -> int:
        return self.prompts.shape[1]

    @property
    def vocab(self) -> int:
        return self.U0.shape[1]

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        return {k: xp.asarray(getattr(self, k + "0"), dtype=dtype) for k in PARAMS}

    def uniform_shape(self, G: int) -> tuple[int, ...]:
        return (self.n_prompts, G, self.length)

    # ------------------------------------------------------------------ the network
    def _inputs(self, params: dict[str, Any], xp: Any) -> Any:
        """x (N, T, V, d): the input at every (prompt, output position, previous token)."""
        T = self.length
        enc = xp.sum(params["enc"][xp.arange(T)[None, :], xp.asarray(self.prompts)], axis=1)  # (N, d)
        first = (xp.arange(T) == 0)[:, None, None]  # (T, 1, 1)
        prev = xp.where(first, params["start"][None, None, :], params["prev"][None, :, :])  # (T, V, d)
        return enc[:, None, None, :] + params["pos"][None, :, None, :] + prev[None, :, :, :]

    def _forward(self, params: dict[str, Any], xp: Any) -> tuple[Any, Any, Any]:
        x = self._inputs(params, xp)
        h = xp.tanh(x @ params["W1"] + params["b1"])
        return x, h, h @ params["U"] + params["c"]

    def logits_table(self, params: dict[str, Any], xp: Any) -> Any:
        """(N, T, V, V): logits[n, t, previous token, next token] (row 0 at t = 0: the start state)."""
        return self._forward(params, xp)[2]

    def _as_chain(self) -> Chain:
        """A chain of this task's length and targets; its methods run on a table passed as params (the
        network's logits), so its own table is empty (only its shape's T is read)."""
        return Chain(table0=np.empty((0, self.length, 0, 0)), targets=self.targets)

    def _chain(self, params: dict[str, Any], xp: Any) -> tuple[Chain, dict[str, Any]]:
        return self._as_chain(), {"table": self.logits_table(params, xp)}

    # ------------------------------------------------------------------ the task interface
    def rollout(self, params: dict[str, Any], u: Any, xp: Any) -> dict[str, Any]:
        chain, table = self._chain(params, xp)
        return chain.rollout(table, u, xp)

    def reward(self, actions: Any, xp: Any) -> Any:
        return self._as_chain().reward(actions, xp)

    def logprob(self, params: dict[str, Any], actions: Any, xp: Any) -> Any:
        chain, table = self._chain(params, xp)
        return chain.logprob(table, actions, xp)

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        """d/dparams of (1/N) sum_n (1/G) sum_i w_ni log pi(y_ni | n): the chain's score on the logits table,
        back-propagated through the network."""
        x, h, logits = self._forward(params, xp)
        g_logits = self._as_chain().score({"table": logits}, actions, weights, xp)["table"]  # (N, T, V, V)
        g_h = g_logits @ xp.transpose(params["U"])
        g_pre = g_h * (1.0 - h * h)
        g_x = g_pre @ xp.transpose(params["W1"])  # (N, T, V, d)
        T, V = self.length, self.vocab
        g_enc_n = xp.sum(g_x, axis=(1, 2))  # (N, d)
        onehot = sp.one_hot(xp.asarray(self.prompts), V, g_x.dtype, xp)  # (N, T, V)
        g_prev_t = xp.sum(g_x, axis=0)  # (T, V, d)
        later = (xp.arange(T) > 0).astype(g_x.dtype)[:, None, None]
        return {
            "enc": xp.einsum("nlv,nd->lvd", onehot, g_enc_n),
            "pos": xp.sum(g_x, axis=(0, 2)),
            "prev": xp.sum(g_prev_t * later, axis=0),
            "start": xp.sum(g_prev_t[0], axis=0),
            "W1": xp.einsum("ntpd,ntph->dh", x, g_pre),
            "b1": xp.sum(g_pre, axis=(0, 1, 2)),
            "U": xp.einsum("ntph,ntpv->hv", h, g_logits),
            "c": xp.sum(g_logits, axis=(0, 1, 2)),
        }

    def exact(self, params: dict[str, Any], xp: Any, floor: float = 0.01) -> dict[str, Any]:
        """The chain's exact metrics on the network's logits table (``logit_norm``: of the centred table)."""
        chain, table = self._chain(params, xp)
        return chain.exact(table, xp, floor)

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        """The shared weights: their overall norm and the effective rank of the unembedding."""
        s = xp.linalg.svd(params["U"], compute_uv=False)
        return {"weight_norm": xp.sqrt(sum(xp.sum(params[k] ** 2) for k in PARAMS)),
                "effective_rank": sp.effective_rank(s, xp)}


def make_neural(
    n_prompts: int = 512,
    length: int = 3,
    vocab: int = 8,
    *,
    width: int = 64,
    hidden: int | None = None,
    rule: str = "modsum",
    init_scale: float = 1.0,
    seed: int = 0,
) -> Neural:
    """The neural rung: ``n_prompts`` random prompts of ``length`` T tokens from ``vocab`` V, the network's
    embeddings of ``width`` d, a hidden layer of ``hidden`` H (default d), and ``rule`` for the answer.

    Weights are Gaussian: embeddings with variance 1 / (T + 2) (so an input has unit variance per entry),
    W1 with variance 1 / d, U with variance init_scale^2 / H, biases 0. At init the policy is close to
    uniform, so pass rates start near V^-T and differ between prompts through the random weights.
    """
    N = sp.check_positive_int(n_prompts, "n_prompts")
    T = sp.check_positive_int(length, "length (T)")
    V = sp.check_positive_int(vocab, "vocab (V)", minimum=2)
    d = sp.check_positive_int(width, "width (d)")
    H = sp.check_positive_int(d if hidden is None else hidden, "hidden (H)")
    if V > MAX_VOCAB:
        raise ValueError(f"vocab (V = {V}) must be at most {MAX_VOCAB}: the logits table is (N, T, V, V)")
    if T > MAX_LENGTH:
        raise ValueError(f"length (T = {T}) must be at most {MAX_LENGTH}")
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")
    if not (np.isfinite(init_scale) and init_scale > 0):
        raise ValueError(f"init_scale must be a positive number; got {init_scale}")
    rng = _rng(seed)
    prompts = rng.integers(0, V, size=(N, T))
    emb = 1.0 / np.sqrt(T + 2)
    return Neural(
        prompts=prompts, targets=answer(prompts, rule, V)[:, None, :],
        enc0=emb * rng.standard_normal((T, V, d)), pos0=emb * rng.standard_normal((T, d)),
        prev0=emb * rng.standard_normal((V, d)), start0=emb * rng.standard_normal(d),
        W10=rng.standard_normal((d, H)) / np.sqrt(d), b10=np.zeros(H),
        U0=init_scale * rng.standard_normal((H, V)) / np.sqrt(H), c0=np.zeros(V))
