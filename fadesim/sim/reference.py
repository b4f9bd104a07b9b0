"""The numpy reference simulator: a plain Python loop over steps, readable top to bottom."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from fadesim.sim.config import SimConfig
from fadesim.sim.result import SimResult, stack_logs
from fadesim.sim.step import initial_state, policy_metrics, train_step

UniformSource = Callable[[int, tuple[int, ...]], np.ndarray]

if TYPE_CHECKING:  # the task interface (docs/DESIGN.md section 6)
    from fadesim.tasks.protocol import Task


def simulate_reference(
    task: Task,
    cfg: SimConfig,
    *,
    seed: int = 0,
    hp: Mapping[str, float] | None = None,
    uniforms: UniformSource | None = None,
    dtype: Any = np.float64,
) -> SimResult:
    """Run one configuration with numpy. ``uniforms(t, shape)`` supplies step t's random draws (default:
    ``numpy.random.default_rng(seed)``); feeding the jax simulator's draws reproduces its trajectory."""
    hp = dict(hp or {})
    cfg.check_sweep(hp)
    rng = np.random.default_rng(seed)
    draw = uniforms or (lambda t, shape: rng.random(shape))
    state = initial_state(task, cfg, np, dtype)
    first = policy_metrics(task, cfg, state["params"], np)
    rows = []
    for t in range(cfg.steps):
        u = np.asarray(draw(t, task.uniform_shape(cfg.G)), dtype=dtype)
        state, batch = train_step(task, cfg, state, u, hp, np)
        if (t + 1) % cfg.log_every == 0:
            rows.append({**batch, **policy_metrics(task, cfg, state["params"], np)})
    metrics = {k: v[None, None, :] for k, v in stack_logs(first, rows).items()}
    steps = np.arange(0, cfg.steps + 1, cfg.log_every)
    return SimResult(task=task.name, config=cfg, seeds=(seed,), sweep={k: (v,) for k, v in hp.items()},
                     steps=steps, metrics=metrics)
