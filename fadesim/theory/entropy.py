"""First-order entropy change of a logit-space policy-gradient step on a softmax policy (bandit prompt).

For logits theta and a step theta -> theta + lr g, dH/dlr at 0 is -Cov_{a~pi}(log pi(a), g(a)) (exact
identity; ``derivations/entropy_law.py`` derives it in sympy). For the sampled update of G rollouts,
g = (1/G) sum_i A_i (e_{a_i} - pi), this is

    dH = -(lr / G) sum_i A_i (h(a_i) - c),   h(a) = pi(a) (log pi(a) + H),  c = sum_a pi(a) h(a),

(the entropy mechanism of arXiv 2505.22617 for a finite batch). Averaged over groups with k ~ Binomial(G, p)
correct, with correct rollouts drawn from pi restricted to the correct set C and incorrect ones from the rest:

    E[dH] = -(lr / G) ( sum_k P(k) k A+(k) (h_C - c) + sum_k P(k) (G - k) A-(k) (h_W - c) ),

h_C, h_W the pi-weighted means of h over C and its complement: the first term is driven by the positive
mass, the second by the negative mass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadesim.theory.mass_profile import Profile, binomial_weights

#: A reference bandit prompt for entropy-drift cards: 6 answers, the first two correct (p = 0.6), correct mode.
EXAMPLE_PROBS = np.array([0.45, 0.15, 0.15, 0.1, 0.1, 0.05])
EXAMPLE_LOGITS = np.log(EXAMPLE_PROBS)
EXAMPLE_CORRECT = np.array([True, True, False, False, False, False])


def entropy(logits: np.ndarray) -> float:
    z = logits - logits.max()
    logp = z - np.log(np.exp(z).sum())
    return float(-(np.exp(logp) * logp).sum())


def entropy_gradient_weights(logits: np.ndarray) -> tuple[np.ndarray, float]:
    """h(a) - c for every answer a (so dH = -(lr/G) sum_i A_i (h(a_i) - c)), and c."""
    z = logits - logits.max()
    logp = z - np.log(np.exp(z).sum())
    pi = np.exp(logp)
    H = -(pi * logp).sum()
    h = pi * (logp + H)
    c = float((pi * h).sum())
    return h - c, c


def sampled_step_entropy_change(logits: np.ndarray, actions: np.ndarray, advantages: np.ndarray, lr: float) -> float:
    """First-order dH of the sampled update (1/G) sum_i A_i (e_{a_i} - pi) with step size lr."""
    w, _ = entropy_gradient_weights(logits)
    return float(-lr / len(actions) * np.sum(advantages * w[actions]))


def sampled_step(logits: np.ndarray, actions: np.ndarray, advantages: np.ndarray) -> np.ndarray:
    """The logit update direction g = (1/G) sum_i A_i (e_{a_i} - pi)."""
    z = logits - logits.max()
    pi = np.exp(z) / np.exp(z).sum()
    onehot = np.eye(len(logits))[actions]
    return (advantages[:, None] * (onehot - pi)).mean(axis=0)


@dataclass(frozen=True)
class EntropyDrift:
    total: float  # E[dH] per unit step size
    from_positive: float  # part driven by positive advantages
    from_negative: float  # part driven by negative advantages


def expected_entropy_drift(prof: Profile, logits: Any, correct: Any, lr: float = 1.0) -> EntropyDrift:
    """E[dH] of one step on a bandit prompt (logits over K answers, boolean correct set), split by sign."""
    logits = np.asarray(logits, dtype=float)
    correct = np.asarray(correct, dtype=bool)
    if logits.shape != correct.shape or logits.ndim != 1:
        raise ValueError("logits and correct must be 1-d arrays of the same length (one bandit prompt)")
    if correct.all() or not correct.any():
        raise ValueError("the correct set must be a non-empty proper subset of the answers")
    w, _ = entropy_gradient_weights(logits)
    z = logits - logits.max()
    pi = np.exp(z) / np.exp(z).sum()
    p = float(pi[correct].sum())
    w_correct = float((pi * w)[correct].sum() / p)
    w_wrong = float((pi * w)[~correct].sum() / (1 - p))
    G = prof.G
    P = binomial_weights(p, G)
    kk = np.arange(G + 1)
    a_pos, a_neg = np.nan_to_num(prof.a_pos), np.nan_to_num(prof.a_neg)
    terms = np.stack([kk * a_pos * w_correct, (G - kk) * a_neg * w_wrong])  # (2, G+1)
    signs = np.stack([a_pos, a_neg])
    pos = -lr / G * float(P @ np.where(signs > 0, terms, 0.0).sum(axis=0))
    neg = -lr / G * float(P @ np.where(signs < 0, terms, 0.0).sum(axis=0))
    return EntropyDrift(total=pos + neg, from_positive=pos, from_negative=neg)
