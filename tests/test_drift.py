"""theory.drift: the second-order expected drift of one SGD step, against exact enumeration of the sampled
groups, Monte Carlo through the simulator's own numpy step, finite differences and the first-order law."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fadesim
from fadesim.sim import SimConfig
from fadesim.sim.step import initial_state, train_step
from fadesim.tasks import make_task
from fadesim.tasks.bandit import Bandit
from fadesim.theory import expected_entropy_drift
from fadesim.theory.second_order import DRIFT_QUANTITIES, curvatures, drift, drift_quantities, per_prompt_step

ADVANTAGES = [("grpo", {}), ("dr_grpo", {}), ("rloo", {}), ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1}),
              ("sign_balanced", {"balance": -0.5}), ("sign_balanced", {"balance": 0.7}), ("focal", {"gamma": 1.0}),
              ("pass_at_k", {"K": 2})]
IDS = [n + "".join(f"-{v}" for v in p.values()) for n, p in ADVANTAGES]


def _softmax(logits):
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _enumerated_change(name, params, logits, correct, G, lr):
    """E[f(theta + lr g)] - f(theta) exactly: every ordered sequence of G answers, with its probability."""
    K = len(logits)
    pi = _softmax(logits)
    seqs = np.array(list(itertools.product(range(K), repeat=G)))
    prob = pi[seqs].prod(axis=1)
    rewards = correct[seqs].astype(float)
    A = np.asarray(fadesim.get(name, **params)(rewards), dtype=float)  # the advantage's own code, per group
    g = (A[..., None] * (np.eye(K)[seqs] - pi)).mean(axis=1)
    before = drift_quantities(logits, correct)
    after = drift_quantities(logits + lr * g, np.broadcast_to(correct, g.shape))
    return {f: float(prob @ after[f] - before[f]) for f in DRIFT_QUANTITIES}


LRS = (0.2, 0.1, 0.05, 0.025)


def _cubic_ratios(name, params, logits, correct, G, drop_noise=False):
    d = drift(name, logits, correct, G, lr=0.1, **params)
    out = {f: [] for f in DRIFT_QUANTITIES}
    for lr in LRS:
        exact = _enumerated_change(name, params, logits, correct, G, lr)
        for f in DRIFT_QUANTITIES:
            t = d[f]
            second = t.second_mean if drop_noise else t.second
            out[f].append((exact[f] - lr * t.first - lr**2 * second) / lr**3)
    return {f: np.array(v) for f, v in out.items()}


def _bounded(ratios):
    """residual / lr^3 stays bounded as lr shrinks: no term of order lr or lr^2 is left over (which would
    grow the ratio like 1/lr^2 or 1/lr, i.e. 64x or 8x from lr = 0.2 to 0.025)."""
    return np.max(np.abs(ratios)) <= 1.5 * np.max(np.abs(ratios[:2])) + 1e-4


ENUM_LOGITS = np.array([0.3, -0.4, 1.1, -0.2, 0.5])
ENUM_CORRECT = np.array([True, True, False, False, False])


@pytest.mark.parametrize("name,params", ADVANTAGES, ids=IDS)
def test_second_order_expansion_matches_exact_enumeration(name, params):
    ratios = _cubic_ratios(name, params, ENUM_LOGITS, ENUM_CORRECT, G=4)
    for f, r in ratios.items():
        assert _bounded(r), (f, r)
    assert np.max(np.abs(ratios["logit_norm_sq"])) < 1e-9  # a quadratic: the expansion is exact


def test_enumeration_check_fails_without_the_noise_term():
    """The check above can fail: dropping second_noise leaves an lr^2 residual (ratio grows like 1/lr)."""
    ratios = _cubic_ratios("grpo", {}, ENUM_LOGITS, ENUM_CORRECT, G=4, drop_noise=True)
    assert not _bounded(ratios["correct_entropy"]) and not _bounded(ratios["entropy"])


# ----------------------------------------------------------------------------- Monte Carlo via the simulator
MC_K, MC_N, MC_G = 32, 100_000, 16


def _mc_prompt():
    rng = np.random.default_rng(3)
    correct = np.zeros(MC_K, dtype=bool)
    correct[:3] = True
    w = np.exp(rng.normal(size=MC_K))
    probs = np.where(correct, 0.3 * w / w[correct].sum(), 0.7 * w / w[~correct].sum())  # p = 0.3
    logits = np.log(probs)
    return logits - logits.mean(), correct


@pytest.mark.parametrize("name,params", [("sign_balanced", {"balance": -1.0}), ("sign_balanced", {"balance": 0.0}),
                                         ("sign_balanced", {"balance": 1.0}), ("grpo", {})],
                         ids=["nsr-side", "balanced", "psr-side", "grpo"])
def test_second_order_matches_the_simulators_sgd_step(name, params):
    """numpy train_step on N copies of one prompt; the prediction's second-order part within 4 SE.

    Control variate: the sampled first-order term lr grad f . g_n has known mean lr * first, so
    Y_n(lr) = delta f_n - lr grad f . g_n = lr^2 second + lr^3 T + O(lr^4) with the first-order noise removed.
    The cubic term is removed by Richardson extrapolation over two steps with the same draws (same actions,
    same advantages): (8 Y(lr) - Y(2 lr)) / (4 lr^2) = second + O(lr^2).
    """
    logits, correct = _mc_prompt()
    task = Bandit(logits0=np.tile(logits, (MC_N, 1)), correct=np.tile(correct, (MC_N, 1)))
    u = np.random.default_rng(11).random(task.uniform_shape(MC_G))
    before = drift_quantities(logits, correct)
    grads = curvatures(logits, correct, np)
    eta = 0.05
    y, raw = {}, {}
    for step in (eta, 2 * eta):
        cfg = SimConfig(advantage=name, advantage_params=params, G=MC_G, steps=1, log_every=1, optimizer="sgd",
                        lr=step * MC_N)
        assert per_prompt_step(cfg, task) == pytest.approx(step)
        new, _ = train_step(task, cfg, initial_state(task, cfg, np, np.float64), u, {}, np)
        theta = new["params"]["theta"]
        g = (theta - task.logits0) / step
        after = drift_quantities(theta, task.correct)
        raw[step] = {f: after[f] - before[f] for f in DRIFT_QUANTITIES}
        y[step] = {f: raw[step][f] - step * (g @ grads[f].grad) for f in DRIFT_QUANTITIES}
    prediction = drift(name, logits, correct, MC_G, eta, **params)
    for f in DRIFT_QUANTITIES:
        t = prediction[f]
        est = (8 * y[eta][f] - y[2 * eta][f]) / (4 * eta**2)
        se = est.std(ddof=1) / np.sqrt(MC_N)
        assert abs(est.mean() - t.second) <= 4 * se, (f, est.mean(), t.second, se)
        # the uncorrected mean change agrees with lr first + lr^2 second (its SE is the first-order noise)
        assert abs(raw[eta][f].mean() - t.change(eta)) <= 4 * raw[eta][f].std(ddof=1) / np.sqrt(MC_N), f


# ----------------------------------------------------------------------------- properties over random prompts
@st.composite
def prompts(draw, max_k=9):
    K = draw(st.integers(2, max_k))
    logits = np.array(draw(st.lists(st.floats(-3, 3), min_size=K, max_size=K)))
    n_correct = draw(st.integers(1, K - 1))
    order = draw(st.permutations(range(K)))
    correct = np.zeros(K, dtype=bool)
    correct[list(order[:n_correct])] = True
    return logits, correct


@st.composite
def drift_cases(draw):
    """(logits, correct, G, advantage name, params): a random prompt, group size and advantage."""
    logits, correct = draw(prompts())
    name, params = draw(st.sampled_from(ADVANTAGES))
    G = draw(st.integers(params["K"] + 1 if name == "pass_at_k" else 2, 12))
    return logits, correct, G, name, params


@settings(max_examples=150)
@given(case=drift_cases())
def test_first_order_entropy_term_is_the_entropy_law(case):
    logits, correct, G, name, params = case
    d = drift(name, logits, correct, G, lr=1.0, **params)
    law = expected_entropy_drift(fadesim.profile(name, G, **params), logits, correct).total
    assert abs(float(d["entropy"].first) - law) <= 1e-10 * max(1.0, abs(law))


def _centred_norm(logits):
    return float(np.linalg.norm(logits - logits.mean()))


def _expected_update(name, params, logits, correct, G):
    """E[g] from its definition (1/G) sum_k P(k) [k A+(k) (pi_C - pi) + (G - k) A-(k) (pi_W - pi)]."""
    prof = fadesim.profile(name, G, **params)
    pi = _softmax(logits)
    p = pi[correct].sum()
    pi_c, pi_w = np.where(correct, pi, 0) / p, np.where(correct, 0, pi) / (1 - p)
    P = fadesim.theory.binomial_weights(p, G)
    k = np.arange(G + 1)
    pos, neg = np.nan_to_num(prof.a_pos), np.nan_to_num(prof.a_neg)
    return (P @ (k * pos)) / G * (pi_c - pi) + (P @ ((G - k) * neg)) / G * (pi_w - pi)


@settings(max_examples=150)
@given(case=drift_cases())
def test_first_order_terms_are_central_differences_of_the_expected_update(case):
    logits, correct, G, name, params = case
    mean_g = _expected_update(name, params, logits, correct, G)
    d = drift(name, logits, correct, G, lr=1.0, **params)
    h = 1e-5
    plus, minus = drift_quantities(logits + h * mean_g, correct), drift_quantities(logits - h * mean_g, correct)
    for f in DRIFT_QUANTITIES:
        if f == "logit_norm" and np.ptp(logits) == 0:  # ||z|| at z = 0: not differentiable, documented NaN
            assert np.isnan(d[f].first) and np.isnan(d[f].second)
        if f == "logit_norm" and _centred_norm(logits) < 1e-2:
            continue  # ||z|| is smooth only within radius ||z|| of the point; the difference step must fit inside
        fd = (plus[f] - minus[f]) / (2 * h)
        assert abs(float(d[f].first) - fd) <= 1e-6 * max(1.0, abs(fd)), f


@settings(max_examples=150)
@given(prompt=prompts(), seed=st.integers(0, 2**16))
def test_hessian_quadratic_forms_are_second_differences(prompt, seed):
    logits, correct = prompt
    v = np.random.default_rng(seed).normal(size=logits.shape)
    h = 1e-4  # truncation O(h^2), rounding O(1e-16 / h^2) = 1e-8
    f0 = drift_quantities(logits, correct)
    plus, minus = drift_quantities(logits + h * v, correct), drift_quantities(logits - h * v, correct)
    for f, curv in curvatures(logits, correct, np).items():
        if f == "logit_norm" and _centred_norm(logits) < 1e-2:
            continue  # smooth only within radius ||z|| (and NaN at z = 0, checked above)
        fd = (plus[f] - 2 * f0[f] + minus[f]) / h**2
        assert abs(float(curv.quadratic(v, np)) - fd) <= 1e-4 * max(1.0, abs(fd)), f


@settings(max_examples=100)
@given(K=st.integers(2, 9), G=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_no_within_set_noise_for_psr_on_one_correct_answer_or_nsr_on_one_wrong_answer(K, G, seed):
    logits = np.random.default_rng(seed).normal(size=K)
    one = np.zeros(K, dtype=bool)
    one[seed % K] = True
    for name, correct in (("psr", one), ("nsr", ~one)):
        d = drift(name, logits, correct, G, lr=0.1)
        for f in DRIFT_QUANTITIES:
            assert float(d[f].second_noise) == 0.0, (name, f)
    # ... while the other side's noise is not zero (so the check can fail)
    if K > 2:
        assert abs(float(drift("nsr", logits, one, G, lr=0.1)["entropy"].second_noise)) > 0


def test_batched_prompts_equal_each_prompt_alone_and_numpy_equals_jax():
    import jax
    import jax.numpy as jnp

    task = make_task("bandit", n_prompts=6, n_answers=7, n_correct=2, seed=4)
    batch = drift("focal", task.logits0, task.correct, 8, 0.3, gamma=2.0)
    for n in range(6):
        alone = drift("focal", task.logits0[n], task.correct[n], 8, 0.3, gamma=2.0)
        for f in DRIFT_QUANTITIES:
            for part in ("first", "second_mean", "second_noise"):
                np.testing.assert_allclose(getattr(batch[f], part)[n], getattr(alone[f], part), rtol=1e-12, atol=1e-15)
    with jax.enable_x64(True):
        on_jax = drift("focal", jnp.asarray(task.logits0), jnp.asarray(task.correct), 8, 0.3, gamma=2.0)
        for f in DRIFT_QUANTITIES:
            for part in ("first", "second_mean", "second_noise"):
                value = getattr(on_jax[f], part)
                assert isinstance(value, jax.Array)
                np.testing.assert_allclose(np.asarray(value), getattr(batch[f], part), rtol=1e-12, atol=1e-15)


def test_fade_is_supported_at_given_signals_and_equals_its_static_table():
    logits, correct = _mc_prompt()
    signals = {"entropy": 0.5, "initial_entropy": 1.0}
    d = drift("fade", logits, correct, 8, 0.1, signals=signals)
    prof = fadesim.profile("fade", 8, signals=signals)
    assert prof.symmetric
    assert abs(float(d["entropy"].first) - expected_entropy_drift(prof, logits, correct).total) < 1e-12


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("logits,correct,G,lr,kw,message", [
    (np.array([0.0, np.nan, 1.0]), np.array([True, False, False]), 4, 0.1, {}, "finite"),
    (np.array([0.0, np.inf, 1.0]), np.array([True, False, False]), 4, 0.1, {}, "finite"),
    (np.zeros(3), np.zeros(3, bool), 4, 0.1, {}, "non-empty proper subset"),
    (np.zeros(3), np.ones(3, bool), 4, 0.1, {}, "non-empty proper subset"),
    (np.zeros(3), np.array([1, 0, 0]), 4, 0.1, {}, "boolean"),
    (np.zeros(3), np.array([True, False]), 4, 0.1, {}, "shape"),
    (np.zeros(3), np.array([True, False, False]), 4, 0.0, {}, "lr must be a positive"),
    (np.zeros(3), np.array([True, False, False]), 4, -0.1, {}, "lr must be a positive"),
    (np.zeros(3), np.array([True, False, False]), 0, 0.1, {}, "G must be a positive integer"),
    (np.zeros(3), np.array([True, False, False]), 1, 0.1, {"advantage": "grpo"}, "too small"),
    (np.zeros(3), np.array([True, False, False]), 4, 0.1, {"advantage": "unlikeliness"}, "log-probs"),
    (np.zeros(3), np.array([True, False, False]), 4, 0.1, {"advantage": "fade"}, "signals"),
])
def test_bad_input_is_a_clear_error(logits, correct, G, lr, kw, message):
    adv = kw.pop("advantage", "psr")
    with pytest.raises(ValueError, match=message):
        drift(adv, logits, correct, G, lr)


def test_unknown_advantage_and_quantity():
    with pytest.raises(KeyError, match="unknown advantage"):
        drift("nope", np.zeros(3), np.array([True, False, False]), 4, 0.1)
    d = drift("psr", np.zeros(3), np.array([True, False, False]), 4, 0.1)
    with pytest.raises(KeyError, match="unknown drift quantity"):
        d["rank"]


def test_per_prompt_step_is_defined_only_for_plain_sgd_on_the_bandit():
    task = make_task("bandit", n_prompts=40, n_answers=6, n_correct=2, seed=0)
    assert per_prompt_step(SimConfig(optimizer="sgd", lr=2.0), task) == pytest.approx(0.05)
    assert per_prompt_step(SimConfig(optimizer="sgd", lr=2.0, ppo=True), task) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="plain SGD"):
        per_prompt_step(SimConfig(optimizer="adam"), task)
    with pytest.raises(ValueError, match="epoch"):
        per_prompt_step(SimConfig(optimizer="sgd", epochs=2), task)
    with pytest.raises(ValueError, match="tabular bandit"):
        per_prompt_step(SimConfig(optimizer="sgd"), make_task("linear_softmax", n_prompts=8, n_answers=6,
                                                              n_correct=2, width=4, seed=0))
