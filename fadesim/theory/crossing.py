"""The pass@k crossover under shared sharpening, to first order (the ``sharpen`` task, ``fadesim.tasks.sharpen``).

Logits (1 + c s) l0(n, .) + theta(n, .), policy pi_n, correct set C_n, pass rate p_n = pi_n(C_n); with a tail answer
(``tail_entropy`` H > 0) l0 below is the sharpened logits ``Sharpen.sharpened`` (the base logits less H on each
prompt's tail answer, which gets H back unscaled), the direction d logits / ds = c l0 every formula uses. Derived and
checked in ``derivations/sharpen_crossing.py`` (sympy, exact enumeration of all groups) and against sampled batches
in ``tests/test_sharpen.py``:

1. **How sharpening moves a prompt.** d log pi_n(a) / ds = c (l0(n, a) - E_pi[l0]), so

       dp_n / ds = c p_n (E_pi[l0 | C_n] - E_pi[l0]) = c p_n (1 - p_n) (E_pi[l0 | C_n] - E_pi[l0 | W_n]).

   A prompt gains from sharpening iff its correct answers are, on average under pi, likelier a priori than its
   wrong ones; a hard prompt (its correct answers in the tail of l0) loses. pass@k = mean_n 1 - (1 - p_n)^k moves
   by d pass@k / ds = mean_n k (1 - p_n)^(k - 1) dp_n / ds: the weight k (1 - p)^(k - 1) shifts toward hard
   prompts as k grows, so the same step can raise pass@1 and lower pass@k at large k (the crossover), with
   ``crossing_k`` the first k where the slope turns negative.

2. **How each advantage moves s.** For an advantage with values A+(k), A-(k) on a group with k correct of G (the
   registry's canonical groups, ``fadesim.theory.profile``), the simulator's gradient on s (1/N, 1/G normalised)
   has expectation

       E[grad_s] = (c / N) sum_n w(p_n) (E_pi[l0 | C_n] - E_pi[l0 | W_n]),
       w(p) = E_k[(1/G) (k (1 - p) A+(k) - (G - k) p A-(k))]   (``fadesim.theory.signal.group_update``),

   i.e. sum_n omega(p_n) dp_n/ds / N with the prompt weight omega(p) = w(p) / (p (1 - p)). For every advantage
   that is alpha r + beta per rollout (PSR: alpha = 1; NSR: alpha = 1; W-REINFORCE(lam): alpha = 1 + lam;
   REINFORCE), omega = alpha: s follows the gradient of the mean pass rate, the same for PSR and NSR; **the sign
   axis does not change the first-order drift** (the difference is second order in the step, the noise of
   ``fadesim.theory.drift``, and the optimizer's per-entry normaliser). Group-normalised advantages weight prompts
   by omega(p) (GRPO's grows toward p = 0 and 1): the difficulty axis changes how much the hard prompts' negative
   dp/ds pulls against the easy prompts' positive one, i.e. how fast a method sharpens, and so how far it crosses.

3. **The skill direction and each direction's noise** (``skill_scale`` d > 0: logits + d g r(n, a)). dp_n / dg =
   d p_n (1 - p_n) on every prompt, and E[grad_g] = (d / N) sum_n w(p_n), the same w. So the *mean* step of every
   alpha r + beta advantage points the same way in the (s, g) plane. Their noise does not: given a group with k
   correct, a correct rollout contributes A+(k) (l0(a) - E_pi[l0]) to s (mean E[l0 | C] - E[l0], variance
   Var[l0 | C] over the correct answers) and A+(k) (1 - p) to g, a wrong one A-(k) (l0(a) - E_pi[l0]) and
   -A-(k) p, so the per-group mean and variance of each direction's gradient are exact sums over k ~ Binomial(G, p)
   (``direction_moments``). PSR weights the correct rollouts, whose l0 spread is small on easy prompts; NSR the
   wrong ones, spread over the tail: NSR's sharpening gradient is the noisier. A step that draws B of N prompts
   has per-step signal-to-noise ratio mean_n mu_n / sqrt((mean_n sigma_n^2 + (N - B) / (N - 1) Var_n mu_n) / B)
   (``direction_snr``), which an optimizer with a per-entry normaliser turns into a speed along each direction.
   With a reach (``reach_samples``) the skill moves only the reached prompts; with ``misfire`` m it raises each
   unreached prompt's shortcut (a wrong answer, probability pi_sc, q = pi_sc / (1 - p) of the wrong mass) instead,
   so there dp_n / dg = -m p_n pi_sc, a group's mean gradient on g is -m q times the reached form, and a wrong
   rollout adds variance m^2 q (1 - q) A-(k)^2 / G^2 (whether it is the shortcut). A learned shortcut
   (``shortcut_scale`` f > 0: its own shared parameter h on the same rows) has the moments of a skill of scale f with
   m = 1 (``direction_moments``' "h"), and ``adam_path`` moves it beside s and g.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.protocol import evaluated
from fadesim.tasks.sharpen import Sharpen
from fadesim.theory.mass_profile import binomial_weights, profile
from fadesim.theory.signal import group_update


def _policy(task: Sharpen, params: Mapping[str, Any]) -> np.ndarray:
    """(N, K) the task's policy at ``params``, in float64."""
    logits = np.asarray(task.logits({k: np.asarray(v, dtype=np.float64) for k, v in params.items()}, np))
    return np.exp(sp.log_softmax(logits, np))


