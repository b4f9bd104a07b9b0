"""fadesim.advantage: a plain function decorated meets the call contract; the decorator's own errors."""

import inspect

import array_api_compat
import numpy as np
import pytest

import fadesim


def centred(rewards, *, mask=None, scale=1.0):
    xp = array_api_compat.array_namespace(rewards)
    m = xp.ones_like(rewards) if mask is None else xp.astype(mask, rewards.dtype)
    n = xp.maximum(xp.sum(m, axis=-1, keepdims=True), xp.ones_like(rewards[..., :1]))
    return scale * (rewards - xp.sum(rewards * m, axis=-1, keepdims=True) / n) * m


adv = fadesim.advantage(centred, mean_centred=True)


def test_decorated_function_computes_the_same_numbers():
    r = np.random.default_rng(0).random((4, 6))
    np.testing.assert_array_equal(adv(r), centred(r))
    np.testing.assert_array_equal(adv(r, scale=2.0), centred(r, scale=2.0))
    mask = np.random.default_rng(1).random((4, 6)) > 0.3
    junk = np.where(mask, r, 1e6)
    np.testing.assert_allclose(adv(junk, mask=mask), np.where(mask, centred(np.where(mask, r, 0.0), mask=mask), 0.0))
    assert adv([[1.0, 0.0]]).tolist() == [[0.5, -0.5]]  # lists become numpy arrays


@pytest.mark.parametrize("rewards,kw,message", [
    (np.array([[0.0, np.nan]]), {}, "NaN or inf"),
    (np.float64(1.0), {}, "0-d"),
    (np.zeros((2, 3)), {"mask": np.ones((2, 4), bool)}, "mask shape"),
    (np.zeros((2, 3)), {"mask": np.ones((2, 3))}, "boolean"),
    (np.zeros((3, 1)), {}, "G = 1 is too small"),
])
def test_decorated_function_validates_its_input(rewards, kw, message):
    with pytest.raises(ValueError, match=message):
        adv(rewards, **kw)


def test_torch_and_jax_outputs_are_constants_in_the_input_dtype():
    import jax
    import jax.numpy as jnp
    import torch

    r = torch.tensor([[1.0, 0.0, 0.5]], dtype=torch.float32, requires_grad=True)
    out = adv(r)
    assert out.dtype == torch.float32 and not out.requires_grad
    assert adv(np.zeros((2, 3), dtype=np.float32)).dtype == np.float32
    grad = jax.grad(lambda x: jnp.sum(adv(x) * x))(jnp.array([[1.0, 0.0, 0.5]]))
    np.testing.assert_allclose(grad, adv(jnp.array([[1.0, 0.0, 0.5]])))  # d/dx sum(A x) = A: A is a constant
    jitted = jax.jit(lambda x: adv(x))(jnp.array([[1.0, 0.0, 0.5]]))
    np.testing.assert_allclose(jitted, [[0.5, -0.5, 0.0]])


def test_singletons_are_refused_below_the_minimum_and_allowed_at_one():
    one = fadesim.advantage(min_group_size=1)(lambda rewards: rewards * 2.0)
    assert one(np.array([[1.0], [0.0]])).tolist() == [[2.0], [0.0]]
    with pytest.raises(ValueError, match="G = 2 is too small"):
        fadesim.advantage(min_group_size=3)(centred)(np.zeros((1, 2)))


def test_signature_metadata_and_registration():
    sig = inspect.signature(adv)
    assert list(sig.parameters) == ["rewards", "mask", "signals", "logprobs", "scale"]
    assert adv.__fadesim__ == {"mean_centred": True, "min_group_size": 2}
    assert adv.__name__ == "centred" and adv.__doc__ == centred.__doc__
    fadesim.register("_decorated_test_", adv, paper="user", mean_centred=True)
    try:
        assert fadesim.info("_decorated_test_").params == {"scale": 1.0}
        prof = fadesim.profile("_decorated_test_", 4)
        np.testing.assert_allclose(prof.a_pos[1:], fadesim.profile("dr_grpo", 4).a_pos[1:])
    finally:
        fadesim.unregister("_decorated_test_")


def test_decorator_errors():
    with pytest.raises(ValueError, match="takes no 'mask'"):
        fadesim.advantage(lambda rewards: rewards)(np.zeros((1, 2)), mask=np.ones((1, 2), bool))
    with pytest.raises(ValueError, match="min_group_size must be an integer >= 1"):
        fadesim.advantage(min_group_size=0)
    with pytest.raises(ValueError, match="unknown declaration"):
        fadesim.advantage(centered=True)
    with pytest.raises(ValueError, match="returned shape"):
        fadesim.advantage(lambda rewards: rewards[..., :1])(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="expected a function"):
        fadesim.advantage(3)


def test_the_group_std_metadata_matches_what_each_advantage_computes():
    """Advantage.divides_by_group_std against behaviour, on non-binary rewards: an advantage that divides by the
    group's std is unchanged when the rewards are scaled by 3, one that does not scales with them (each with the
    parameter that decides it). The binary-only ones declared std-scaled (focal, fade, unlikeliness: GRPO times a
    weight) cannot be told apart this way, as their rewards are thresholded; their declaration is checked as
    metadata only."""
    r = np.random.default_rng(0).random((6, 8))
    cases = [("grpo", {}), ("grpo", {"scale": "none"}), ("median", {}), ("median", {"scale_by_std": False}),
             ("sign_scaled", {"balance": 0.3}), ("sign_scaled", {"balance": 0.3, "base": "dr_grpo"}),
             ("dr_grpo", {}), ("rloo", {})]
    for name, params in cases:
        entry = fadesim.info(name)
        a, b = fadesim.get(name, **params)(r), fadesim.get(name, **params)(3.0 * r)
        if entry.divides_by_group_std(**params):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_allclose(b, 3.0 * a, rtol=1e-6, atol=1e-9, err_msg=name)
    assert sum(fadesim.info(n).divides_by_group_std(**p) for n, p in cases) == 3  # both kinds were exercised
    assert all(fadesim.info(n).divides_by_group_std() for n in ("focal", "fade", "unlikeliness"))
    assert not any(fadesim.info(n).divides_by_group_std() for n in ("psr", "nsr", "w_reinforce", "dr_grpo", "rloo"))
    with pytest.raises(ValueError, match="has no parameter"):
        fadesim.info("grpo").divides_by_group_std(scal="none")
