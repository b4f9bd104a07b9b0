"""Tasks and simulators: numpy = jax given the same draws, sweeps = single runs, learning sanity, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadesim.sim import SimConfig, simulate, simulate_reference
from fadesim.tasks import Beta, Empirical, Mixture, PointMass, fit_beta, make_task
from tests.simulators import assert_jax_equals_numpy, short_runs

TASKS = {
    "bandit": dict(n_prompts=16, n_answers=8, n_correct=2, seed=0),
    "linear_softmax": dict(n_prompts=16, n_answers=8, n_correct=2, width=6, seed=0),
    "chain": dict(n_prompts=12, length=3, vocab=5, n_correct=2, seed=0),
    "sharpen": dict(n_prompts=16, n_answers=8, n_correct=2, sharpen_scale=0.5, seed=0),
}
CONFIGS = [
    SimConfig(advantage="grpo", G=8, steps=30, log_every=10),
    SimConfig(advantage="unlikeliness", G=8, steps=30, log_every=10, epochs=2),
    # PPO clipping, KL and FADE's signals together; SGD (Adam turns rounding-level differences of
    # near-zero KL gradients into 1e-4 differences: its step is lr * g / (|g| + eps))
    SimConfig(advantage="fade", G=8, steps=30, log_every=10, ppo=True, epochs=3, kl_beta=0.05,
              optimizer="sgd", lr=1.0),
]


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.advantage)
def test_numpy_and_jax_trajectories_are_identical_given_the_same_draws(task_name, cfg):
    assert_jax_equals_numpy(make_task(task_name, **TASKS[task_name]), cfg, 7, rtol=1e-5, atol=1e-5)


@pytest.mark.heavy
def test_the_suites_xla_optimisation_level_computes_the_default_levels_numbers():
    """conftest compiles the suite's jax programs at LLVM level 0 with the elemental emitters (speed only); a
    subprocess at XLA's default flags runs the same short simulations, which must agree to float32 rounding."""
    import io
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import TEST_FLAGS_APPLIED, TEST_XLA_FLAGS

    if not TEST_FLAGS_APPLIED:
        pytest.skip("the suite runs at XLA's default flags here (FADESIM_XLA_OPT=default, or jax runs on a GPU)")
    ROOT = Path(__file__).resolve().parents[1]
    default = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if f not in TEST_XLA_FLAGS)
    script = "import sys; from tests.simulators import short_runs_npz; sys.stdout.buffer.write(short_runs_npz())"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "XLA_FLAGS": default, "FADESIM_XLA_OPT": "default"})
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    theirs = np.load(io.BytesIO(proc.stdout))
    here = short_runs()  # the same runs in this process, at the suite's level
    assert sorted(here) == sorted(theirs.files) and len(here) > 20
    for key in here:
        np.testing.assert_allclose(here[key], theirs[key], rtol=2e-5, atol=2e-6, err_msg=key)


def test_the_suites_cpu_flags_are_set_only_where_jax_compiles_for_the_cpu(monkeypatch, tmp_path):
    import sys

    from tests import conftest

    monkeypatch.setenv("JAX_PLATFORMS", "cuda,cpu")
    assert not conftest.jax_runs_on_cpu()
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert conftest.jax_runs_on_cpu()
    monkeypatch.delenv("JAX_PLATFORMS")
    assert conftest.jax_runs_on_cpu() == (conftest.jax_accelerator_plugin() is None)
    # a CUDA plugin where jax looks for plugins (the jax_plugins namespace package), as jax-cuda13-plugin installs
    (tmp_path / "jax_plugins" / "xla_cuda13").mkdir(parents=True)
    (tmp_path / "jax_plugins" / "xla_cuda13" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "jax_plugins", raising=False)
    assert conftest.jax_accelerator_plugin() == "xla_cuda13" and not conftest.jax_runs_on_cpu()