def _conditional_means(task: Sharpen, params: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, E[l0 | C], E[l0 | W]) per prompt under the task's current policy (float64; an empty side gives 0)."""
    pi = _policy(task, params)
    l0 = np.asarray(task.sharpened(np, np.float64))  # d logits / ds = c l0'
    correct = np.asarray(task.correct, dtype=bool)
    p = np.where(correct, pi, 0.0).sum(-1)
    on_c = np.where(correct, pi * l0, 0.0).sum(-1)
    on_w = np.where(correct, 0.0, pi * l0).sum(-1)
    mean_c = np.divide(on_c, p, out=np.zeros_like(p), where=p > 0)
    mean_w = np.divide(on_w, 1.0 - p, out=np.zeros_like(p), where=p < 1)
    return p, mean_c, mean_w


def pass_rate_slopes(task: Sharpen, params: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(p_n, dp_n/ds) per prompt of a ``Sharpen`` task at ``params`` (default: its initial parameters)."""
    params = task.init_params(np, np.float64) if params is None else params
    p, mean_c, mean_w = _conditional_means(task, params)
    return p, task.sharpen_scale * p * (1.0 - p) * (mean_c - mean_w)


def pass_at_k_slopes(p: np.ndarray, dp: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """k -> d pass@k / ds = mean_n k (1 - p_n)^(k - 1) dp_n/ds."""
    p, dp = np.asarray(p, dtype=np.float64), np.asarray(dp, dtype=np.float64)
    return {int(k): float(np.mean(k * (1.0 - p) ** (k - 1) * dp)) for k in ks}


def crossing_k(slopes: Mapping[int, float]) -> int | None:
    """The smallest k whose pass@k falls under sharpening while pass@1 rises (None: no crossing among ``slopes``'
    k, or pass@1 does not rise)."""
    ks = sorted(slopes)
    if not ks or slopes.get(1, slopes[ks[0]]) <= 0:
        return None
    return next((k for k in ks if slopes[k] < 0), None)


def prompt_weight(advantage: str, G: int, p: Any, signals: Mapping[str, Any] | None = None,
                  **params: Any) -> np.ndarray:
    """omega(p) = w(p) / (p (1 - p)): how much a prompt's dp/ds counts in the advantage's expected drift of s
    (1 for PSR, NSR and REINFORCE; 1 + lam for W-REINFORCE; GRPO's rises toward p = 0 and 1)."""
    p = np.asarray(p, dtype=np.float64)
    prof = profile(advantage, G, signals=signals, **params)
    w, _ = group_update(prof, p)
    denom = p * (1.0 - p)
    return np.divide(w, denom, out=np.zeros_like(w), where=denom > 0)


def expected_skill_gradient(task: Sharpen, advantage: str, G: int, params: Mapping[str, Any] | None = None,
                            signals: Mapping[str, Any] | None = None, **adv_params: Any) -> float:
    """E[grad_g] of one simulator step (``task.score(...)['g']`` averaged over rollouts), exactly, at ``params``."""
    params = task.init_params(np, np.float64) if params is None else params
    pi = _policy(task, params)
    p = np.where(np.asarray(task.correct, dtype=bool), pi, 0.0).sum(-1)
    w, _ = group_update(profile(advantage, G, signals=signals, **adv_params), p)
    rho, _ = _skill_rows(task, pi)
    return float(task.skill_scale * np.mean(w * rho))


def _skill_rows(task: Sharpen, pi: np.ndarray, misfire: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rho, v) per prompt under the policy ``pi`` (N, K): a group's mean gradient on g given k correct is rho_n (k (1 - p) A+ - (G - k) p A-) / G,
    and its variance given k is (G - k) A-^2 v_n / G^2. A reached prompt (every prompt unless ``make_sharpen(
    reach_samples=...)``): rho = 1, v = 0 (d log pi / dg = 1[correct] - p, fixed by correctness). An unreached one:
    rho = v = 0, or with ``misfire`` m the shortcut's d log pi / dg = m ([a = shortcut] - pi_sc): a correct rollout
    gives -m pi_sc, a wrong one is the shortcut with probability q = pi_sc / (1 - p), so rho = -m q and
    v = m^2 q (1 - q). ``misfire`` (default the task's) gives another m on the same rows: the learned shortcut h
    (``shortcut_scale``) has the rows of a skill with misfire 1."""
    m = task.misfire if misfire is None else misfire
    if task.reach is None:
        return np.ones(task.n_prompts), np.zeros(task.n_prompts)
    reached = np.asarray(task.reach, dtype=bool)
    if not m:
        return reached.astype(np.float64), np.zeros(task.n_prompts)
    wrong = np.where(np.asarray(task.correct, dtype=bool), 0.0, pi).sum(-1)
    q = np.divide(np.where(np.asarray(task.shortcut, dtype=bool), pi, 0.0).sum(-1), wrong,
                  out=np.zeros_like(wrong), where=wrong > 0)
    return np.where(reached, 1.0, -m * q), np.where(reached, 0.0, m * m * q * (1.0 - q))


def direction_moments(task: Sharpen, advantage: str, G: int, params: Mapping[str, Any] | None = None,
                      signals: Mapping[str, Any] | None = None, **adv_params: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per prompt, the exact mean and variance of one group's gradient on the shared sharpness ("s") and, where the
    task has them, the shared skill ("g") and the learned shortcut ("h"): ``(1/G) sum_i A_i d log pi(a_i) / d(s, g
    or h)`` with the group's G rollouts drawn from the policy at ``params`` (the simulator's per-prompt term before its
    1/N), as (mean (N,), var (N,))."""
    params = task.init_params(np, np.float64) if params is None else params
    pi = _policy(task, params)
    l0 = np.asarray(task.sharpened(np, np.float64))  # d logits / ds = c l0'
    correct = np.asarray(task.correct, dtype=bool)
    p = np.where(correct, pi, 0.0).sum(-1)
    centred = l0 - (pi * l0).sum(-1, keepdims=True)

    def side(mask: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # E, Var of l0 - E l0 on a side
        q = np.where(mask, pi, 0.0)
        m1 = np.divide((q * centred).sum(-1), mass, out=np.zeros_like(mass), where=mass > 0)
        m2 = np.divide((q * centred ** 2).sum(-1), mass, out=np.zeros_like(mass), where=mass > 0)
        return m1, np.maximum(m2 - m1 ** 2, 0.0)

    (mc, vc), (mw, vw) = side(correct, p), side(~correct, 1.0 - p)
    prof = profile(advantage, G, signals=signals, **adv_params)
    kk = np.arange(G + 1)
    a_pos, a_neg = np.nan_to_num(prof.a_pos), np.nan_to_num(prof.a_neg)
    weight = binomial_weights(np.clip(p, 0.0, 1.0), G)  # (N, G + 1)
    ns, nw = kk[None, :], (G - kk)[None, :]
    s_mean_k = (ns * a_pos * mc[:, None] + nw * a_neg * mw[:, None]) / G
    s_var_k = (ns * a_pos ** 2 * vc[:, None] + nw * a_neg ** 2 * vw[:, None]) / G ** 2
    s_mean = (weight * s_mean_k).sum(-1)
    out = {"s": (task.sharpen_scale * s_mean, task.sharpen_scale ** 2 * (
        (weight * (s_var_k + s_mean_k ** 2)).sum(-1) - s_mean ** 2))}
    for name, scale, misfire in (("g", task.skill_scale, None), ("h", task.shortcut_scale, 1.0)):
        if not scale:
            continue
        rho, v = _skill_rows(task, pi, misfire)
        g_k = (ns * a_pos * (1.0 - p[:, None]) - nw * a_neg * p[:, None]) / G * rho[:, None]
        g_var_k = nw * a_neg ** 2 * v[:, None] / G ** 2
        g_mean = (weight * g_k).sum(-1)
        out[name] = (scale * g_mean, scale ** 2 * ((weight * (g_var_k + g_k ** 2)).sum(-1) - g_mean ** 2))
    return {k: (m, np.maximum(v, 0.0)) for k, (m, v) in out.items()}


def step_moments(task: Sharpen, advantage: str, G: int, prompts_per_step: int = 0,
                 params: Mapping[str, Any] | None = None, signals: Mapping[str, Any] | None = None,
                 **adv_params: Any) -> dict[str, tuple[float, float]]:
    """Mean and variance of one simulator step's gradient on each shared direction ("s", and "g" where present)
    when the step draws ``prompts_per_step`` = B of the task's N training prompts (those not held out for
    evaluation) without replacement (0: all of them); the step's gradient is the mean of the drawn prompts' group
    gradients (``direction_moments``), so its mean is mean_n mu_n and its variance
    (mean_n sigma_n^2 + (N - B) / (N - 1) Var_n mu_n) / B."""
    moments = direction_moments(task, advantage, G, params, signals, **adv_params)
    held = evaluated(task)
    if held is not None:  # prompts held out of training are never drawn
        moments = {k: (m[~np.asarray(held)], v[~np.asarray(held)]) for k, (m, v) in moments.items()}
    n = next(iter(moments.values()))[0].size
    B = prompts_per_step or n
    if not 1 <= B <= n:
        raise ValueError(f"prompts_per_step must be in [0, {n}] (0: every training prompt); got {prompts_per_step!r}")
    spread = (n - B) / (n - 1) if n > 1 else 0.0
    return {k: (float(mu.mean()), float((var.mean() + spread * mu.var()) / B)) for k, (mu, var) in moments.items()}


def direction_snr(task: Sharpen, advantage: str, G: int, prompts_per_step: int = 0,
                  params: Mapping[str, Any] | None = None, signals: Mapping[str, Any] | None = None,
                  **adv_params: Any) -> dict[str, float]:
    """Per-step mean / standard deviation of the gradient on each shared direction (``step_moments``):
    mean_n mu_n / sqrt((mean_n sigma_n^2 + (N - B) / (N - 1) Var_n mu_n) / B)."""
    out = {}
    for k, (m, var) in step_moments(task, advantage, G, prompts_per_step, params, signals, **adv_params).items():
        out[k] = m / float(np.sqrt(var)) if var > 0 else (0.0 if m == 0 else float(np.copysign(np.inf, m)))
    return out


def expected_sharpening_gradient(task: Sharpen, advantage: str, G: int, params: Mapping[str, Any] | None = None,
                                 signals: Mapping[str, Any] | None = None, **adv_params: Any) -> float:
    """E[grad_s] of one simulator step (``task.score(...)['s']`` averaged over rollouts), exactly, at ``params``."""
    params = task.init_params(np, np.float64) if params is None else params
    p, mean_c, mean_w = _conditional_means(task, params)
    w, _ = group_update(profile(advantage, G, signals=signals, **adv_params), p)
    return float(task.sharpen_scale * np.mean(w * (mean_c - mean_w)))


def adam_path(task: Sharpen, advantage: str, G: int, steps: int, lr: float, prompts_per_step: int = 0, every: int = 10,
              signals: Mapping[str, Any] | None = None, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
              **adv_params: Any) -> dict[str, np.ndarray]:
    """The first-order ("mean-field") path of the shared directions under per-entry Adam: each step, Adam's first
    moment averages the step gradient's mean mu and its second moment averages E[g^2] = mu^2 + var (``step_moments``),
    with Adam's own decays and bias correction, and the parameter moves by lr m_hat / (sqrt(v_hat) + eps). So a
    direction whose per-step SNR r = mu / sd is steady moves about lr r / sqrt(1 + r^2) a step, the normaliser's long
    memory slowing it when its gradient shrinks. The moments are re-read every ``every`` steps at the current (s, g,
    h) with the per-prompt logits left at 0 (exact for a task without them, ``tabular=False``, and for what an
    evaluation prompt never trained on sees; a training prompt's own logits also move, which the path leaves out).
    Returns {"step", "s", "g", "h"} (g all 0 where the task has no skill direction, h where it has no learned
    shortcut), every ``every`` steps from 0 to ``steps``."""
    if steps % every:
        raise ValueError(f"steps ({steps}) must be a multiple of every ({every})")
    params = {k: np.asarray(v, dtype=np.float64) for k, v in task.init_params(np, np.float64).items()}
    names = [k for k in ("s", "g", "h") if k in params]
    m = dict.fromkeys(names, 0.0)
    v = dict.fromkeys(names, 0.0)
    out = {"step": [0], "s": [0.0], "g": [0.0], "h": [0.0]}
    t = 0
    while t < steps:
        moments = step_moments(task, advantage, G, prompts_per_step, params, signals, **adv_params)
        for _ in range(every):
            t += 1
            for name in names:
                mu, var = moments[name]
                m[name] = b1 * m[name] + (1.0 - b1) * mu
                v[name] = b2 * v[name] + (1.0 - b2) * (mu * mu + var)
                step = lr * (m[name] / (1.0 - b1 ** t)) / (np.sqrt(v[name] / (1.0 - b2 ** t)) + eps)
                params[name] = params[name] + step
        out["step"].append(t)
        out["s"].append(float(params["s"]))
        out["g"].append(float(params.get("g", 0.0)))
        out["h"].append(float(params.get("h", 0.0)))
    return {k: np.asarray(val) for k, val in out.items()}
