"""Shared check: the jax simulator and the numpy reference, fed the same uniforms, give the same metrics."""

import jax
import jax.numpy as jnp
import numpy as np

from fadesim.sim import SimConfig, simulate, simulate_reference, step_uniforms
from fadesim.tasks import make_task


def assert_jax_equals_numpy(task, cfg, seed, *, rtol, atol):
    """Run both in float64 from jax's draws for ``seed``; every logged metric must agree to rtol / atol."""
    with jax.enable_x64(True):
        res = simulate(task, cfg, seeds=[seed], dtype=jnp.float64)
        key = jax.random.PRNGKey(seed)
        ref = simulate_reference(task, cfg, uniforms=lambda t, s: np.asarray(step_uniforms(key, t, s, jnp.float64)))
    assert set(res.metrics) == set(ref.metrics)
    for name in ref.metrics:
        np.testing.assert_allclose(res.metrics[name], ref.metrics[name], rtol=rtol, atol=atol, err_msg=name)


#: short runs on every task (tabular, shared W, token sequences, the neural task): the check that the suite's XLA
#: flags compute the default flags' numbers
SHORT_RUN_TASKS = {"bandit": dict(n_prompts=16, n_answers=8, n_correct=2),
                   "linear_softmax": dict(n_prompts=16, n_answers=8, n_correct=2, width=6),
                   "chain": dict(n_prompts=12, length=3, vocab=5, n_correct=2),
                   "neural": dict(n_prompts=16, length=2, vocab=4, width=8)}


def short_runs() -> dict[str, np.ndarray]:
    """'task/metric' -> metrics of a 20-step FADE run (two seeds) on each of SHORT_RUN_TASKS."""
    out = {}
    for name, kw in SHORT_RUN_TASKS.items():
        res = simulate(make_task(name, seed=0, **kw), SimConfig(advantage="fade", G=8, steps=20, log_every=10),
                       seeds=[0, 1])
        out.update({f"{name}/{m}": np.asarray(v) for m, v in res.metrics.items()})
    return out


def short_runs_npz() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **short_runs())
    return buf.getvalue()
