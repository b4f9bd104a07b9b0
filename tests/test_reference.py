"""Each advantage against a slow per-group loop written from its paper's formula."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fadesim
from tests import reference as ref

SIGNALS = {"entropy": 0.7, "initial_entropy": 1.3}


@st.composite
def masked_batch(draw, min_g=2, max_g=12, binary=None, max_abs=5.0):
    B = draw(st.integers(1, 3))
    G = draw(st.integers(min_g, max_g))
    is_binary = draw(st.booleans()) if binary is None else binary
    if is_binary:
        vals = st.sampled_from([0.0, 1.0])
    else:
        vals = st.floats(-max_abs, max_abs, allow_nan=False, allow_subnormal=False)
    r = np.array(draw(st.lists(vals, min_size=B * G, max_size=B * G))).reshape(B, G)
    mask = np.array(draw(st.lists(st.booleans(), min_size=B * G, max_size=B * G))).reshape(B, G)
    mask[:, :min_g] = True  # every group keeps at least min_g valid rollouts
    perm = np.argsort(np.array(draw(st.permutations(range(G)))))
    lp = np.array(draw(st.lists(st.floats(-10, 0, allow_subnormal=False), min_size=B * G, max_size=B * G)))
    return r, mask[:, perm], lp.reshape(B, G)


def _compare(name, r, mask, lp, params=(), ref_kw=None):
    params = dict(params)
    kw = {"mask": mask}
    if fadesim.info(name).needs_logprobs:
        kw["logprobs"] = lp
    if fadesim.info(name).needs_signals:
        kw["signals"] = SIGNALS
    out = fadesim.get(name, **params)(r, **kw)
    assert np.all(out[~mask] == 0.0)
    for i in range(r.shape[0]):
        v = mask[i]
        extra = dict(ref_kw or {})
        if name == "unlikeliness":
            extra["logprobs"] = list(lp[i, v])
        if name == "fade":
            extra["signals"] = SIGNALS
        expected = ref.REFERENCES[name](list(r[i, v]), **params, **extra)
        np.testing.assert_allclose(out[i, v], expected, rtol=1e-9, atol=1e-9)


CONTINUOUS_OK = ["sign_balanced", "sign_scaled", "grpo", "dr_grpo", "rloo", "reinforce", "psr", "nsr", "w_reinforce", "asymmetric",
                 "median", "focal", "risk_sensitive", "unlikeliness", "fade"]


@pytest.mark.parametrize("name", CONTINUOUS_OK)
@settings(max_examples=200)
@given(data=masked_batch())
def test_matches_reference(name, data):
    _compare(name, *data)


@pytest.mark.parametrize("params", [{"unbiased_std": False}, {"eps": 0.0}, {"eps": 1e-4}])
@settings(max_examples=100)
@given(data=masked_batch())
def test_grpo_options_match_reference(params, data):
    _compare("grpo", *data, params=params)


@pytest.mark.parametrize("name,params", [("w_reinforce", {"lam": 0.5}), ("focal", {"gamma": 3.0}),
                                         ("risk_sensitive", {"beta": -1.5}), ("risk_sensitive", {"beta": 1e-3}),
                                         ("asymmetric", {"delta": -0.3}), ("reinforce", {"convention": "pm1"}),
                                         ("unlikeliness", {"beta_rank": 0.9}), ("sign_scaled", {"balance": 0.7}),
                                         ("sign_scaled", {"balance": -1.0, "base": "dr_grpo"})])
@settings(max_examples=100)
@given(data=masked_batch())
def test_hyper_parameters_match_reference(name, params, data):
    _compare(name, *data, params=params)


@pytest.mark.parametrize("name", ["pass_at_k", "pkpo"])
@settings(max_examples=200)
@given(data=st.data())
def test_pass_at_k_brute_force_over_subsets(name, data):
    """Analytic pass@k (2508.10751) and PKPO (2505.15201) equal enumeration of all K-subsets, G <= 10."""
    G = data.draw(st.integers(2, 10))
    K = data.draw(st.integers(1, G if name == "pass_at_k" else G - 1))
    r, mask, lp = data.draw(masked_batch(min_g=G, max_g=G, binary=True))
    mask[:] = True
    _compare(name, r, mask, lp, params={"K": K})


def test_pass_at_k_with_K1_is_grpo_with_biased_std():
    r = (np.random.default_rng(0).random((50, 8)) < 0.4).astype(float)
    np.testing.assert_allclose(fadesim.get("pass_at_k", K=1)(r),
                               fadesim.get("grpo", unbiased_std=False, eps=0.0)(r), atol=1e-12)


def test_pkpo_with_K1_is_rloo():
    r = (np.random.default_rng(1).random((50, 8)) < 0.4).astype(float)
    np.testing.assert_allclose(fadesim.get("pkpo", K=1)(r), fadesim.get("rloo")(r), atol=1e-12)


@pytest.mark.parametrize("G,K", [(4, 1), (4, 3), (8, 2), (8, 5), (16, 4)])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.8])
def test_pkpo_is_unbiased_for_the_pass_at_k_gradient(G, K, p):
    """Exact: for a 2-answer softmax with p = sigmoid(theta), E[(1/G) sum_i A_i d/dtheta log pi(a_i)]
    summed over k ~ Binomial(G, p) equals d/dtheta [1 - (1 - p)^K] = K (1-p)^(K-1) p (1-p)."""
    prof = fadesim.profile("pkpo", G, K=K)
    k = np.arange(G + 1)
    weights = fadesim.theory.binomial_weights(p, G)
    a_pos, a_neg = np.nan_to_num(prof.a_pos), np.nan_to_num(prof.a_neg)
    estimate = weights @ ((k * a_pos * (1 - p) + (G - k) * a_neg * (-p)) / G)
    truth = K * (1 - p) ** (K - 1) * p * (1 - p)
    assert math.isclose(estimate, truth, rel_tol=1e-10, abs_tol=1e-14)


def test_reference_tables_match_the_design_formulas():
    """DESIGN.md section 4 tables, binary rewards, G = 8, k correct."""
    G = 8
    for k in range(1, G):
        p = k / G
        s = math.sqrt(p * (1 - p) * G / (G - 1))
        prof = fadesim.profile("grpo", G)
        assert math.isclose(prof.a_pos[k], (1 - p) / (s + 1e-6), rel_tol=1e-12)
        assert math.isclose(prof.a_neg[k], -p / (s + 1e-6), rel_tol=1e-12)
        R = 1 - math.comb(G - k, 4) / math.comb(G, 4)
        sr = math.sqrt(R * (1 - R))
        pk = fadesim.profile("pass_at_k", G, K=4)
        if sr > 0:
            assert math.isclose(pk.a_pos[k], (1 - R) / sr, rel_tol=1e-12)
            expected_neg = (1 - R - math.comb(G - k - 1, 3) / math.comb(G - 1, 3)) / sr
            assert math.isclose(pk.a_neg[k], expected_neg, rel_tol=1e-12, abs_tol=1e-12)