def test_jitted_sweep_equals_each_configuration_alone():
    task = make_task("bandit", **TASKS["bandit"])
    cfg = SimConfig(advantage="w_reinforce", G=8, steps=20, log_every=10)
    sweep = {"lam": [0.1, 1.0, 3.0], "lr": [0.05, 0.02, 0.1]}
    together = simulate(task, cfg, seeds=[0, 1], sweep=sweep)
    for i in range(3):
        alone = simulate(task, cfg.replace(lr=sweep["lr"][i], advantage_params={"lam": sweep["lam"][i]}), seeds=[1])
        for name in alone.metrics:
            np.testing.assert_allclose(together.metrics[name][i, 1], alone.metrics[name][0, 0], rtol=2e-5, atol=2e-6,
                                       err_msg=name)


def test_same_seed_same_numbers_and_different_seeds_differ():
    task = make_task("linear_softmax", **TASKS["linear_softmax"])
    cfg = SimConfig(advantage="grpo", G=8, steps=20, log_every=10)
    a, b = simulate(task, cfg, seeds=[0, 1]), simulate(task, cfg, seeds=[0, 1])
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name])
    assert not np.allclose(a.metrics["pass@1"][0, 0, 1:], a.metrics["pass@1"][0, 1, 1:])
    r1, r2 = simulate_reference(task, cfg, seed=3), simulate_reference(task, cfg, seed=3)
    np.testing.assert_array_equal(r1.metrics["entropy"], r2.metrics["entropy"])


def _final(res, name, cfg_index=0, at=-1):
    return res.metrics[name][cfg_index, :, at].mean()


def test_grpo_raises_pass_at_1_on_an_easy_bandit():
    task = make_task("bandit", n_prompts=64, n_answers=16, n_correct=3, difficulty="easy", seed=0)
    res = simulate(task, SimConfig(advantage="grpo", G=8, steps=60, log_every=20, optimizer="sgd", lr=2.0), seeds=[0, 1])
    assert _final(res, "pass@1") > res.metrics["pass@1"][0, :, 0].mean() + 0.05
    assert np.all(np.diff(res.metrics["pass@1"].mean(axis=(0, 1))) > 0)


SIGN_TASK = dict(n_prompts=64, n_answers=32, n_correct=3, difficulty="mixed", seed=0)
BALANCES = [-1.0, 0.0, 1.0]  # NSR-only, balanced, PSR-only at fixed mass (sign_balanced)


@pytest.fixture(scope="module")
def sign_sweep_adam():
    task = make_task("bandit", **SIGN_TASK)
    cfg = SimConfig(advantage="sign_balanced", G=16, steps=100, log_every=50, optimizer="adam", lr=0.02)
    return simulate(task, cfg, seeds=[0, 1, 2], sweep={"balance": BALANCES})


def test_positive_mass_collapses_entropy_and_negative_mass_preserves_it(sign_sweep_adam):
    """Sign-axis claim, entropy side (CONFIRMED here): entropy(PSR) < entropy(balanced) < entropy(NSR)."""
    for at in (1, 2):
        ent = [_final(sign_sweep_adam, "entropy", i, at) for i in range(3)]
        assert ent[2] < ent[1] < ent[0], ent
    kept = [_final(sign_sweep_adam, "distinct_correct", i) for i in range(3)]
    assert kept[0] > kept[2], kept


def test_negative_mass_does_not_blow_up_the_logit_norm_in_the_bandit(sign_sweep_adam):
    """Sign-axis claim, geometry side (NOT CONFIRMED in the bandit): the paper says negative mass damages weight
    geometry; here the logit norm grows under every balance but *least* under NSR-only. Recorded as measured."""
    growth = [_final(sign_sweep_adam, "logit_norm", i) - _final(sign_sweep_adam, "logit_norm", i, 0) for i in range(3)]
    assert min(growth) > 0
    assert growth[0] < growth[1] < growth[2], growth


