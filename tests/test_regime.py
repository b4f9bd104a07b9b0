"""The LLM-like regime (issue 12): the Zipf prior and LogUniform difficulty, calibration to a published pass@k
curve, the adam_shared optimizer, the mean-centred sign axis (sign_scaled), the new metrics and the O(K) sampler."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

import jax
import jax.numpy as jnp

import fadesim
from fadesim.sim import SimConfig
from fadesim.sim.optim import OPTIMIZERS
from fadesim.sim.step import policy_metrics
from fadesim.tasks import (Beta, LogUniform, Mixture, PointMass, Stratified, calibrate, load_pass_at_k, make_task,
                           task_pass_at_k)
from fadesim.tasks import softmax_policy as sp
from fadesim.tasks.regimes import llm_calibration
from tests.simulators import assert_jax_equals_numpy


# --- the Zipf prior -------------------------------------------------------------------------------------

def _drawn_pass_rates(difficulty, seed, n):
    """make_* draw the pass rates first from default_rng(seed): the rates a task was asked for."""
    return fadesim.tasks.as_distribution(difficulty).sample(np.random.default_rng(seed), n)


@pytest.mark.parametrize("name", ["bandit", "linear_softmax"])
@pytest.mark.parametrize("exponent", [0.5, 1.0, 2.0])
def test_zipf_prior_gives_the_asked_pass_rates_and_zipf_ratios_inside_each_set(name, exponent):
    difficulty = LogUniform(1e-4, 0.3)
    kw = {"width": 4} if name == "linear_softmax" else {}
    task = make_task(name, n_prompts=24, n_answers=64, n_correct=8, difficulty=difficulty, prior="zipf",
                     zipf_exponent=exponent, seed=3, **kw)
    probs = special.softmax(task.logits(task.init_params(np, np.float64), np), axis=-1)
    asked = _drawn_pass_rates(difficulty, 3, 24)
    np.testing.assert_allclose((probs * task.correct).sum(-1), asked, rtol=1e-10, atol=0)
    for n in range(24):
        for sel in (task.correct[n], ~task.correct[n]):
            share = np.sort(probs[n, sel])[::-1]
            ranks = np.arange(1, share.size + 1)
            np.testing.assert_allclose(share[0] / share, ranks**exponent, rtol=1e-10)


def test_zipf_chain_keeps_the_asked_pass_rates():
    difficulty = LogUniform(1e-3, 0.5)
    task = make_task("chain", n_prompts=10, length=3, vocab=6, n_correct=2, difficulty=difficulty, prior="zipf", seed=1)
    exact = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
    np.testing.assert_allclose(exact, _drawn_pass_rates(difficulty, 1, 10), rtol=1e-10)


def test_large_answer_spaces_build_quickly_and_exactly():
    task = make_task("bandit", n_prompts=64, n_answers=8192, n_correct=4096, difficulty=LogUniform(1e-4, 0.3),
                     prior="zipf", seed=0)
    probs = special.softmax(task.logits0, axis=-1)
    np.testing.assert_allclose((probs * task.correct).sum(-1), _drawn_pass_rates(LogUniform(1e-4, 0.3), 0, 64),
                               rtol=1e-10)


def test_prior_and_task_bad_input_are_clear_errors():
    with pytest.raises(ValueError, match="unknown prior 'pareto'"):
        make_task("bandit", prior="pareto")
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="zipf_exponent must be a positive number"):
            make_task("bandit", prior="zipf", zipf_exponent=bad)
    with pytest.raises(ValueError, match="n_correct .C = 20. must be smaller than n_answers .K = 16."):
        make_task("bandit", n_answers=16, n_correct=20, prior="zipf")
    with pytest.raises(ValueError, match="spread belongs to the 'normal' prior"):
        make_task("bandit", prior="zipf", spread=2.0)
    with pytest.raises(ValueError, match="unknown regime 'huge'"):
        make_task("bandit", regime="huge")


# --- LogUniform and stratified sampling -----------------------------------------------------------------

def test_loguniform_k_weights_and_pass_at_k_equal_quadrature_and_monte_carlo():
    d = LogUniform(1e-4, 0.3)
    G = 8
    density = lambda p: 1.0 / (p * np.log(d.high / d.low))  # noqa: E731 - the density as written
    quad = [integrate.quad(lambda p, k=k: stats.binom.pmf(k, G, p) * density(p), d.low, d.high,
                           epsabs=1e-13, epsrel=1e-12, points=[1e-3, 1e-2], limit=200)[0] for k in range(G + 1)]
    np.testing.assert_allclose(d.k_weights(G), quad, rtol=1e-8, atol=1e-12)
    ks = np.array([1, 2, 16, 256, 1024])
    quad_pk = [1.0 - integrate.quad(lambda p, k=k: (1.0 - p) ** k * density(p), d.low, d.high, epsabs=1e-13,
                                    epsrel=1e-12, points=[1 / k], limit=200)[0] for k in ks]
    np.testing.assert_allclose(d.pass_at_k(ks), quad_pk, rtol=1e-9, atol=1e-12)
    p = d.sample(0, 200_000)  # Monte Carlo within 4 standard errors
    vals = 1.0 - (1.0 - p[None, :]) ** ks[:, None]
    se = vals.std(axis=1) / np.sqrt(p.size)
    assert np.all(np.abs(vals.mean(axis=1) - d.pass_at_k(ks)) < 4 * se)
    assert abs(p.mean() - d.mean()) < 4 * p.std() / np.sqrt(p.size)


@pytest.mark.parametrize("dist", [Beta(0.8, 0.8), Beta(0.5, 3.0), PointMass(0.2), LogUniform(1e-4, 0.3),
                                  Mixture((LogUniform(3e-3, 0.9), PointMass(0.0)), (0.25, 0.75)),
                                  Mixture((Beta(0.7, 0.4), PointMass(0.0)), (0.9, 0.1))])
def test_pass_at_k_is_the_expectation_over_the_k_pmf_and_stratified_draws_reproduce_it(dist):
    ks = np.array([1, 4, 64, 1024])
    G = 6  # pass@G = 1 - P(k = 0 of G), from the k-pmf
    np.testing.assert_allclose(dist.pass_at_k([G])[0], 1.0 - dist.k_weights(G)[0], atol=1e-10)
    drawn = Stratified(dist).sample(0, 512)
    got = 1.0 - ((1.0 - drawn[None, :]) ** ks[:, None]).mean(axis=1)
    np.testing.assert_allclose(got, dist.pass_at_k(ks), atol=3e-3)


@pytest.mark.parametrize("low,high", [(0.0, 0.3), (0.3, 0.1), (0.1, 1.0), (-1e-3, 0.5), (0.2, 0.2)])
def test_loguniform_bad_bounds(low, high):
    with pytest.raises(ValueError, match="LogUniform needs 0 < low < high < 1"):
        LogUniform(low, high)


# --- calibration -------------------------------------------------------------------------------------------

KS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.mark.parametrize("family,dist,expect", [
    ("loguniform", LogUniform(1e-4, 0.3), {"low": 1e-4, "high": 0.3}),
    ("loguniform+unsolved", Mixture((LogUniform(3e-4, 0.2), PointMass(0.0)), (0.6, 0.4)),
     {"low": 3e-4, "high": 0.2, "unsolved": 0.4}),
    ("beta", Beta(0.5, 3.0), {"a": 0.5, "b": 3.0}),
    ("beta+unsolved", Mixture((Beta(0.7, 0.4), PointMass(0.0)), (0.97, 0.03)), {"a": 0.7, "b": 0.4, "unsolved": 0.03}),
])
def test_calibrate_recovers_a_known_distribution_from_its_exact_curve(family, dist, expect):
    fit = calibrate(dict(zip(KS, dist.pass_at_k(KS))), family=family)
    for name, value in expect.items():
        assert fit.params[name] == pytest.approx(value, rel=1e-4), (name, fit.params)
    assert fit.max_abs_error < 1e-8


def test_calibrate_recovers_the_distribution_a_task_was_built_from():
    dist = Mixture((LogUniform(1e-3, 0.5), PointMass(0.0)), (0.7, 0.3))
    task = make_task("bandit", n_prompts=4096, n_answers=16, n_correct=2, difficulty=Stratified(dist),
                     prior="zipf", seed=0)
    fit = calibrate(task_pass_at_k(task, KS))
    # the task clips p = 0 to 1e-6 and draws 4096 prompts: parameters within 5%, the curve within 2e-3
    assert fit.params["low"] == pytest.approx(1e-3, rel=0.05)
    assert fit.params["high"] == pytest.approx(0.5, rel=0.05)
    assert fit.params["unsolved"] == pytest.approx(0.3, rel=0.05)
    assert fit.max_abs_error < 2e-3


def test_the_shipped_curve_is_fitted_within_the_error_calibrate_reports():
    curve = load_pass_at_k(split="introductory")
    assert curve == {1: 0.0414, 5: 0.0965, 1000: 0.2502}  # arXiv 2107.03374, Table 3
    fit = llm_calibration()
    recomputed = fit.distribution.pass_at_k(list(curve))
    for (k, target), value in zip(curve.items(), recomputed):
        assert fit.errors[k] == pytest.approx(value - target, abs=1e-15)
    assert fit.max_abs_error < 1e-6  # three parameters, three points
    task = make_task("bandit", regime="llm", n_prompts=512, seed=0)
    got = task_pass_at_k(task, list(curve))
    for k, target in curve.items():  # the task itself: stratified draws, p = 0 clipped to 1e-6
        assert abs(got[k] - target) < 3e-3, (k, got[k], target)


@pytest.mark.parametrize("curve,match", [
    ({1: 0.3, 4: 0.2}, "not non-decreasing in k: pass@1 = 0.3 > pass@4 = 0.2"),
    ({1: 0.0, 4: 0.2}, r"pass@1 = 0.0 is outside \(0, 1\)"),
    ({1: 0.5, 4: 1.0}, r"pass@4 = 1.0 is outside \(0, 1\)"),
    ({1: 0.5, 4: float("nan")}, "outside"),
    ({0: 0.1, 4: 0.2}, "k must be a positive integer; got 0"),
    ({1.5: 0.1, 4: 0.2}, "k must be a positive integer; got 1.5"),
    ({}, "non-empty mapping"),
])
def test_calibrate_bad_curves(curve, match):
    with pytest.raises(ValueError, match=match):
        calibrate(curve)


def test_calibrate_bad_family_or_too_few_points():
    with pytest.raises(ValueError, match="unknown calibration family 'gamma'"):
        calibrate({1: 0.1, 4: 0.2}, family="gamma")
    with pytest.raises(ValueError, match="has 3 parameters; the curve gives only 2"):
        calibrate({1: 0.1, 4: 0.2}, family="loguniform+unsolved")


# --- adam_shared ---------------------------------------------------------------------------------------------

def test_adam_shared_equals_a_hand_computation_and_numpy_equals_jax():
    init, update = OPTIMIZERS["adam_shared"]
    params = {"a": np.array([0.5, -1.0]), "b": np.array([[2.0, 0.0, 1.0]])}
    grads = [{"a": np.array([0.1, -0.3]), "b": np.array([[0.2, 0.0, -0.5]])},
             {"a": np.array([-0.2, 0.1]), "b": np.array([[0.4, 0.3, 0.1]])}]
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    # by hand: one scalar second moment, the mean of g^2 over all 5 entries
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = 0.0
    expect = {k: x.copy() for k, x in params.items()}
    for t, g in enumerate(grads, start=1):
        v = b2 * v + (1 - b2) * (np.sum(g["a"] ** 2) + np.sum(g["b"] ** 2)) / 5.0
        for k in params:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            expect[k] = expect[k] + lr * (m[k] / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    got_np, state = dict(params), init(params, np)
    for g in grads:
        got_np, state = update(g, state, got_np, lr, np)
    assert np.ndim(state["v"]) == 0  # one second moment, not one per entry
    with jax.enable_x64(True):
        jparams = {k: jnp.asarray(x) for k, x in params.items()}
        got_jax, jstate = jparams, init(jparams, jnp)
        for g in grads:
            got_jax, jstate = jax.jit(lambda g, s, p: update(g, s, p, lr, jnp))({k: jnp.asarray(x) for k, x in g.items()},
                                                                                 jstate, got_jax)
    for k in params:
        np.testing.assert_allclose(got_np[k], expect[k], rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(np.asarray(got_jax[k]), expect[k], rtol=1e-12, atol=1e-14)


def test_adam_shared_with_equal_gradient_sizes_is_adam():
    params = {"x": np.array([1.0, 2.0, 3.0])}
    g = {"x": np.array([0.3, -0.3, 0.3])}
    outs = []
    for name in ("adam", "adam_shared"):
        init, update = OPTIMIZERS[name]
        outs.append(update(g, init(params, np), params, 0.1, np)[0]["x"])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-14)


def test_adam_tied_is_adam_where_no_per_prompt_gradient_reaches_the_shared_parameters():
    """adam_tied: per-entry Adam, but a shared parameter's second moment adds ||g_theta||^2. Without per-prompt logits
    (or with a zero gradient on them) it is Adam; with a large per-prompt gradient the shared step shrinks by exactly
    |g_s| / sqrt(g_s^2 + ||g_theta||^2) at the first step, and theta's own step is Adam's."""
    init, tied = OPTIMIZERS["adam_tied"]
    _, adam = OPTIMIZERS["adam"]
    shared = {"s": np.array(0.5), "g": np.array(-0.2)}
    grads = {"s": np.array(0.3), "g": np.array(-0.1)}
    for params, g in ((shared, grads), ({**shared, "theta": np.ones((2, 3))}, {**grads, "theta": np.zeros((2, 3))})):
        a, _ = tied(g, init(params, np), params, 0.1, np)
        b, _ = adam(g, init(params, np), params, 0.1, np)
        for k in params:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12)
    params = {**shared, "theta": np.zeros((2, 3))}
    g = {**grads, "theta": np.full((2, 3), 0.4)}  # ||g_theta||^2 = 6 x 0.16 = 0.96
    a, _ = tied(g, init(params, np), params, 0.1, np)
    b, _ = adam(g, init(params, np), params, 0.1, np)
    np.testing.assert_allclose(a["theta"], b["theta"], rtol=1e-12)
    for k in ("s", "g"):
        ratio = (a[k] - params[k]) / (b[k] - params[k])
        np.testing.assert_allclose(ratio, abs(grads[k]) / np.sqrt(grads[k] ** 2 + 0.96), rtol=1e-6)
    quarter, _ = tied(g, init(params, np), params, 0.1, np, tie=0.25)  # the tie's weight scales the added norm
    np.testing.assert_allclose((quarter["s"] - 0.5) / (b["s"] - 0.5), 0.3 / np.sqrt(0.09 + 0.24), rtol=1e-6)
    untied, _ = tied(g, init(params, np), params, 0.1, np, tie=0.0)
    for k in params:
        np.testing.assert_allclose(untied[k], b[k], rtol=1e-12)


# --- sign_scaled -------------------------------------------------------------------------------------------------

@settings(max_examples=200)
@given(data=st.data())
def test_sign_scaled_at_b0_is_its_base_and_scales_each_sign(data):
    G = data.draw(st.integers(2, 32))
    B = data.draw(st.integers(1, 4))
    r = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 0.25, 0.7]), min_size=G, max_size=G),
                                    min_size=B, max_size=B)))
    b = data.draw(st.floats(-1.0, 1.0))
    for base in ("grpo", "dr_grpo"):
        ref = fadesim.get(base)(r)
        np.testing.assert_allclose(fadesim.get("sign_scaled", base=base)(r, balance=0.0), ref, rtol=0, atol=1e-12)
        got = fadesim.get("sign_scaled", base=base)(r, balance=b)
        np.testing.assert_allclose(got, np.where(ref > 0, (1 + b) * ref, (1 - b) * ref), rtol=1e-12, atol=1e-12)


def test_sign_scaled_mass_profile_moves_monotonically_with_b():
    weights = LogUniform(1e-3, 0.5).k_weights(16)
    masses = [fadesim.profile("sign_scaled", 16, balance=b).under(weights) for b in np.linspace(-1, 1, 9)]
    pos = np.array([m.positive_mass for m in masses])
    neg = np.array([m.negative_mass for m in masses])
    bal = np.array([m.balance for m in masses])
    assert np.all(np.diff(pos) > 0) and np.all(np.diff(neg) < 0) and np.all(np.diff(bal) > 0)
    assert neg[-1] == 0.0 and pos[0] == 0.0  # b = +1 drops the negative part, b = -1 the positive
    base = fadesim.profile("grpo", 16).under(weights)
    assert masses[4].positive_mass == pytest.approx(base.positive_mass, rel=1e-12)  # b = 0 is GRPO
    assert masses[-1].positive_mass == pytest.approx(2 * base.positive_mass, rel=1e-12)  # b = +1 doubles it


def test_sign_scaled_leaves_solved_and_unsolved_groups_alone_unlike_sign_balanced():
    r = np.array([[0.0] * 8, [1.0] * 8])
    for b in (-1.0, 0.0, 0.5, 1.0):
        assert np.all(fadesim.get("sign_scaled")(r, balance=b) == 0.0)
    assert np.all(fadesim.get("sign_balanced")(r, balance=0.0) == np.array([[-1.0] * 8, [1.0] * 8]))


def test_sign_scaled_bad_input():
    with pytest.raises(ValueError, match=r"sign_scaled: parameter balance = 1.5 is outside its domain \[-1, 1\]"):
        fadesim.get("sign_scaled")(np.zeros((1, 4)), balance=1.5)
    with pytest.raises(ValueError, match="parameter base = 'rloo' is outside its domain one of 'grpo', 'dr_grpo'"):
        fadesim.get("sign_scaled")(np.zeros((1, 4)), base="rloo")


# --- metrics ----------------------------------------------------------------------------------------------------

def test_new_metrics_equal_a_direct_computation_from_the_logits():
    task = make_task("bandit", n_prompts=20, n_answers=50, n_correct=5, difficulty=LogUniform(1e-5, 0.6),
                     prior="zipf", seed=2)
    theta = task.logits0 + np.random.default_rng(0).normal(0, 0.5, task.logits0.shape)
    m = policy_metrics(task, SimConfig(), {"theta": theta}, np)
    probs = special.softmax(theta, axis=-1)
    p = (probs * task.correct).sum(-1)
    ks = [2**j for j in range(11)]
    for k in ks:
        assert m[f"pass@{k}"] == pytest.approx(np.mean(1 - (1 - p) ** k), rel=1e-12)
    assert m["pass_at_k_auc"] == pytest.approx(np.mean([np.mean(1 - (1 - p) ** k) for k in ks]), rel=1e-12)
    assert m["unsolved"] == pytest.approx(np.mean(p < 1e-3), abs=0)
    assert 0 < m["unsolved"] < 1  # the task has both
    q = np.where(task.correct, probs, 0.0)
    q = q / q.sum(-1, keepdims=True)
    h = -np.sum(np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0), axis=-1)
    assert m["correct_entropy"] == pytest.approx(h.mean(), rel=1e-12)
    assert m["effective_correct"] == pytest.approx(np.exp(h).mean(), rel=1e-12)


# --- the O(K) sampler ----------------------------------------------------------------------------------------------

def _count_sampler(log_probs, u):
    """The previous O(G K) sampler: the number of cdf entries <= u."""
    cdf = np.cumsum(np.exp(log_probs), axis=-1)
    cdf = cdf / cdf[..., -1:]
    return np.minimum(np.sum(u[..., None] >= cdf[..., None, :], axis=-1), log_probs.shape[-1] - 1)


@pytest.mark.parametrize("K", [1, 2, 3, 7, 32, 65, 100, 1000, 4096])  # <= 64: direct count; above: two levels
def test_two_level_sampler_equals_the_counting_sampler_in_numpy_and_jax(K):
    rng = np.random.default_rng(K)
    logits = rng.normal(0, 3, (6, K))
    logits[0, : K // 2] = -np.inf if K > 1 else 0.0  # zero-probability answers are never drawn
    u = np.concatenate([rng.uniform(size=(6, 60)), np.zeros((6, 2)), np.full((6, 2), 1 - 1e-16)], axis=1)
    logp = logits - special.logsumexp(logits, axis=-1, keepdims=True)
    want = _count_sampler(logp, u)
    np.testing.assert_array_equal(sp.sample_categorical(logp, u, np), want)
    with jax.enable_x64(True):
        got = jax.jit(lambda lp, uu: sp.sample_categorical(lp, uu, jnp))(jnp.asarray(logp), jnp.asarray(u))
    np.testing.assert_array_equal(np.asarray(got), want)
    if K > 1:
        assert np.all(sp.sample_categorical(logp, u, np)[0] >= K // 2)


def test_the_compiled_sampler_does_not_grow_with_K():
    """Above SMALL_K the sampler is the same program at every K (blocks of SMALL_K, no loop, no unrolling): its
    compile time does not grow with the answer space."""
    def program(K):
        return jax.make_jaxpr(lambda lp, uu: sp.sample_categorical(lp, uu, jnp))(
            jnp.zeros((4, K), jnp.float32), jnp.zeros((4, 16), jnp.float32))

    small, large = program(2 * sp.SMALL_K), program(4096)
    assert len(small.eqns) == len(large.eqns)
    assert not [e for e in large.eqns if e.primitive.name in ("scan", "while")]


@pytest.mark.parametrize("depth", [9, 100])  # scatter-add in rollout order on both backends
def test_weighted_counts_equal_one_hot_sums(depth):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, depth, (3, 4, 7))
    w = rng.normal(size=(3, 4, 7))
    want = np.sum(w[..., None] * (idx[..., None] == np.arange(depth)), axis=-2)
    # numpy's scatter-add adds in rollout order, as the one-hot sum does: bit-identical in float64 and float32
    np.testing.assert_array_equal(sp.weighted_counts(idx, w, depth, np), want)
    w32 = (w * 1e3).astype(np.float32)  # large values, so that any change of summation order would show
    np.testing.assert_array_equal(sp.weighted_counts(idx, w32, depth, np),
                                  np.sum(w32[..., None] * (idx[..., None] == np.arange(depth)).astype(np.float32),
                                         axis=-2))
    with jax.enable_x64(True):
        got = sp.weighted_counts(jnp.asarray(idx), jnp.asarray(w), depth, jnp)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name,kw", [
    ("bandit", dict(n_prompts=6, n_answers=4096, n_correct=64)),
    ("linear_softmax", dict(n_prompts=6, n_answers=256, n_correct=16, width=4)),
    ("chain", dict(n_prompts=6, length=3, vocab=6, n_correct=2)),
])
@pytest.mark.parametrize("optimizer", ["adam_shared", "sgd"])
def test_numpy_equals_jax_on_every_task_with_the_new_sampler_zipf_prior_and_optimizer(name, kw, optimizer):
    task = make_task(name, difficulty=LogUniform(1e-3, 0.5), prior="zipf", seed=0, **kw)
    cfg = SimConfig(advantage="sign_scaled", advantage_params={"balance": 0.5}, G=8, steps=6, log_every=3,
                    optimizer=optimizer, lr=0.05 if optimizer == "adam_shared" else 5.0)
    assert_jax_equals_numpy(task, cfg, 4, rtol=1e-9, atol=1e-9)


# --- the math regime: the literature protocol's chosen family as a regime ---------------------------------------

def test_math_regime_sharpen_is_the_literature_protocols_chosen_task():
    """The math regime is the family chosen on 2026-12-05 (CHOSEN_2026_12_05): the same prompts, answers and held-out
    half; the protocol's current default differs from it only by the skill's reach, the noise-scale clock (a clock
    reads methods at other steps; the task is the same) and the seeds the length is matched on (the held-out seeds'
    own reference run since 2026-12-07; the task is the same)."""
    from fadesim.lab.literature import BASE, CHOSEN, CHOSEN_2026_12_05, ProtocolSettings, calibrated_task, load_curves
    from fadesim.tasks.regimes import MATH_SETTING, MATH_SHARPEN, MATH_SIZES

    curves = load_curves()
    rows = curves[(curves.setting == MATH_SETTING) & (curves.method == BASE)]
    chosen, _ = calibrated_task(ProtocolSettings(**CHOSEN_2026_12_05),
                                {int(r.k): float(r.pass_at_k) for r in rows.itertuples()})
    task = make_task("sharpen", regime="math")
    assert {k: CHOSEN_2026_12_05[k] for k in MATH_SHARPEN} == MATH_SHARPEN
    assert MATH_SIZES["n_prompts"] == CHOSEN_2026_12_05["n_prompts"]
    assert task.reach is None and not task.floor_sharpness and CHOSEN_2026_12_05["reach_samples"] == 0
    later = ("reach_samples", "clock", "match_seeds", "misfire", "misfire_fallback")  # what the default took since
    assert {k: v for k, v in CHOSEN.items() if k not in later} == {
        k: v for k, v in CHOSEN_2026_12_05.items() if k not in later}
    assert (CHOSEN["misfire"], CHOSEN["misfire_fallback"]) == (1.0, True)
    assert (CHOSEN_2026_12_05["misfire"], CHOSEN_2026_12_05["misfire_fallback"]) == (0.0, False)
    assert CHOSEN["clock"] == "noise" and ProtocolSettings(**CHOSEN_2026_12_05).clock == "simulator"
    assert CHOSEN["match_seeds"] == "held" and CHOSEN_2026_12_05["match_seeds"] == "tuning"
    for field in ("logits0", "correct", "evaluation"):
        np.testing.assert_array_equal(getattr(task, field), getattr(chosen, field))
    assert (task.sharpen_scale, task.skill_scale, task.prompts_per_step) == (1.0, 0.3, 1)
    assert int(task.evaluation.sum()) == 128


@pytest.mark.parametrize("name", ["sharpen", "bandit", "linear_softmax", "chain"])
def test_math_regime_tasks_start_on_the_published_math_base_curve(name):
    """Every math-regime task (sharpen and its controls) starts within 0.02 of Qwen2.5-Math-7B's published base
    pass@k on MATH (arXiv 2506.01347 Table 1) at every published k: the Beta fit's error plus the 256 prompts'
    stratified sampling (the fit alone: max 0.014)."""
    from fadesim.tasks.regimes import MATH_SETTING, math_calibration

    from fadesim.lab.literature import CURVES

    published = load_pass_at_k(CURVES, setting=MATH_SETTING, method="base")
    task = make_task(name, regime="math")
    start = task_pass_at_k(task, list(published))
    assert max(abs(start[k] - v) for k, v in published.items()) < 0.02
    assert max(abs(start[k] - v) for k, v in published.items()) > 0  # a fit, not the numbers copied in
    assert task.n_prompts == 256 and math_calibration().family == "beta"


def test_math_regime_refuses_the_neural_task_and_ignores_experiment_sizes():
    from fadesim.lab.regime_tasks import regime_n_prompts, regime_task

    with pytest.raises(ValueError, match="neural task has no regime presets"):
        make_task("neural", regime="math")

    class S:
        n_prompts, n_answers, llm_n_prompts = 16, 8, 32

    assert regime_task(S(), "bandit", "math").logits0.shape == (256, 64)
    assert [regime_n_prompts(S(), r) for r in ("toy", "llm", "math")] == [16, 32, 256]
