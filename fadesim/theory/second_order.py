"""Second-order (noise-driven) drift of one tabular prompt under one on-policy plain-SGD step.

At first order the sign axis is invisible on a tabular softmax prompt: for any advantage table the
expected update is a per-prompt scalar times d = pi_C - pi_W (pi restricted and renormalised to the correct
set C / the wrong set W), so every sign weighting moves the expected logits along the same direction. What
separates them is the noise of the sampled group, which acts at second order in the step size.

Setting (DESIGN.md section 9). Logits theta (K,), pi = softmax(theta), p = pi(C). One step
theta <- theta + lr g with

    g = (1/G) sum_i A_i (e_{a_i} - pi),

G on-policy rollouts, A_i the advantage's exact table (A+(k) on correct rollouts, A-(k) on wrong ones,
k ~ Binomial(G, p) correct; the same table ``theory.profile`` evaluates from the advantage's own code).
Given k the correct draws are iid pi_C and the wrong ones iid pi_W, so with n_C ~ Mult(k, pi_C),
n_W ~ Mult(G - k, pi_W) and pi_C - pi = (1 - p) d, pi_W - pi = -p d:

    g | k = (1/G) [A+(k) (n_C - k pi) + A-(k) (n_W - (G - k) pi)]
    E[g | k]   = s(k) d,   s(k) = (1/G) [k (1 - p) A+(k) - (G - k) p A-(k)]
    Cov[g | k] = (1/G^2) [k A+(k)^2 Sigma_C + (G - k) A-(k)^2 Sigma_W],   Sigma_q = diag(q) - q q^T.

Hence E[g] = E_k[s] d and E[g g^T] = E_k[s^2] d d^T + (1/G^2)(E_k[k A+^2] Sigma_C + E_k[(G-k) A-^2] Sigma_W),
and for a smooth f of the logits (Taylor; g is bounded, so the remainder is O(lr^3))

    E[f(theta + lr g)] - f(theta) = lr * first + lr^2 * (second_mean + second_noise) + O(lr^3),
    first        = E_k[s] grad f . d
    second_mean  = (1/2) E_k[s^2] d^T Hess f d                         (the update along its mean direction d,
                                                                        with its random size over k)
    second_noise = (1/2G^2) (E_k[k A+^2] tr(Hess f Sigma_C)            (which answers were drawn inside C and
                             + E_k[(G-k) A-^2] tr(Hess f Sigma_W))      inside W)

So second_noise is exactly 0 for PSR (A- = 0) when |C| = 1 and for NSR (A+ = 0) when |W| = 1 (Sigma = 0).
The sign axis enters through A+^2 vs A-^2: positive mass puts its noise inside C (which sharpens the
within-correct distribution), negative mass inside W.

Every Hessian below is a sum of "centred diagonal" terms P_r^T diag(x) P_r (P_r = I - 1 r^T, i.e. the
quadratic form sum_b x_b (v_b - r.v)^2) and rank-one terms alpha y y^T, so each coefficient costs O(K) per
prompt and O(G) per k, with no enumeration of multinomial outcomes:

    v^T (P_r^T diag(x) P_r) v       = sum_b x_b (v_b - r.v)^2
    tr(P_r^T diag(x) P_r Sigma_q)   = sum_b x_b [q_b (1 - q_b) - 2 q_b (r_b - q.r) + Var_q(r)]
    tr(y y^T Sigma_q)               = Var_q(y)

The quantities (u = v - E_pi v for a direction v; pi_C, H_C the distribution and entropy restricted to C):
- ``entropy`` H: grad -pi (log pi + H); Hess = -P_pi^T diag(pi (log pi + H + 1)) P_pi
  (d^2/dt^2 H(theta + t v) = -E_pi[u^2 (log pi + H + 1)]; the first-order part is the entropy law of
  arXiv 2505.22617, ``theory.expected_entropy_drift``).
- ``correct_entropy`` H_C (diversity of the correct answers): the same with pi_C in place of pi.
- ``effective_correct`` exp(H_C): grad e^{H_C} grad H_C; Hess e^{H_C} (Hess H_C + grad H_C grad H_C^T).
- ``logit_norm_sq`` ||theta - mean theta||^2: grad 2 z (z the centred logits); Hess 2 (I - 1 1^T / K).
- ``logit_norm`` ||z|| (the simulator's ``logit_norm``): grad z/||z||; Hess (I - 1 1^T/K)/||z|| - z z^T/||z||^3.
  Its terms are NaN where all logits are equal (z = 0, where ||z|| is not differentiable); use logit_norm_sq.
- ``pass_rate`` p = E_pi[c]: grad pi (c - p); Hess = P_pi^T diag(pi (c - p)) P_pi.

Supported advantages: every registered advantage whose value on a group is fixed by its reward counts
(its ``profile`` is symmetric): grpo, dr_grpo, rloo, reinforce, psr, nsr, w_reinforce, sign_balanced,
asymmetric, median, focal, pass_at_k, pkpo, risk_sensitive, and FADE at given ``signals`` (its table is well
defined once the entropy signal is fixed). Advantages that read per-rollout log-probs (unlikeliness) are
refused: their table depends on which answers were drawn, not only on k.

Step-size convention: ``lr`` here is the step on *this prompt's* logits. The simulator's bandit averages
its gradient over its N prompts (``Bandit.logit_gradient`` divides by N), so a plain-SGD SimConfig with
learning rate lr moves each prompt by lr / N: see :func:`per_prompt_step`.

Beyond SGD: with PPO clipping (arXiv 2509.26114, DAPO 2503.14476) the first epoch is on-policy (ratio 1,
nothing clipped), and at later epochs the ratio differs from 1 by O(lr), so for lr below a threshold set by
eps_low / eps_high nothing is ever clipped: clipping changes no coefficient of the small-lr expansion at any
order. Its entropy effect is a finite-step effect that this expansion cannot see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import array_api_compat
import numpy as np
from scipy import special

from fadesim.advantages.registry import info
from fadesim.theory.mass_profile import Profile, profile

#: the quantities ``drift`` predicts, in this order
DRIFT_QUANTITIES = ("entropy", "correct_entropy", "effective_correct", "logit_norm_sq", "logit_norm", "pass_rate")

if TYPE_CHECKING:  # the task interface (docs/DESIGN.md section 6)
    from fadesim.tasks.protocol import Task


@dataclass(frozen=True)
class DriftTerms:
    """Coefficients of E[f(theta + lr g)] - f(theta) = lr first + lr^2 (second_mean + second_noise) + O(lr^3).

    Each is an array of the prompts' batch shape (a 0-d array for one prompt).
    """

    first: Any
    second_mean: Any
    second_noise: Any

    @property
    def second(self) -> Any:
        return self.second_mean + self.second_noise

    def change(self, lr: float) -> Any:
        """The predicted expected change of f after one step of size lr (to second order)."""
        return lr * self.first + lr**2 * self.second


@dataclass(frozen=True)
class Drift:
    """The second-order drift of every quantity in ``DRIFT_QUANTITIES`` for one step of size ``lr``."""

    advantage: str
    G: int
    lr: float
    params: Mapping[str, Any]
    terms: Mapping[str, DriftTerms]

    def __getitem__(self, quantity: str) -> DriftTerms:
        if quantity not in self.terms:
            raise KeyError(f"unknown drift quantity '{quantity}'; known: {', '.join(DRIFT_QUANTITIES)}")
        return self.terms[quantity]

    def change(self, quantity: str) -> Any:
        """Predicted E[f(theta + lr g)] - f(theta), to second order, at this Drift's lr."""
        return self[quantity].change(self.lr)


