"""Sign-axis advantages: PSR, NSR, W-REINFORCE and the asymmetric baseline.

They move gradient mass between correct and incorrect rollouts (the sign axis of
arXiv 2607.01490). Shapes: ``(..., G)`` in, same shape out, masked entries 0.
A rollout is correct when its reward exceeds ``threshold`` (0.5 for 0/1 rewards).
"""

from __future__ import annotations

from typing import Any

from fadesim._validate import CORRECT_THRESHOLD, prepare_group_batch
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.group import grpo_of_batch
from fadesim.advantages.domains import NON_NEGATIVE, REAL, SIGNED_UNIT, Choice
from fadesim.advantages.registry import register

_ZHU = "The surprising effectiveness of negative reinforcement (Zhu et al., 2025)"


def _two_valued(rewards: Any, mask: Any, *, name: str, positive: Any, negative: Any, threshold: float) -> Any:
    """A+ = positive on correct rollouts, A- = negative on the others (values may be traced scalars)."""
    batch = prepare_group_batch(rewards, mask, name=name)
    xp = batch.xp
    good = gs.correct(batch, threshold)
    ones = xp.ones_like(batch.rewards)
    return gs.finish(xp.where(good, positive * ones, negative * ones), batch)


@register("psr", paper="2506.01347", title=_ZHU, binary_only=True, domains={"threshold": REAL})
def psr(
    rewards: Any,
    *,
    mask: Any = None,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Positive Sample Reinforcement: train on correct rollouts only, A+ = 1, A- = 0.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2506.01347, +-1 rewards): the PSR objective
    keeps the r = +1 terms of REINFORCE, so A_i = [r_i correct]. Sign balance +1 by construction.
    """
    return _two_valued(rewards, mask, name="psr", positive=1.0, negative=0.0, threshold=threshold)


@register("nsr", paper="2506.01347", title=_ZHU, binary_only=True, domains={"threshold": REAL})
def nsr(
    rewards: Any,
    *,
    mask: Any = None,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Negative Sample Reinforcement: train on incorrect rollouts only, A+ = 0, A- = -1.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2506.01347): the NSR objective keeps the
    r = -1 terms of REINFORCE, so A_i = -[r_i incorrect]. Sign balance -1 by construction.
    """
    return _two_valued(rewards, mask, name="nsr", positive=0.0, negative=-1.0, threshold=threshold)


@register("w_reinforce", paper="2506.01347", title=_ZHU, binary_only=True,
          domains={"lam": NON_NEGATIVE, "threshold": REAL})
def w_reinforce(
    rewards: Any,
    *,
    mask: Any = None,
    lam: float = 0.1,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Weighted REINFORCE: lam * PSR + NSR, so A+ = lam, A- = -1.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2506.01347, eq. for W-REINFORCE): the objective
    lam * L_PSR + L_NSR; the paper recommends lam = 0.1. lam = 1 is REINFORCE with +-1 rewards;
    lam = 0 is NSR; lam -> infinity (rescaled) is PSR. ``lam`` may be a traced array (sweeps).
    """
    return _two_valued(rewards, mask, name="w_reinforce", positive=lam, negative=-1.0, threshold=threshold)


@register(
    "asymmetric",
    paper="2506.20520",
    title="Asymmetric REINFORCE (Arnal et al., 2025)",
    min_group_size=2,
    domains={"delta": REAL},
)
def asymmetric(
    rewards: Any,
    *,
    mask: Any = None,
    delta: float = 0.1,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """Asymmetric REINFORCE: baseline V - delta with V the group mean, A = r - mean r + delta.

    Shapes: (..., G) -> (..., G). Formula (arXiv 2506.20520): the policy gradient with baseline
    V - delta; delta > 0 lowers the baseline and shifts mass towards positive advantages, delta < 0
    towards negative ones. Per group the advantages sum to n * delta (not mean-centred).
    All-equal groups give exactly delta on every valid rollout.
    """
    batch = prepare_group_batch(rewards, mask, name="asymmetric", min_group_size=2)
    return gs.finish(gs.centred(batch) + delta, batch)


@register("sign_balanced", paper="2607.01490", title="Sign-axis sweep at fixed mass (after Zhu et al., 2506.01347)",
          binary_only=True, domains={"balance": SIGNED_UNIT, "threshold": REAL})
def sign_balanced(
    rewards: Any,
    *,
    mask: Any = None,
    balance: float = 0.0,
    threshold: float = CORRECT_THRESHOLD,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """The sign axis at (nearly) fixed total mass: A+ = 1 + b, A- = -(1 - b), b = ``balance`` in [-1, 1].

    Shapes: (..., G) -> (..., G). The sign-weighting of the +-1 REINFORCE advantage (arXiv 2506.01347)
    parametrised as in arXiv 2607.01490's sign axis: b = -1 is 2 x NSR, b = 0 is REINFORCE with +-1
    rewards, b = +1 is 2 x PSR. Unlike W-REINFORCE's lam (which also rescales the total mass), b moves
    mass between signs while a group's total mass G + b (2k - G) stays G at p = 1/2.

    b = 0 has **no baseline**: it is +-1 REINFORCE, so an all-wrong group still gets A = -1 on every rollout
    and an all-correct group +1 (the policy random-walks on prompts it never solves). For the sign axis
    around a mean-centred baseline (b = 0 is GRPO or Dr.GRPO exactly) use ``sign_scaled``.
    """
    return _two_valued(rewards, mask, name="sign_balanced", positive=1.0 + balance, negative=-(1.0 - balance),
                       threshold=threshold)


@register("sign_scaled", paper="2607.01490",
          title="Sign-axis sweep around a mean-centred baseline (arXiv 2607.01490's m_S / m_F weighting)",
          scale_invariant=True, min_group_size=2,
          domains={"balance": SIGNED_UNIT, "base": Choice(("grpo", "dr_grpo")), "eps": NON_NEGATIVE},
          group_std=lambda p: p["base"] == "grpo")
def sign_scaled(
    rewards: Any,
    *,
    mask: Any = None,
    balance: float = 0.0,
    base: str = "grpo",
    eps: float = 1e-6,
    signals: Any = None,
    logprobs: Any = None,
) -> Any:
    """The sign axis as a reweighting of a mean-centred advantage: A = (1 + b) max(A_base, 0) + (1 - b) min(A_base, 0).

    Shapes: (..., G) -> (..., G). ``base`` is "grpo" (A_base = (r - mean r) / (std r + eps), arXiv 2402.03300)
    or "dr_grpo" (A_base = r - mean r, arXiv 2503.20783); b = ``balance`` in [-1, 1] scales the positive
    gradient mass m_S by (1 + b) and the negative mass m_F by (1 - b) (arXiv 2607.01490's sign axis). b = 0 is
    the base advantage exactly; b = +1 doubles the positive part and drops the negative part; b = -1 the
    reverse. Unlike ``sign_balanced`` every b keeps the base's baseline, so all-correct and all-wrong groups
    give exactly 0 at every b (no random walk of unsolved prompts). Groups of one valid rollout give 0 (no
    baseline), as the base does. ``balance`` may be a traced array (sweeps). The registry's declared
    scale invariance is that of the default base (grpo); with base="dr_grpo" the advantage scales with r.
    """
    batch = prepare_group_batch(rewards, mask, name="sign_scaled", min_group_size=2)
    xp = batch.xp
    a = grpo_of_batch(batch, eps=eps, scale="group" if base == "grpo" else "none")
    zero = xp.zeros_like(a)
    return gs.finish((1.0 + balance) * xp.maximum(a, zero) + (1.0 - balance) * xp.minimum(a, zero), batch)