def test_sign_balance_leaves_the_expected_sgd_update_unchanged():
    """With +-1 rewards, A = 2r - 1 + b: b is a constant baseline shift, so E[update] does not depend on b.
    Under SGD the sign axis therefore acts only through sampling noise: trajectories stay close."""
    task = make_task("bandit", **SIGN_TASK)
    cfg = SimConfig(advantage="sign_balanced", G=16, steps=100, log_every=50, optimizer="sgd", lr=10.0)
    res = simulate(task, cfg, seeds=[0, 1, 2], sweep={"balance": BALANCES})
    p1 = [_final(res, "pass@1", i) for i in range(3)]
    assert max(p1) - min(p1) < 0.01, p1
    assert p1[0] > res.metrics["pass@1"][0, :, 0].mean() + 0.1


def test_exact_pass_at_k_matches_the_unbiased_estimator():
    """Exact pass@k (1 - (1-p)^k per prompt) against the unbiased estimator 1 - C(n-c, k)/C(n, k) from n samples."""
    from math import comb

    rng = np.random.default_rng(0)
    for name in TASKS:
        task = make_task(name, **TASKS[name])
        params = task.init_params(np, np.float64)
        p = task.exact(params, np)["pass_rate"]
        n = 64
        ro = task.rollout(params, rng.random(task.uniform_shape(n)), np)
        c = ro["rewards"].sum(axis=1).astype(int)
        for k in (1, 4, 16):
            est = np.array([1 - comb(n - ci, k) / comb(n, k) for ci in c])
            exact = 1 - (1 - p) ** k
            # per-prompt estimates are independent; compare their mean with 4 standard errors
            se = est.std(ddof=1) / np.sqrt(len(est))
            assert abs(est.mean() - exact.mean()) <= 4 * se + 1e-9, (name, k)