@dataclass(frozen=True)
class _Curvature:
    """grad f, and Hess f = sum P_r^T diag(x) P_r + sum alpha y y^T (see the module docstring)."""

    grad: Any  # (..., K)
    centred: tuple[tuple[Any, Any], ...]  # (r (..., K), x (..., K)) pairs
    rank_one: tuple[tuple[Any, Any], ...] = ()  # (alpha (...,), y (..., K)) pairs

    def quadratic(self, v: Any, xp: Any) -> Any:
        """v^T Hess v for v (..., K)."""
        out = 0.0
        for r, x in self.centred:
            u = v - xp.sum(r * v, axis=-1, keepdims=True)
            out = out + xp.sum(x * u * u, axis=-1)
        for alpha, y in self.rank_one:
            out = out + alpha * xp.sum(y * v, axis=-1) ** 2
        return out

    def trace_cov(self, q: Any, xp: Any) -> Any:
        """tr(Hess Sigma_q), Sigma_q = diag(q) - q q^T, for a distribution q (..., K)."""
        out = 0.0
        for r, x in self.centred:
            qr = xp.sum(q * r, axis=-1, keepdims=True)
            var_r = xp.sum(q * r * r, axis=-1, keepdims=True) - qr * qr
            out = out + xp.sum(x * (q * (1.0 - q) - 2.0 * q * (r - qr) + var_r), axis=-1)
        for alpha, y in self.rank_one:
            qy = xp.sum(q * y, axis=-1)
            out = out + alpha * (xp.sum(q * y * y, axis=-1) - qy * qy)
        return out


