"""Optimizers as init/update pairs over dicts of arrays (numpy or jax), for gradient *ascent*.

``sgd``; ``adam`` (per-entry second moment: on the bandit, one normaliser per tabular logit); ``adam_shared``
(one second moment over all parameters: the LLM-like normaliser, see ``adam_shared_update``); ``adam_tied`` (per-entry
Adam whose shared parameters' second moments also see the per-prompt logits' gradient, ``adam_tied_update``).
"""

from __future__ import annotations

from typing import Any


def sgd_init(params: dict[str, Any], xp: Any) -> dict[str, Any]:
    return {}


def sgd_update(grads: dict[str, Any], state: dict[str, Any], params: dict[str, Any], lr: Any, xp: Any,
               **_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return {k: params[k] + lr * grads[k] for k in params}, state


def adam_init(params: dict[str, Any], xp: Any) -> dict[str, Any]:
    return {"m": {k: xp.zeros_like(v) for k, v in params.items()},
            "v": {k: xp.zeros_like(v) for k, v in params.items()},
            "count": xp.zeros((), dtype=next(iter(params.values())).dtype)}


def _adam_step(grads: dict[str, Any], state: dict[str, Any], params: dict[str, Any], lr: Any, xp: Any,
               second: Any, b1: float, b2: float, eps: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Adam's per-entry step with bias correction; ``second(k)`` is the (1 - b2)-weighted new term of entry k's second
    moment (each caller writes its own expression, so each keeps its own rounding)."""
    count = state["count"] + 1.0
    m = {k: b1 * state["m"][k] + (1.0 - b1) * grads[k] for k in params}
    v = {k: b2 * state["v"][k] + second(k) for k in params}
    c1, c2 = 1.0 - b1**count, 1.0 - b2**count
    new = {k: params[k] + lr * (m[k] / c1) / (xp.sqrt(v[k] / c2) + eps) for k in params}
    return new, {"m": m, "v": v, "count": count}


def adam_update(grads: dict[str, Any], state: dict[str, Any], params: dict[str, Any], lr: Any, xp: Any, *,
                b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, **_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Adam (Kingma & Ba, 1412.6980) with bias correction."""
    return _adam_step(grads, state, params, lr, xp, lambda k: (1.0 - b2) * grads[k] * grads[k], b1, b2, eps)


def adam_shared_init(params: dict[str, Any], xp: Any) -> dict[str, Any]:
    dtype = next(iter(params.values())).dtype
    return {"m": {k: xp.zeros_like(v) for k, v in params.items()}, "v": xp.zeros((), dtype=dtype),
            "count": xp.zeros((), dtype=dtype)}


def adam_shared_update(grads: dict[str, Any], state: dict[str, Any], params: dict[str, Any], lr: Any, xp: Any, *,
                       b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, **_: Any
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Adam with one second moment for all parameters: v <- b2 v + (1 - b2) mean(g^2) over every entry.

    The first moment is per parameter as in Adam (Kingma & Ba, 1412.6980); the normaliser sqrt(v_hat) is one
    scalar per step. A tabular logit has no weights in common with other prompts or answers, so per-entry Adam
    gives each answer's logit its own normaliser, which an LLM's Adam (normalising weights every prompt and
    answer share) never does; one shared scale is the normaliser such shared weights present to each logit.
    With equal |g| everywhere it equals Adam.
    """
    count = state["count"] + 1.0
    m = {k: b1 * state["m"][k] + (1.0 - b1) * grads[k] for k in params}
    size = sum(int(g.size) for g in grads.values())
    mean_sq = sum(xp.sum(g * g) for g in grads.values()) / size
    v = b2 * state["v"] + (1.0 - b2) * mean_sq
    c1, c2 = 1.0 - b1**count, 1.0 - b2**count
    scale = xp.sqrt(v / c2) + eps
    new = {k: params[k] + lr * (m[k] / c1) / scale for k in params}
    return new, {"m": m, "v": v, "count": count}


#: the per-prompt (answer-specific) parameters of a task with shared ones (sharpen's theta beside s, g, beta)
PER_PROMPT = ("theta",)


def adam_tied_update(grads: dict[str, Any], state: dict[str, Any], params: dict[str, Any], lr: Any, xp: Any, *,
                     b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, tie: Any = 1.0, **_: Any
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Adam with per-entry moments, except that each *shared* parameter's second moment (every parameter but the
    per-prompt logits, ``PER_PROMPT``) also accumulates ``tie`` times the squared norm of the per-prompt logits'
    gradient: v_k <- b2 v_k + (1 - b2) (g_k^2 + tie ||g_theta||^2) (tie = 0: adam).

    Why: in an LLM the skill (or sharpness) and the answer-specific directions are carried by the same weights, so
    Adam's per-weight normaliser for the shared direction also sees the gradient that pushes particular answers up or
    down. Negative samples spread over many distinct wrong answers make that gradient large, and so shrink the step
    along the shared direction; per-entry Adam gives the shared scalars normalisers of their own and misses this.
    Where a task has no per-prompt parameter it equals ``adam``."""
    specific = sum(xp.sum(grads[k] * grads[k]) for k in params if k in PER_PROMPT)  # 0 where there is none
    return _adam_step(grads, state, params, lr, xp, lambda k: (1.0 - b2) * (
        grads[k] * grads[k] + (0.0 if k in PER_PROMPT else tie * specific)), b1, b2, eps)


OPTIMIZERS = {"sgd": (sgd_init, sgd_update), "adam": (adam_init, adam_update),
              "adam_shared": (adam_shared_init, adam_shared_update), "adam_tied": (adam_init, adam_tied_update)}
