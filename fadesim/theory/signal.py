"""The difficulty-axis trade-off in closed form: gradient signal on the correct answers vs its noise and ESS.

Abstraction (two-answer softmax per prompt: the correct set as one logit theta, pass rate p = sigmoid(theta)):
a group with k correct moves theta by g = (1/G) ((1 - p) k A+(k) - p (G - k) A-(k)); its expectation is the
*signal* S(p) and its variance the *noise*. Under a difficulty distribution p ~ Beta(a, b) the curve over the
focal exponent gamma reports the total signal, the share of it on hard prompts (p < hard), the batch SNR and
the ESS per group: hard focus puts the signal on hard prompts but concentrates mass on fewer groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from fadesim.theory.mass_profile import Profile, profile


def group_update(prof: Profile, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E[g | p] and E[g^2 | p] of the correct-logit update, exact sums over k ~ Binomial(G, p)."""
    p = np.asarray(p, dtype=float)
    G = prof.G
    kk = np.arange(G + 1)
    a_pos, a_neg = np.nan_to_num(prof.a_pos), np.nan_to_num(prof.a_neg)
    g = ((1 - p[..., None]) * kk * a_pos - p[..., None] * (G - kk) * a_neg) / G  # (..., G+1)
    w = stats.binom.pmf(kk, G, p[..., None])
    return (w * g).sum(-1), (w * g * g).sum(-1)


@dataclass(frozen=True)
class SignalSummary:
    signal: float  # E[g]
    hard_signal: float  # E[g ; p < hard]
    hard_share: float  # hard_signal / signal
    noise: float  # sd of g over groups
    snr: float  # signal / noise (per group; a batch of N groups has sqrt(N) times this)
    ess_fraction: float  # (E m)^2 / E m^2 of the groups' masses


def signal_under_beta(prof: Profile, a: float, b: float, hard: float = 0.25, nodes: int = 400) -> SignalSummary:
    """Integrate E[g | p] over p ~ Beta(a, b) by Gauss-Jacobi quadrature (exact for the Beta weight)."""
    # p = (1 + x)/2 maps Beta(a, b) to the Jacobi weight (1 - x)^(b-1) (1 + x)^(a-1) on [-1, 1]
    x, wq = special.roots_jacobi(nodes, b - 1.0, a - 1.0)
    pq = (1.0 + x) / 2.0
    wq = wq / wq.sum()
    mean_g, mean_g2 = group_update(prof, pq)
    # hard part: the indicator is discontinuous, so integrate on [0, hard] with the Beta density
    xl, wl = np.polynomial.legendre.leggauss(nodes)
    ph = hard * (xl + 1.0) / 2.0
    hard_signal = float(np.sum(wl * hard / 2.0 * stats.beta.pdf(ph, a, b) * group_update(prof, ph)[0]))
    signal = float(wq @ mean_g)
    var = float(wq @ mean_g2) - signal**2
    noise = float(np.sqrt(max(var, 0.0)))
    return SignalSummary(signal=signal, hard_signal=hard_signal, hard_share=hard_signal / signal if signal else 0.0,
                         noise=noise, snr=signal / noise if noise else 0.0,
                         ess_fraction=prof.under_beta(a, b).ess_fraction)


def focal_curve(gammas: np.ndarray, G: int, a: float, b: float, hard: float = 0.25) -> list[SignalSummary]:
    """SignalSummary of F-GRPO for each focal exponent gamma."""
    return [signal_under_beta(profile("focal", G, gamma=float(g)), a, b, hard) for g in gammas]