def _entropy_curvature(q: Any, log_q: Any, xp: Any) -> tuple[Any, _Curvature]:
    """Entropy of the distribution q (zero outside its support, log_q finite there) as a function of the logits."""
    H = -xp.sum(q * log_q, axis=-1, keepdims=True)
    return H[..., 0], _Curvature(grad=-q * (log_q + H), centred=((q, -q * (log_q + H + 1.0)),))


@dataclass(frozen=True)
class _Prompts:
    """pi and its restrictions to the correct and wrong sets, for logits (..., K)."""

    log_pi: Any
    pi: Any
    p: Any  # (..., 1) pass rate
    q: Any  # (..., 1) 1 - p, summed over the wrong answers directly (no cancellation)
    pi_c: Any
    log_pi_c: Any  # 0 outside the correct set
    pi_w: Any


def _prompts(logits: Any, correct: Any, xp: Any) -> _Prompts:
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    log_pi = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    pi = xp.exp(log_pi)
    p = xp.sum(xp.where(correct, pi, 0.0), axis=-1, keepdims=True)
    q = xp.sum(xp.where(correct, 0.0, pi), axis=-1, keepdims=True)
    return _Prompts(log_pi=log_pi, pi=pi, p=p, q=q, pi_c=xp.where(correct, pi, 0.0) / p,
                    log_pi_c=xp.where(correct, log_pi - xp.log(p), 0.0), pi_w=xp.where(correct, 0.0, pi) / q)


def curvatures(logits: Any, correct: Any, xp: Any, pr: _Prompts | None = None) -> dict[str, _Curvature]:
    """grad and structured Hessian of every drift quantity at ``logits`` (..., K) with boolean ``correct``."""
    pr = pr if pr is not None else _prompts(logits, correct, xp)
    c = xp.astype(correct, logits.dtype)
    K = logits.shape[-1]
    uniform = xp.full(logits.shape, 1.0 / K, dtype=logits.dtype)
    ones = xp.ones_like(logits)
    _, ent = _entropy_curvature(pr.pi, pr.log_pi, xp)
    h_c, ent_c = _entropy_curvature(pr.pi_c, pr.log_pi_c, xp)
    e_c = xp.exp(h_c)
    z = logits - xp.mean(logits, axis=-1, keepdims=True)
    norm = xp.sqrt(xp.sum(z * z, axis=-1, keepdims=True))
    norm = xp.where(norm > 0, norm, xp.nan)  # ||z|| is not differentiable at z = 0 (all logits equal)
    return {
        "entropy": ent,
        "correct_entropy": ent_c,
        "effective_correct": _Curvature(
            grad=e_c[..., None] * ent_c.grad,
            centred=tuple((r, e_c[..., None] * x) for r, x in ent_c.centred),
            rank_one=((e_c, ent_c.grad),)),
        "logit_norm_sq": _Curvature(grad=2.0 * z, centred=((uniform, 2.0 * ones),)),
        "logit_norm": _Curvature(grad=z / norm, centred=((uniform, ones / norm),),
                                 rank_one=((-1.0 / norm[..., 0] ** 3, z),)),
        "pass_rate": _Curvature(grad=pr.pi * (c - pr.p), centred=((pr.pi, pr.pi * (c - pr.p)),)),
    }


