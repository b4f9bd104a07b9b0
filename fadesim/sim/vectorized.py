"""The JAX simulator: a run is one ``lax.scan``; a sweep (configurations x seeds) one ``vmap`` under one ``jit``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fadesim.sim.config import SimConfig
from fadesim.sim.result import SimResult
from fadesim.sim.step import BATCH_METRICS, initial_state, policy_metrics, train_step


def step_uniforms(key: Any, t: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Step t's random draws: uniform(fold_in(key, t)); the numpy reference can be fed the same."""
    return jax.random.uniform(jax.random.fold_in(key, t), shape, dtype=dtype)


def build_run(task: Any, cfg: SimConfig, dtype: Any) -> Any:
    """run(key, hp) -> (metrics at step 0, metrics at each log point), pure and jittable."""
    shape = task.uniform_shape(cfg.G)
    n_logs = cfg.steps // cfg.log_every

    def run(key: Any, hp: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        state = initial_state(task, cfg, jnp, dtype)
        first = policy_metrics(task, cfg, state["params"], jnp)

        def one_step(state: dict[str, Any], t: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            return train_step(task, cfg, state, step_uniforms(key, t, shape, dtype), hp, jnp)

        def one_log(state: dict[str, Any], chunk: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            ts = chunk * cfg.log_every + jnp.arange(cfg.log_every)
            state, batches = jax.lax.scan(one_step, state, ts)
            last = {k: v[-1] for k, v in batches.items()}
            return state, {**last, **policy_metrics(task, cfg, state["params"], jnp)}

        _, logs = jax.lax.scan(one_log, state, jnp.arange(n_logs))
        return first, logs

    return run


_COMPILED: dict[tuple[int, str, str, bool], Any] = {}


def _compiled_sweep(task: Any, cfg: SimConfig, dtype: Any, has_sweep: bool) -> Any:
    """jit(vmap over configurations (vmap over seeds (run))), cached so repeated calls do not recompile."""
    key = (id(task), repr(cfg), jnp.dtype(dtype).name, has_sweep)
    if key not in _COMPILED:
        over_seeds = jax.vmap(build_run(task, cfg, dtype), in_axes=(0, None))
        if has_sweep:
            fn = jax.vmap(over_seeds, in_axes=(None, 0))
        else:
            def fn(keys: Any, hp: Any) -> Any:
                return jax.tree.map(lambda x: x[None], over_seeds(keys, hp))
        _COMPILED.clear() if len(_COMPILED) > 32 else None
        _COMPILED[key] = (task, jax.jit(fn))  # keep the task alive so its id is not reused
    return _COMPILED[key][1]


def simulate(
    task: Any,
    cfg: SimConfig,
    *,
    seeds: Sequence[int] = (0,),
    sweep: Mapping[str, Sequence[float]] | None = None,
    dtype: Any = jnp.float32,
) -> SimResult:
    """Run ``len(sweep values) x len(seeds)`` simulations in one jitted, vmapped call.

    ``sweep`` maps sweepable hyper-parameter names (lr, kl_beta, eps_low, eps_high, or the advantage's
    numeric parameters such as lam or gamma) to one value per configuration; lists are zipped, so build
    products with ``itertools.product`` first.
    """
    sweep = {k: tuple(float(x) for x in v) for k, v in (sweep or {}).items()}
    cfg.check_sweep(sweep)
    lengths = {len(v) for v in sweep.values()}
    if len(lengths) > 1:
        raise ValueError(f"sweep values must all have the same length; got lengths {sorted(lengths)}")
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("simulate needs at least one seed")
    hp = {k: jnp.asarray(v, dtype=dtype) for k, v in sweep.items()}
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    first, logs = jax.device_get(_compiled_sweep(task, cfg, dtype, bool(hp))(keys, hp))
    metrics = {}
    for name, values in logs.items():
        values = np.asarray(values, dtype=np.float64)  # (n_cfg, n_seeds, n_logs)
        head = np.full(values.shape[:2] + (1,), np.nan) if name in BATCH_METRICS else \
            np.asarray(first[name], dtype=np.float64)[..., None]
        metrics[name] = np.concatenate([head, values], axis=-1)
    return SimResult(task=task.name, config=cfg, seeds=seeds, sweep=sweep,
                     steps=np.arange(0, cfg.steps + 1, cfg.log_every), metrics=metrics)
