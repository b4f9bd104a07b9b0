"""Each advantage's step size in a real trainer's form against the simulator's (issue 40, item 3).

Derived and checked in ``derivations/step_size.py`` (sympy for two advantages by hand, exact enumeration and a
sampled check) and ``tests/test_step_size.py``.

**The trainer form.** verl's and TRL's GRPO loss with token-mean aggregation is
L = -(1 / T) sum_i A_i sum_t log pi(y_it) over the batch's T tokens; on the first (on-policy) epoch its gradient is
g = (1 / T) sum_i A_i s_i with s_i the rollout's score. Adam on the model's shared weights divides each weight's
averaged gradient by the root of its averaged square. Two facts about an LLM batch make that normaliser the same for
every direction and proportional to the advantage's root mean square:
1. the rollouts' scores are nearly orthogonal in weight space (E<s_i, s_j> << ||s_i||^2, i != j), so a weight's
   E[g_w^2] ~ (1 / T^2) sum_i A_i^2 E[s_iw^2] + (E g_w)^2;
2. the noise term dominates at the batch sizes RL uses (a weight's gradient SNR is far below 1).
So E[g_w^2] ~ c Q_A with Q_A = E[(1 / n) sum_i A_i^2] the advantage's mean square over the rollouts, and the update
lr m_hat / sqrt(v_hat) moves the policy by lr E[g] / sqrt(c Q_A): the signal E[g], divided by the RMS of the whole
advantage, including the part of it that points along no useful direction (spread over many distinct wrong
answers, it moves nothing a metric reads, yet it fills the normaliser). The rule is scale-free (c A trains as A)
and assumes correct and wrong rollouts of one length distribution (token-mean then equals the rollout mean up to a
constant); where lengths differ with the reward, A_i is weighted by the rollout's token count.

**The simulator's form.** Per-entry Adam on a shared scalar (the sharpen task's skill g or sharpness s, the only
parameters that move a prompt held out of training) divides by that scalar's own averaged squared gradient, P_A =
E[grad_d^2] along the direction d (``fadesim.theory.crossing.step_moments``): only the part of the advantage's
power that lands on d. The two speeds, each relative to a reference advantage R (the one the protocol matches):

    simulator:  (mu_A / mu_R) sqrt(P_R / P_A)        trainer:  (mu_A / mu_R) sqrt(Q_R / Q_A)

with mu the direction's mean gradient (the same in both). So when the reference is matched at T steps, the trainer
has moved A as far as the simulator does in

    T_A = T x clock(A),   clock(A) = sqrt((P_A / Q_A) / (P_R / Q_R)),

the ratio of the *fraction of each advantage's power that lands on the direction*. For one binary-reward prompt at
pass rate p (a two-answer softmax, ``step_rates``): PSR's power E[k / G] = p, NSR's 1 - p, while both have the same
signal p (1 - p); on hard prompts NSR's power is mostly along no useful direction, so a trainer runs NSR slower than
PSR by sqrt(E p / E (1 - p)), where per-entry Adam runs it as fast (the largest miss of the SmolLM2 predictions:
simulated NSR pass@1 0.885, measured 0.613).

Both are first order: the rates are read at the calibrated base policy (the clock does not follow the pass rates as
they move) and Adam's first moment is taken as the mean gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from fadesim.tasks.protocol import evaluated
from fadesim.tasks.sharpen import Sharpen
from fadesim.theory.crossing import step_moments
from fadesim.theory.mass_profile import Profile, binomial_weights, profile
from fadesim.theory.signal import group_update

#: the step rules ``step_rates`` reports: plain SGD, per-entry Adam with one normaliser per prompt's correct logit,
#: per-entry Adam on one scalar every prompt shares (the simulator's skill), and the trainer form (Adam on shared
#: weights, normaliser sqrt(Q_A))
RULES = ("sgd", "per_prompt_adam", "shared_scalar_adam", "trainer")


def advantage_power(prof: Profile, p: Any) -> np.ndarray:
    """Q_A(p) = E_k[(1 / G) sum_i A_i^2], k ~ Binomial(G, p): the mean square of the advantage over a group's
    rollouts at pass rate p (GRPO with the unbiased std: (G - 1) / G (1 - p^G - (1 - p)^G); PSR: p; NSR: 1 - p)."""
    per_group = np.mean(np.asarray(prof.advantages, dtype=np.float64) ** 2, axis=1)  # (G + 1,)
    return binomial_weights(np.asarray(p, dtype=np.float64), prof.G) @ per_group


def _weights(p: np.ndarray, weights: Any) -> np.ndarray:
    w = np.full(p.shape, 1.0 / p.size) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != p.shape or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"weights must be finite, >= 0, not all 0, of the pass rates' shape {p.shape}; got {w!r}")
    return w / w.sum()


@dataclass(frozen=True)
class StepRates:
    """The expected rise of the batch's mean pass rate per step (up to the learning rate and a constant common to
    all advantages) under each of ``RULES``, for one advantage on prompts of the given pass rates (two-answer
    abstraction: a prompt's correct logit theta, p = sigmoid(theta), dp = p (1 - p) dtheta)."""

    advantage: str
    sgd: float  # sum_j pi_j p_j (1 - p_j) w(p_j)
    per_prompt_adam: float  # sum_j pi_j p_j (1 - p_j) w(p_j) / sqrt(E[g^2 | p_j])
    shared_scalar_adam: float  # sum_j pi_j p_j (1 - p_j) w(p_j) / sqrt(sum_j pi_j E[g^2 | p_j])
    trainer: float  # sum_j pi_j p_j (1 - p_j) w(p_j) / sqrt(sum_j pi_j Q(p_j))

    def relative_to(self, other: "StepRates") -> dict[str, float]:
        """Each rule's rate over ``other``'s (the speed of this advantage in units of the other's)."""
        return {rule: getattr(self, rule) / getattr(other, rule) for rule in RULES}


def step_rates(advantage: str, G: int, p: Any, weights: Any = None, signals: Mapping[str, Any] | None = None,
               **params: Any) -> StepRates:
    """The advantage's ``StepRates`` on prompts with pass rates ``p`` (any shape; ``weights`` of the same shape, or
    equal), exact sums over each prompt's k ~ Binomial(G, p). A prompt at p = 0 or 1 adds nothing to any rate."""
    p = np.asarray(p, dtype=np.float64)
    if p.size == 0 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"pass rates must lie in [0, 1] and be at least one; got {p!r}")
    pi = _weights(p, weights)
    prof = profile(advantage, G, signals=signals, **params)
    w, m2 = group_update(prof, p)
    gain = pi * p * (1.0 - p) * w
    per_prompt = np.divide(gain, np.sqrt(m2), out=np.zeros_like(gain), where=m2 > 0)
    signal = float(gain.sum())

    def over(power: float) -> float:
        return signal / np.sqrt(power) if power > 0 else 0.0

    return StepRates(advantage=advantage, sgd=signal, per_prompt_adam=float(per_prompt.sum()),
                     shared_scalar_adam=over(float((pi * m2).sum())),
                     trainer=over(float((pi * advantage_power(prof, p)).sum())))