def test_diversity_metrics_equal_a_direct_computation_from_the_policy():
    """correct_entropy / effective_correct: entropy of the policy restricted to the correct answers (bandit,
    linear_softmax) or correct sequences (chain, by their log-probs), averaged over prompts."""
    from fadesim.sim.step import policy_metrics

    rng = np.random.default_rng(5)
    for name in TASKS:
        task = make_task(name, **TASKS[name])
        params = {k: v + 0.3 * rng.standard_normal(v.shape) for k, v in task.init_params(np, np.float64).items()}
        if name == "chain":
            probs = np.exp(task.logprob(params, task.targets, np))  # (N, C): every correct sequence
        else:
            logits = task.logits(params, np)
            pi = np.exp(logits - logits.max(-1, keepdims=True))
            probs = np.where(task.correct, pi / pi.sum(-1, keepdims=True), 0.0)
        q = probs / probs.sum(-1, keepdims=True)
        h = -np.sum(np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0), axis=-1)
        m = policy_metrics(task, SimConfig(), params, np)
        np.testing.assert_allclose(m["correct_entropy"], h.mean(), rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(m["effective_correct"], np.exp(h).mean(), rtol=1e-12, err_msg=name)
        assert 0 < m["correct_entropy"] <= np.log(q.shape[-1]) + 1e-12


def test_bad_configurations_give_clear_errors():
    with pytest.raises(ValueError, match=r"n_correct \(C = 5\) must be smaller than n_answers \(K = 4\)"):
        make_task("bandit", n_answers=4, n_correct=5)
    with pytest.raises(ValueError, match=r"n_answers \(K\) must be an integer >= 1; got 0"):
        make_task("bandit", n_answers=0)
    with pytest.raises(ValueError, match="Beta parameters must be positive"):
        Beta(0.0, 1.0)
    with pytest.raises(ValueError, match="Beta parameters must be positive"):
        make_task("bandit", difficulty=Beta(1.0, -2.0))
    with pytest.raises(ValueError, match="unknown task 'maze'"):
        make_task("maze")
    with pytest.raises(KeyError, match="unknown advantage 'gpro'"):
        SimConfig(advantage="gpro")
    with pytest.raises(ValueError, match="G = 1 is too small"):
        SimConfig(G=1)
    with pytest.raises(ValueError, match="must be a positive multiple of log_every"):
        SimConfig(steps=25, log_every=10)
    with pytest.raises(ValueError, match="unknown optimizer"):
        SimConfig(optimizer="lion")
    with pytest.raises(ValueError, match="cannot sweep 'temperature'"):
        simulate(make_task("bandit", n_prompts=4), SimConfig(steps=10), sweep={"temperature": [1.0]})
    with pytest.raises(ValueError, match="K .* cannot be swept"):
        SimConfig(advantage="pass_at_k").check_sweep({"K": [2]})
    with pytest.raises(ValueError, match="same length"):
        simulate(make_task("bandit", n_prompts=4), SimConfig(steps=10), sweep={"lr": [0.1], "eps_low": [0.1, 0.2]})


def test_difficulty_distributions():
    rng_draws = Beta(2.0, 5.0).sample(0, 20000)
    assert abs(rng_draws.mean() - 2 / 7) < 0.01
    np.testing.assert_array_equal(Beta(2.0, 5.0).sample(3, 10), Beta(2.0, 5.0).sample(3, 10))
    mix = Mixture((PointMass(0.1), PointMass(0.9)), (0.25, 0.75))
    assert abs(mix.sample(1, 20000).mean() - 0.7) < 0.01
    assert mix.k_weights(8).sum() == pytest.approx(1.0)
    emp = Empirical((0.2, 0.4))
    assert set(np.unique(emp.sample(0, 100))) <= {0.2, 0.4}
    with pytest.raises(ValueError, match="weights must be non-negative and sum to 1"):
        Mixture((PointMass(0.1),), (0.5,))
    with pytest.raises(ValueError, match="pass rates must be a non-empty list"):
        Empirical((1.5,))


def test_empirical_from_csv(tmp_path):
    path = tmp_path / "rates.csv"
    path.write_text("prompt,pass_rate\na,0.25\nb,0.75\n")
    assert Empirical.from_csv(path).pass_rates == (0.25, 0.75)
    with pytest.raises(ValueError, match="no column 'p'"):
        Empirical.from_csv(path, column="p")


def _loglik(k, n, dist):
    from scipy import stats

    return float(np.sum(stats.betabinom.logpmf(k, n, dist.a, dist.b)))


@pytest.mark.parametrize("a, b", [(0.7, 2.5), (2.0, 2.0), (0.3, 0.3)])
def test_fit_beta_recovers_the_difficulty_distribution_from_binomial_counts(a, b):
    """2000 prompts x 16 samples. Tolerances: 4 sd of the estimator, measured over 30 replicates
    (sd of a, b: 0.026, 0.105 at (0.7, 2.5); 0.080, 0.073 at (2, 2); 0.012, 0.010 at (0.3, 0.3))."""
    from scipy import stats

    sd = {(0.7, 2.5): (0.026, 0.105), (2.0, 2.0): (0.080, 0.073), (0.3, 0.3): (0.012, 0.010)}[(a, b)]
    rng = np.random.default_rng(11)
    k = rng.binomial(16, Beta(a, b).sample(rng, 2000))
    fit = fit_beta(k, 16)
    assert abs(fit.a - a) < 4 * sd[0] and abs(fit.b - b) < 4 * sd[1], fit
    assert _loglik(k, 16, fit) >= _loglik(k, 16, Beta(a, b))  # the maximum, not a nearby point
    observed = np.bincount(k, minlength=17)
    expected = fit.k_weights(16) * len(k)
    assert stats.chisquare(observed, expected, ddof=2).pvalue > 1e-3


def test_fit_beta_degenerate_counts_and_errors():
    from fadesim.tasks.pass_rates import BETA_FIT_BOUNDS

    none_solved = fit_beta(np.zeros(40, dtype=int), 8)  # a real model on a too-hard task
    assert none_solved.a == pytest.approx(BETA_FIT_BOUNDS[0]) and none_solved.mean() < 0.01
    all_solved = fit_beta(np.full(40, 8), 8)
    assert all_solved.b == pytest.approx(BETA_FIT_BOUNDS[0]) and all_solved.mean() > 0.99
    rng = np.random.default_rng(2)
    k = rng.binomial(16, 0.3, size=2000)  # one pass rate for every prompt: no overdispersion
    fit = fit_beta(k, 16)
    se = np.sqrt(0.3 * 0.7 / (16 * 2000))
    assert abs(fit.mean() - k.mean() / 16) < 4 * se and fit.a + fit.b > 100
    varied_n = fit_beta([0, 3, 5, 9], [4, 8, 8, 16])  # prompts sampled different numbers of times
    assert 0.0 < varied_n.mean() < 1.0
    with pytest.raises(ValueError, match="at least one prompt"):
        fit_beta([], 8)
    with pytest.raises(ValueError, match=r"every k must lie in \[0, n\]"):
        fit_beta([9], 8)
    with pytest.raises(ValueError, match="positive integers"):
        fit_beta([1], 0)
    with pytest.raises(ValueError, match="finite"):
        fit_beta([np.nan], 8)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 32).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n), min_size=1,
                                                                             max_size=60))))
