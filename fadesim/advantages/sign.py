"""Sign-axis advantages: PSR, NSR, W-REINFORCE and the asymmetric baseline.

They move gradient mass between correct and incorrect rollouts (the sign axis of
arXiv 2607.01490). Shapes: ``(..., G)`` in, same shape out, masked entries 0.
A rollout is correct when its reward exceeds ``threshold`` (0.5 for 0/1 rewards).
"""

from __future__ import annotations

from typing import Any

from fadesim._validate import CORRECT_THRESHOLD, prepare_group_batch
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.registry import register

_ZHU = "The surprising effectiveness of negative reinforcement (Zhu et al., 2025)"


def _two_valued(rewards: Any, mask: Any, *, name: str, positive: Any, negative: Any, threshold: float) -> Any:
    """A+ = positive on correct rollouts, A- = negative on the others (values may be traced scalars)."""
    batch = prepare_group_batch(rewards, mask, name=name)
    xp = batch.xp
    good = gs.correct(batch, threshold)
    ones = xp.ones_like(batch.rewards)
    return gs.finish(xp.where(good, positive * ones, negative * ones), batch)


@register("psr", paper="2506.01347", title=_ZHU, binary_only=True)
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


@register("nsr", paper="2506.01347", title=_ZHU, binary_only=True)
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


@register("w_reinforce", paper="2506.01347", title=_ZHU, binary_only=True)
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
          binary_only=True)
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
    """
    if isinstance(balance, (int, float)) and not -1.0 <= balance <= 1.0:
        raise ValueError(f"sign_balanced: balance must lie in [-1, 1]; got {balance}")
    return _two_valued(rewards, mask, name="sign_balanced", positive=1.0 + balance, negative=-(1.0 - balance),
                       threshold=threshold)