def _at_start_on_training_prompts(task: Sharpen) -> dict[str, np.ndarray]:
    """The exact initial pass rates and policy entropies of the prompts the task trains on (all but those held out
    for evaluation)."""
    exact = task.exact(task.init_params(np, np.float64), np)
    held = evaluated(task)
    keep = slice(None) if held is None else ~np.asarray(held, dtype=bool)
    return {key: np.asarray(exact[key])[keep] for key in ("pass_rate", "entropy")}


def direction(task: Sharpen) -> str:
    """The shared direction whose speed the clock compares: the skill g where the task has one (it raises every
    correct logit, what pass@1 reads), else the sharpness s."""
    return "g" if task.skill_scale else "s"


def trainer_clock(task: Sharpen, advantage: str, G: int, *, reference: str = "grpo",
                  params: Mapping[str, Any] | None = None, reference_params: Mapping[str, Any] | None = None,
                  signals: Mapping[str, Any] | None = None, prompts_per_step: int | None = None) -> float:
    """clock(A) = sqrt((P_A / Q_A) / (P_R / Q_R)) on a sharpen task at its initial policy (module docstring): the
    simulator's per-entry-Adam run of ``advantage`` read at T x clock(A) steps has moved as far, relative to the
    reference read at T, as a trainer's Adam on shared weights moves it. 1 for the reference itself and for any
    positive multiple of it; below 1 for an advantage whose power lies off the direction more than the reference's.

    P: the step gradient's mean square along ``direction(task)`` (``step_moments``, with the task's own prompts a
    step unless ``prompts_per_step`` is given); Q: the advantage's mean square over the training prompts' rollouts
    (``advantage_power``). ``params``: the advantage's hyper-parameters; ``signals``: for a schedule (FADE), the
    trainer signals at the start (default: entropy = initial entropy, step 0)."""
    return noise_clock(task, advantage, G, None, reference=reference, params=params,
                       reference_params=reference_params, signals=signals, prompts_per_step=prompts_per_step)


@dataclass(frozen=True)
class DirectionParts:
    """One advantage's three first-order quantities on a sharpen task's shared direction, per rollout: ``mu`` the mean
    gradient (the mean over training prompts of ``direction_moments``' per-prompt mean, a mean over the group),
    ``power`` the simulator's per-entry-Adam normaliser squared (one step's mean square gradient, ``step_moments``
    with the task's prompts a step) and ``advantage_power`` Q (``advantage_power``, over the training prompts)."""

    mu: float
    power: float
    advantage_power: float


