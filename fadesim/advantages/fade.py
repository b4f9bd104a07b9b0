"""FADE: Focal Advantage with Dynamic Entropy (arXiv 2607.01490), built by composition.

FADE = focal difficulty weight x sign weights x a group-relative base advantage, with both
weights scheduled by the entropy ratio eta = H_t / H_0 that the trainer supplies in ``signals``
(the advantage keeps no state). Our reconstruction (DESIGN.md section 5): the paper's exact
schedule constants are not public to us; the defaults were refined by ``experiments/phase_shift.py``
(see ``fade``'s docstring) and are compared and ablated by ``experiments/fade_vs_static.py``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import array_api_compat

from fadesim._validate import CORRECT_THRESHOLD, prepare_group_batch, require_signal
from fadesim.advantages import group_statistics as gs
from fadesim.advantages.group import grpo_of_batch
from fadesim.advantages.domains import NON_NEGATIVE, REAL
from fadesim.advantages.registry import register
from fadesim.advantages.weighting import focal_weight, sign_weight


class FadeWeights(NamedTuple):
    gamma: Any  # focal exponent
    lam_pos: Any  # weight of positive advantages
    lam_neg: Any  # weight of negative advantages


def entropy_ratio(signals: Any, like: Any, *, name: str = "fade") -> Any:
    """eta = clip(H / H0, 0, 1) from ``signals['entropy']`` and ``signals['initial_entropy']``.

    Returned as a 0-d array of ``like``'s namespace, dtype and device (works on traced jax values).
    H0 <= 0 (a deterministic initial policy) gives eta = 1.
    """
    xp = array_api_compat.array_namespace(like)
    device = array_api_compat.device(like)

    def scalar(v: Any) -> Any:
        return xp.asarray(v, dtype=like.dtype, device=device)

    h = scalar(require_signal(signals, "entropy", name=name))
    h0 = scalar(require_signal(signals, "initial_entropy", name=name))
    one = xp.ones_like(h0)
    eta = xp.where(h0 > 0, h / xp.where(h0 > 0, h0, one), one)
    return xp.minimum(xp.maximum(eta, xp.zeros_like(eta)), one)


def fade_schedule(
    eta: Any,
    *,
    gamma_explore: float,
    gamma_exploit: float,
    lam_neg_explore: float,
    lam_neg_exploit: float,
) -> FadeWeights:
    """Linear schedule in eta: eta = 1 (start, high entropy) -> explore values; eta -> 0 -> exploit values.

    gamma_t = gamma_exploit + (gamma_explore - gamma_exploit) eta,
    lam_neg_t = lam_neg_exploit + (lam_neg_explore - lam_neg_exploit) eta, lam_pos_t = 1.
    """
    gamma = gamma_exploit + (gamma_explore - gamma_exploit) * eta
    lam_neg = lam_neg_exploit + (lam_neg_explore - lam_neg_exploit) * eta
    return FadeWeights(gamma=gamma, lam_pos=1.0, lam_neg=lam_neg)


@register(
    "fade",
    paper="2607.01490",
    title="Don't Let Gains FADE (2026)",
    needs_signals=("entropy", "initial_entropy"),
    min_group_size=2,
    domains={"gamma_explore": NON_NEGATIVE, "gamma_exploit": NON_NEGATIVE, "lam_neg_explore": NON_NEGATIVE,
             "lam_neg_exploit": NON_NEGATIVE, "eps": NON_NEGATIVE, "threshold": REAL},
    group_std=True,
)
def fade(
    rewards: Any,
    *,
    mask: Any = None,
    signals: Any = None,
    gamma_explore: float = 0.0,
    gamma_exploit: float = 0.0,
    lam_neg_explore: float = 0.25,
    lam_neg_exploit: float = 0.75,
    eps: float = 1e-6,
    threshold: float = CORRECT_THRESHOLD,
    logprobs: Any = None,
) -> Any:
    """FADE: A_i = (1 - p_hat)^gamma_t * (lam_pos_t [A_i > 0] + lam_neg_t [A_i < 0]) * A_i^GRPO.

    Shapes: rewards, mask (..., G) -> (..., G); signals a mapping with scalar 'entropy' (current,
    smoothed policy entropy) and 'initial_entropy'. Formula (arXiv 2607.01490, section "FADE"; our
    reconstruction, see module docstring): eta = clip(H/H0, 0, 1), gamma_t and lam_neg_t linear in eta
    (``fade_schedule``), from the explore values at eta = 1 to the exploit values as eta -> 0.

    Defaults, refined by ``experiments/phase_shift.py --full`` as it was then (toy tasks, per-logit Adam, 8 seeds;
    static settings started from the same early and late states of a bandit and a linear-softmax task, judged by
    pass@1 progress per step; today's 16-seed run picks the same settings on its tuning seeds in its toy / adam
    cells, and other ones under adam_shared and in the llm regime: paper_figures/README.md): the focal
    exponent helped in neither phase (gamma = 0 best in all four task x phase cells), and the best negative
    weight *rose* from the early to the late phase (bandit 0.1 -> 0.5, linear-softmax 0.75 -> 1.0). So the
    default schedule suppresses negatives while entropy is high (lam_neg = 0.25) and restores them as it falls
    (lam_neg -> 0.75), with no focal weight. This is the reverse of the DESIGN.md section 5 direction
    (explore: balanced, gamma = 2; exploit: lam_neg = 0.25, gamma = 0), which is kept as the comparison variant
    ``fade_design`` in ``experiments/fade_vs_static.py``: pass gamma_explore=2, lam_neg_explore=1,
    lam_neg_exploit=0.25. Mean-centred only while lam_neg_t = 1. All-equal groups give exactly 0.
    """
    batch = prepare_group_batch(rewards, mask, name="fade", min_group_size=2)
    base = grpo_of_batch(batch, eps=eps)
    eta = entropy_ratio(signals, base)
    w = fade_schedule(
        eta,
        gamma_explore=gamma_explore,
        gamma_exploit=gamma_exploit,
        lam_neg_explore=lam_neg_explore,
        lam_neg_exploit=lam_neg_exploit,
    )
    weighted = focal_weight(gs.fail_rate(batch, threshold), w.gamma, batch.xp) * sign_weight(
        base, w.lam_pos, w.lam_neg, batch.xp
    )
    return gs.finish(weighted, batch)