def test_fit_beta_is_at_least_as_likely_as_simple_candidates(case):
    n, k = case
    fit = fit_beta(k, n)
    assert np.isfinite(fit.a) and np.isfinite(fit.b)
    for other in (Beta(1.0, 1.0), Beta(0.5, 0.5)):
        assert _loglik(np.array(k), n, fit) >= _loglik(np.array(k), n, other) - 1e-6

@pytest.mark.parametrize("name", TASKS)
def test_initial_pass_rates_follow_the_difficulty_draws(name):
    from fadesim.tasks.pass_rates import as_distribution

    kw = dict(TASKS[name], n_prompts=50, difficulty="hard", seed=4)
    task = make_task(name, **kw)
    p = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
    draws = np.clip(as_distribution("hard").sample(np.random.default_rng(4), 50), 1e-3, 1 - 1e-3)
    np.testing.assert_allclose(p, draws, rtol=1e-9)


def test_to_frame_is_tidy():
    task = make_task("bandit", **TASKS["bandit"])
    res = simulate(task, SimConfig(advantage="w_reinforce", G=4, steps=20, log_every=10), seeds=[0, 5],
                   sweep={"lam": [0.1, 1.0]})
    df = res.to_frame()
    assert len(df) == 2 * 2 * 3
    assert {"task", "advantage", "seed", "step", "lam", "pass@1", "entropy", "G"} <= set(df.columns)
    assert sorted(df.seed.unique()) == [0, 5]
    assert df.loc[df.step == 0, "positive_mass"].isna().all()


@pytest.mark.heavy
def test_negative_mass_overtakes_balanced_logit_norm_growth_late_in_training():
    """The sign-axis geometry claim at small scale holds late, not early: NSR-only's logit-norm growth is below
    balanced's at step 100 and above it at step 1000 (bandit, Adam; PSR-only grows it most throughout)."""
    task = make_task("bandit", **SIGN_TASK)
    cfg = SimConfig(advantage="sign_balanced", G=16, steps=1000, log_every=100, optimizer="adam", lr=0.02)
    res = simulate(task, cfg, seeds=[0, 1, 2], sweep={"balance": BALANCES})
    growth = (res.metrics["logit_norm"] - res.metrics["logit_norm"][..., :1]).mean(axis=1)  # (balance, log)
    nsr, balanced, psr = growth
    assert nsr[1] < balanced[1] and nsr[-1] > balanced[-1], (nsr, balanced)
    assert np.all(psr[1:] > np.maximum(nsr[1:], balanced[1:]))
