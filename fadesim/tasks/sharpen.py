"""Shared-sharpening task: logits(n, a) = (1 + c s) l0(n, a) + theta(n, a), one sharpness s shared by every prompt.

``l0`` are a bandit's initial logits (so the initial policy is exactly ``make_bandit``'s, with the requested
difficulty distribution); ``theta`` (N, K) are per-prompt logits that start at 0 (``tabular=False`` freezes them);
``s`` is one scalar, the shared inverse-temperature knob, that starts at 0. ``c`` (``sharpen_scale``) sets how far
one unit of s sharpens, i.e. how fast the shared direction learns next to the per-prompt one under SGD (Adam's
per-entry step is scale-free, so under ``adam`` c is the ratio of the two speeds directly).

Why it can cross (the mechanism, checked in ``tests/test_sharpen.py`` and ``derivations/sharpen_crossing.py``):
d log pi(a | n) / ds = c (l0(n, a) - E_pi[l0(n, .)]), so the expected policy gradient on s is
c sum_n p_n (E_pi[l0 | correct] - E_pi[l0]) for any advantage that equals a constant shift of the reward within a
group (PSR, NSR, W-REINFORCE and REINFORCE all have this same first-order drift; GRPO's is the same per prompt up to
its 1 / std scale). On a prompt whose correct answers are likelier than its average answer (an easy prompt) the
term is positive; on one whose correct answers sit in the tail (a hard prompt, p_n small) it is negative but
weighted by p_n. When easy prompts dominate, s grows and every prompt sharpens toward its own mode: the easy ones
gain, the hard ones, whose correct answers are in the tail, lose. That is the pass@k crossover (2504.13837,
2506.01347): pass@1 rises, pass@k at large k falls below the base. The per-prompt theta is what differs between
the signs: an all-wrong group gives theta a zero update under GRPO and PSR and a push away from the sampled wrong
answers (toward the correct ones, in proportion to their probability) under NSR, which with a per-entry normaliser
moves a hard prompt's logits at full step every step (see ``fadesim.sim.optim``).

The exact metrics are the bandit's (pass rate, entropy, diversity from the logits); ``sharpness`` (1 + c s) is
logged as its geometry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadesim.tasks.bandit import Bandit, make_bandit
from fadesim.tasks.difficulty import DifficultyDistribution


@dataclass(frozen=True, eq=False)
class Sharpen(Bandit):
    """Bandit data; parameters {'s': (), 'theta': (N, K)} (``tabular``) or {'s': ()}."""

    sharpen_scale: float = 1.0
    tabular: bool = True
    name: str = "sharpen"

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        params = {"s": xp.zeros((), dtype=dtype)}
        if self.tabular:
            params["theta"] = xp.zeros(self.logits0.shape, dtype=dtype)
        return params

    def logits(self, params: dict[str, Any], xp: Any) -> Any:
        s = params["s"]
        out = (1.0 + self.sharpen_scale * s) * xp.asarray(self.logits0, dtype=s.dtype)
        return out + params["theta"] if self.tabular else out

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        dlogits = self.logit_gradient(params, actions, weights, xp)
        l0 = xp.asarray(self.logits0, dtype=dlogits.dtype)
        grads = {"s": self.sharpen_scale * xp.sum(dlogits * l0)}
        if self.tabular:
            grads["theta"] = dlogits
        return grads

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        return {"sharpness": 1.0 + self.sharpen_scale * params["s"]}


def make_sharpen(
    n_prompts: int = 128,
    n_answers: int = 16,
    n_correct: int = 3,
    difficulty: DifficultyDistribution | str = "mixed",
    *,
    sharpen_scale: float = 1.0,
    tabular: bool = True,
    spread: float | None = None,
    prior: str = "normal",
    zipf_exponent: float = 1.0,
    seed: int = 0,
) -> Sharpen:
    """A shared-sharpening task whose initial policy equals ``make_bandit``'s (same arguments and seed)."""
    if not (isinstance(sharpen_scale, (int, float)) and not isinstance(sharpen_scale, bool)
            and np.isfinite(sharpen_scale) and sharpen_scale >= 0):
        raise ValueError(f"sharpen_scale must be a finite number >= 0; got {sharpen_scale!r}")
    if not isinstance(tabular, (bool, np.bool_)):
        raise ValueError(f"tabular must be True or False; got {tabular!r}")
    base = make_bandit(n_prompts, n_answers, n_correct, difficulty, spread=spread, prior=prior,
                       zipf_exponent=zipf_exponent, seed=seed)
    if not tabular and sharpen_scale == 0:
        raise ValueError("sharpen_scale = 0 with tabular=False leaves nothing to train")
    return Sharpen(logits0=base.logits0, correct=base.correct, sharpen_scale=float(sharpen_scale),
                   tabular=bool(tabular))


__all__ = ["Sharpen", "make_sharpen"]