def drift_quantities(logits: Any, correct: Any) -> dict[str, Any]:
    """The values of every drift quantity at ``logits`` (..., K), in their namespace: what ``drift`` differentiates."""
    xp = array_api_compat.array_namespace(logits)
    pr = _prompts(logits, correct, xp)
    h_c = -xp.sum(pr.pi_c * pr.log_pi_c, axis=-1)
    z = logits - xp.mean(logits, axis=-1, keepdims=True)
    n2 = xp.sum(z * z, axis=-1)
    return {"entropy": -xp.sum(pr.pi * pr.log_pi, axis=-1), "correct_entropy": h_c, "effective_correct": xp.exp(h_c),
            "logit_norm_sq": n2, "logit_norm": xp.sqrt(n2), "pass_rate": pr.p[..., 0]}


def advantage_table(advantage: str | Callable[..., Any], G: int, signals: Mapping[str, Any] | None = None,
                    **params: Any) -> Profile:
    """The exact profile (A+(k), A-(k) for k = 0..G) that ``drift`` uses, with the checks it needs."""
    if isinstance(G, bool) or int(G) != G or int(G) < 1:
        raise ValueError(f"drift: G must be a positive integer; got {G!r}")
    G = int(G)
    if isinstance(advantage, str):
        entry = info(advantage)  # KeyError naming the known advantages
        if entry.needs_logprobs:
            raise ValueError(f"drift: '{advantage}' reads per-rollout log-probs, so its advantage depends on which "
                             "answers were drawn, not only on the number correct; its drift has no closed form here")
        if entry.needs_signals and signals is None:
            raise ValueError(f"drift: '{advantage}' needs training signals {list(entry.needs_signals)}; pass "
                             "signals={...} (its table is then fixed)")
        if G < entry.min_group_size:
            raise ValueError(f"drift: G = {G} is too small for '{advantage}' (needs G >= {entry.min_group_size})")
    prof = profile(advantage, G, signals=signals, **params)
    if not prof.symmetric:
        raise ValueError(f"drift: {prof.name}'s advantages are not fixed by the number of correct rollouts "
                         "(its profile is not symmetric), so it has no (A+(k), A-(k)) table")
    if not (np.all(np.isfinite(prof.a_pos[1:])) and np.all(np.isfinite(prof.a_neg[:-1]))):
        raise ValueError(f"drift: {prof.name} gives non-finite advantages at G = {G}")
    return prof


def _check_prompts(logits: Any, correct: Any) -> None:
    lg = np.asarray(logits)
    cr = np.asarray(correct)
    if lg.ndim < 1 or lg.shape[-1] < 2:
        raise ValueError(f"drift: logits must have shape (..., K) with K >= 2; got {lg.shape}")
    if cr.shape != lg.shape:
        raise ValueError(f"drift: correct must have the logits' shape {lg.shape}; got {cr.shape}")
    if cr.dtype != bool:
        raise ValueError(f"drift: correct must be a boolean array; got dtype {cr.dtype}")
    if not np.issubdtype(lg.dtype, np.floating):
        raise ValueError(f"drift: logits must be floating point; got dtype {lg.dtype}")
    if not np.all(np.isfinite(lg)):
        raise ValueError("drift: logits must be finite (found NaN or inf)")
    n_correct = cr.sum(-1)
    if np.any(n_correct == 0) or np.any(n_correct == cr.shape[-1]):
        raise ValueError("drift: every prompt's correct set must be a non-empty proper subset of its answers "
                         f"(found {int(np.sum(n_correct == 0))} empty and {int(np.sum(n_correct == cr.shape[-1]))} "
                         "full correct sets)")


