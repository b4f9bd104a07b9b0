"""Shared check: the jax simulator and the numpy reference, fed the same uniforms, give the same metrics."""

import jax
import jax.numpy as jnp
import numpy as np

from fadesim.sim import simulate, simulate_reference, step_uniforms


def assert_jax_equals_numpy(task, cfg, seed, *, rtol, atol):
    """Run both in float64 from jax's draws for ``seed``; every logged metric must agree to rtol / atol."""
    with jax.enable_x64(True):
        res = simulate(task, cfg, seeds=[seed], dtype=jnp.float64)
        key = jax.random.PRNGKey(seed)
        ref = simulate_reference(task, cfg, uniforms=lambda t, s: np.asarray(step_uniforms(key, t, s, jnp.float64)))
    assert set(res.metrics) == set(ref.metrics)
    for name in ref.metrics:
        np.testing.assert_allclose(res.metrics[name], ref.metrics[name], rtol=rtol, atol=atol, err_msg=name)
