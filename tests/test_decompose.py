"""The sign x difficulty decomposition against a slow loop, across backends."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fadesim


def slow_decompose(A, r, mask, bins):
    mp, mn, ph = [], [], []
    for g in range(A.shape[0]):
        v = mask[g]
        a = A[g][v]
        mp.append(sum(x for x in a if x > 0))
        mn.append(sum(-x for x in a if x < 0))
        n = v.sum()
        ph.append(sum(1 for x in r[g][v] if x > 0.5) / n if n else 0.0)
    mp, mn, ph = map(np.array, (mp, mn, ph))
    m = mp + mn
    bp, bn = np.zeros(bins), np.zeros(bins)
    for g in range(len(m)):
        b = min(int(np.floor(ph[g] * bins)), bins - 1)
        bp[b] += mp[g]
        bn[b] += mn[g]
    tot = m.sum()
    return dict(positive_mass=mp, negative_mass=mn, pass_rate=ph, total_positive=mp.sum(), total_negative=mn.sum(),
                balance=(mp.sum() - mn.sum()) / tot if tot else 0.0, binned_positive=bp, binned_negative=bn,
                hardness=(m * (1 - ph)).sum() / tot if tot else 0.0,
                ess=tot**2 / (m**2).sum() if tot else 0.0)


@st.composite
def adv_batches(draw, shapes=None):
    if shapes is None:
        B, G = draw(st.integers(1, 8)), draw(st.integers(1, 16))
    else:  # a fixed set of shapes lets jax reuse compiled code across examples
        B, G = draw(st.sampled_from(shapes))
    A = np.array(draw(st.lists(st.floats(-5, 5, allow_subnormal=False), min_size=B * G, max_size=B * G))).reshape(B, G)
    r = np.array(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=B * G, max_size=B * G))).reshape(B, G)
    mask = np.array(draw(st.lists(st.booleans(), min_size=B * G, max_size=B * G))).reshape(B, G)
    return A, r, mask, draw(st.integers(1, 12)) if shapes is None else draw(st.sampled_from([1, 10]))


@settings(max_examples=200)
@given(data=adv_batches())
def test_decompose_matches_slow_loop(data):
    A, r, mask, bins = data
    got = fadesim.decompose(A, r, mask=mask, bins=bins)._asdict()
    want = slow_decompose(A, r, mask, bins)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-10, atol=1e-12, err_msg=key)


@functools.lru_cache(maxsize=None)
def _jitted_decompose(bins):
    """One jitted function per bin count, so every example of a shape reuses the compiled program."""
    import jax

    return jax.jit(lambda a, rr, m: fadesim.decompose(a, rr, mask=m, bins=bins))


@settings(max_examples=50)
@given(data=adv_batches(shapes=[(1, 1), (1, 5), (4, 2), (4, 16), (8, 7)]))
def test_decompose_backends_agree(data):
    import jax
    import jax.numpy as jnp
    import torch

    A, r, mask, bins = data
    ref = fadesim.decompose(A, r, mask=mask, bins=bins)
    outs = {"torch": fadesim.decompose(torch.asarray(A), torch.asarray(r), mask=torch.asarray(mask), bins=bins)}
    with jax.enable_x64(True):
        outs["jax"] = fadesim.decompose(jnp.asarray(A), jnp.asarray(r), mask=jnp.asarray(mask), bins=bins)
        outs["jax.jit"] = _jitted_decompose(bins)(jnp.asarray(A), jnp.asarray(r), jnp.asarray(mask))
    for backend, out in outs.items():
        for key, a, b in zip(ref._fields, ref, out):
            np.testing.assert_allclose(np.asarray(b), a, rtol=1e-12, atol=1e-12, err_msg=f"{backend}:{key}")


@settings(max_examples=200)
@given(st.data())
def test_mean_centred_advantages_are_sign_balanced(data):
    G = data.draw(st.integers(2, 32))
    B = data.draw(st.integers(1, 6))
    r = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=B * G, max_size=B * G))).reshape(B, G)
    for name in [n for n in fadesim.names() if fadesim.info(n).mean_centred]:
        params = {"K": min(2, G - 1)} if "K" in fadesim.info(name).params else {}
        kw = {"logprobs": np.zeros_like(r)} if fadesim.info(name).needs_logprobs else {}
        d = fadesim.decompose(fadesim.get(name, **params)(r, **kw), r)
        np.testing.assert_allclose(d.positive_mass, d.negative_mass, rtol=1e-9, atol=1e-12, err_msg=name)
        assert abs(float(d.balance)) < 1e-9


def test_no_mass_is_finite_and_documented():
    r = np.ones((4, 8))
    d = fadesim.decompose(fadesim.get("grpo")(r), r)
    assert d.total_positive == d.total_negative == d.balance == d.hardness == d.ess == 0.0


def test_sign_only_advantages_have_extreme_balance():
    r = (np.random.default_rng(0).random((64, 8)) < 0.5).astype(float)
    assert fadesim.decompose(fadesim.get("psr")(r), r).balance == 1.0
    assert fadesim.decompose(fadesim.get("nsr")(r), r).balance == -1.0


def test_ess_counts_groups_carrying_equal_mass():
    r = np.array([[1, 0, 1, 0.0]] * 5 + [[1.0] * 4] * 3)
    d = fadesim.decompose(fadesim.get("grpo")(r), r)
    assert float(d.ess) == pytest.approx(5.0)
    assert float(d.hardness) == pytest.approx(0.5)