def drift(
    advantage: str | Callable[..., Any],
    logits: Any,
    correct: Any,
    G: int,
    lr: float,
    *,
    signals: Mapping[str, Any] | None = None,
    **params: Any,
) -> Drift:
    """Second-order expected drift of entropy, diversity, logit norm and pass rate for one SGD step.

    ``logits`` (..., K) float and ``correct`` (..., K) bool: a batch of tabular prompts (numpy or jax arrays;
    the result is in the same namespace). ``advantage``: a registry name (``params`` its hyper-parameters) or
    a contract function; ``lr`` the per-prompt step (see :func:`per_prompt_step`). Returns a :class:`Drift`
    with, for each quantity, ``first``, ``second_mean`` and ``second_noise`` (each (...,)); the formulas are
    in this module's docstring. Not jittable (the inputs are validated eagerly).
    """
    if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating)) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"drift: lr must be a positive finite number; got {lr!r}")
    _check_prompts(logits, correct)
    prof = advantage_table(advantage, G, signals, **params)
    xp = array_api_compat.array_namespace(logits)
    G = prof.G
    dtype = logits.dtype
    kk = xp.asarray(np.arange(G + 1, dtype=np.float64), dtype=dtype)
    a_pos = xp.asarray(np.nan_to_num(prof.a_pos), dtype=dtype)
    a_neg = xp.asarray(np.nan_to_num(prof.a_neg), dtype=dtype)
    log_choose = xp.asarray(special.gammaln(G + 1) - special.gammaln(np.arange(G + 1) + 1)
                            - special.gammaln(G - np.arange(G + 1) + 1), dtype=dtype)

    pr = _prompts(logits, correct, xp)
    p, q = pr.p, pr.q
    d = pr.pi_c - pr.pi_w
    # P(k | G, p), k = 0..G, in log space (no 0 * log 0)
    log_pk = (log_choose + xp.where(kk > 0, kk * xp.log(p), 0.0)
              + xp.where(kk < G, (G - kk) * xp.log(q), 0.0))
    pk = xp.exp(log_pk)  # (..., G+1)
    s = (kk * q * a_pos - (G - kk) * p * a_neg) / G  # (..., G+1)
    mean_s = xp.sum(pk * s, axis=-1)
    mean_s2 = xp.sum(pk * s * s, axis=-1)
    noise_c = xp.sum(pk * kk * a_pos * a_pos, axis=-1) / G**2
    noise_w = xp.sum(pk * (G - kk) * a_neg * a_neg, axis=-1) / G**2

    terms = {}
    for name, curv in curvatures(logits, correct, xp, pr).items():
        terms[name] = DriftTerms(
            first=mean_s * xp.sum(curv.grad * d, axis=-1),
            second_mean=0.5 * mean_s2 * curv.quadratic(d, xp),
            second_noise=0.5 * (noise_c * curv.trace_cov(pr.pi_c, xp) + noise_w * curv.trace_cov(pr.pi_w, xp)),
        )
    return Drift(advantage=prof.name, G=G, lr=float(lr), params=dict(params), terms=terms)


def per_prompt_step(cfg: Any, task: Task) -> float:
    """The per-prompt logit step of a plain-SGD bandit run: cfg.lr / N (the bandit's gradient averages prompts).

    Only defined where one simulator step is exactly the step :func:`drift` describes: the tabular bandit,
    optimizer "sgd", one epoch (PPO's first epoch is on-policy, so ``ppo`` is allowed), no KL term.
    """
    from fadesim.tasks.bandit import Bandit

    if type(task) is not Bandit:  # LinearSoftmax subclasses Bandit but shares W across prompts
        raise ValueError(f"per_prompt_step: the per-prompt step is defined for the tabular bandit, not "
                         f"'{getattr(task, 'name', type(task).__name__)}' (shared parameters couple the prompts)")
    if cfg.optimizer != "sgd":
        raise ValueError(f"per_prompt_step: optimizer '{cfg.optimizer}' rescales each step by its own "
                         "statistics; the drift theory is for plain SGD (optimizer='sgd')")
    if cfg.epochs != 1 or cfg.kl_beta != 0:
        raise ValueError("per_prompt_step: the drift theory covers one on-policy epoch without a KL term "
                         f"(got epochs={cfg.epochs}, kl_beta={cfg.kl_beta})")
    return float(cfg.lr) / task.n_prompts