def direction_parts(task: Sharpen, advantage: str, G: int, *, params: Mapping[str, Any] | None = None,
                    signals: Mapping[str, Any] | None = None, prompts_per_step: int | None = None) -> DirectionParts:
    """``DirectionParts`` of ``advantage`` on ``task`` at its initial policy (``signals``: as in ``trainer_clock``)."""
    if not isinstance(task, Sharpen):
        raise ValueError(f"the clocks are defined for the sharpen task (its shared directions s and g); got "
                         f"{getattr(task, 'name', type(task).__name__)!r}")
    B = int(task.prompts_per_step if prompts_per_step is None else prompts_per_step)
    start = _at_start_on_training_prompts(task)
    if signals is None:  # the simulator's initial signals: the mean policy entropy over the training prompts
        h0 = float(np.mean(start["entropy"]))
        signals = {"entropy": h0, "initial_entropy": h0, "step": 0.0}
    kw = dict(params or {})
    mean, var = step_moments(task, advantage, G, B, signals=signals, **kw)[direction(task)]
    q = float(np.mean(advantage_power(profile(advantage, G, signals=signals, **kw), start["pass_rate"])))
    if q <= 0 or mean * mean + var <= 0:
        raise ValueError(f"'{advantage}' puts no gradient on this task's training prompts (every group uniform at "
                         "its pass rates); its speed is undefined")
    return DirectionParts(mu=float(mean), power=float(mean * mean + var), advantage_power=q)


def check_noise_scale(noise_scale: Any) -> None:
    """Refuse a noise scale rho that is not a positive finite number (``noise_clock``; the protocol's settings check
    theirs here too, before any run)."""
    if not (isinstance(noise_scale, (int, float)) and not isinstance(noise_scale, bool) and np.isfinite(noise_scale)
            and noise_scale > 0):
        raise ValueError(f"noise_scale must be a positive number; got {noise_scale!r}")


def noise_clock(task: Sharpen, advantage: str, G: int, rollouts_per_step: float | None, noise_scale: float = 1.0, *,
                reference: str = "grpo", params: Mapping[str, Any] | None = None,
                reference_params: Mapping[str, Any] | None = None, signals: Mapping[str, Any] | None = None,
                prompts_per_step: int | None = None) -> float:
    """The trainer clock at a real batch of N = ``rollouts_per_step`` rollouts a step (None: N -> 0, where the noise
    fills the normaliser, which is ``trainer_clock``):

        clock(A) = sqrt(P_A / P_R) sqrt((mu_R^2 + (rho / N) Q_R) / (mu_A^2 + (rho / N) Q_A)),  rho = noise_scale.

    A trainer's Adam divides a weight's mean gradient by the root of its mean square, (E g)^2 + Var g, and the
    variance of a batch mean falls as 1 / N: with N rollouts a step it moves A along the direction at
    mu_A / sqrt(mu_A^2 + (rho / N) Q_A), where rho is a weight's per-rollout noise power in units of the squared
    signal per unit of advantage (the simulator's units, skill scale included). The batch N where the two terms are
    equal, rho Q_A / mu_A^2, is the gradient noise scale B_simple = tr(Sigma) / |G|^2 of McCandlish et al. (arXiv
    1812.06162, "An Empirical Model of Large-Batch Training") written per rollout. The simulator moves A at
    mu_A / sqrt(P_A); the clock is the ratio of the two speeds over the reference's. Limits: N -> 0 gives
    sqrt((P_A / Q_A) / (P_R / Q_R)) (``trainer_clock``); N -> infinity gives sqrt(P_A / P_R) |mu_R / mu_A|, every
    advantage taking the same unit step along its mean gradient. 1 for the reference and any positive multiple of it.
    First order, at the task's initial policy, like ``trainer_clock``."""
    if rollouts_per_step is not None and not (np.isfinite(rollouts_per_step) and rollouts_per_step > 0):
        raise ValueError(f"rollouts_per_step must be a positive number (or None: the noise-dominated limit); got "
                         f"{rollouts_per_step!r}")
    check_noise_scale(noise_scale)
    a = direction_parts(task, advantage, G, params=params, signals=signals, prompts_per_step=prompts_per_step)
    r = direction_parts(task, reference, G, params=reference_params, signals=signals, prompts_per_step=prompts_per_step)
    if rollouts_per_step is None:  # noise only: the trainer clock
        return float(np.sqrt((a.power / a.advantage_power) / (r.power / r.advantage_power)))
    x = float(noise_scale) / float(rollouts_per_step)
    return float(np.sqrt(a.power / r.power) * np.sqrt((r.mu ** 2 + x * r.advantage_power)
                                                      / (a.mu ** 2 + x * a.advantage_power)))
