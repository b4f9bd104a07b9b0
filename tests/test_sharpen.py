"""The shared-sharpening task and the first-order theory of the pass@k crossover (fadesim.theory.crossing)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadesim.sim import SimConfig, simulate, simulate_reference
from fadesim.sim.step import advantage_call
from fadesim.tasks import Beta, Stratified, make_sharpen, make_task
from fadesim.theory.crossing import (adam_path, crossing_k, direction_moments, direction_snr,
                                     expected_sharpening_gradient, expected_skill_gradient, pass_at_k_slopes,
                                     pass_rate_slopes, prompt_weight, step_moments)
from tests.simulators import assert_jax_equals_numpy

SMALL = dict(n_prompts=24, n_answers=10, n_correct=3, prior="zipf", seed=3)


def _random_params(task, rng, s=0.3, scale=0.5):
    return {"s": np.float64(s), "theta": scale * rng.standard_normal(task.logits0.shape)}


def test_the_initial_policy_is_the_bandits():
    bandit = make_task("bandit", **SMALL)
    for tabular in (True, False):
        task = make_task("sharpen", sharpen_scale=2.0, tabular=tabular, **SMALL)
        np.testing.assert_array_equal(task.logits(task.init_params(np, np.float64), np), bandit.logits0)
        assert set(task.init_params(np, np.float64)) == ({"s", "theta"} if tabular else {"s"})


@pytest.mark.parametrize("tabular,skill", [(True, 0.0), (False, 0.0), (True, 1.3)])
def test_the_score_is_the_gradient_of_the_surrogate(tabular, skill):
    """task.score = d/dparams of (1/(G N)) sum w log pi(a), by central differences (with the skill g where d > 0)."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=skill, tabular=tabular, **SMALL)
    rng = np.random.default_rng(0)
    params = _random_params(task, rng)
    if skill:
        params["g"] = np.float64(0.4)
    if not tabular:
        params.pop("theta")
    G = 4
    actions = rng.integers(0, 10, size=(24, G))
    weights = rng.standard_normal((24, G))
    surrogate = lambda prm: float(np.sum(weights * task.logprob(prm, actions, np)) / (G * 24))  # noqa: E731 - a one-line local helper
    grads = task.score(params, actions, weights, np)
    h = 1e-6
    for name in ("s", "g") if skill else ("s",):
        fd = (surrogate({**params, name: params[name] + h}) - surrogate({**params, name: params[name] - h})) / (2 * h)
        assert grads[name] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    if tabular:
        for n, a in [(0, 0), (5, 7), (23, 9)]:
            bump = np.zeros_like(params["theta"])
            bump[n, a] = h
            fd = (surrogate({**params, "theta": params["theta"] + bump})
                  - surrogate({**params, "theta": params["theta"] - bump})) / (2 * h)
            assert grads["theta"][n, a] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_numpy_and_jax_agree_without_the_per_prompt_logits():
    task = make_task("sharpen", n_prompts=16, n_answers=8, n_correct=2, sharpen_scale=0.5, tabular=False, seed=0)
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=8, steps=30, log_every=10), 7, rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.1, 3.0), s=st.floats(-0.5, 1.0))
def test_pass_rate_slopes_are_the_derivative_of_the_pass_rate(seed, scale, s):
    task = make_task("sharpen", sharpen_scale=scale, **{**SMALL, "seed": seed})
    params = _random_params(task, np.random.default_rng(seed), s=s)
    p, dp = pass_rate_slopes(task, params)
    h = 1e-6
    up, _ = pass_rate_slopes(task, {**params, "s": params["s"] + h})
    down, _ = pass_rate_slopes(task, {**params, "s": params["s"] - h})
    np.testing.assert_allclose((up - down) / (2 * h), dp, rtol=1e-5, atol=1e-8)
    slopes = pass_at_k_slopes(p, dp, [1, 4, 64])
    fd_k = {k: (np.mean(1 - (1 - up) ** k) - np.mean(1 - (1 - down) ** k)) / (2 * h) for k in (1, 4, 64)}
    for k in (1, 4, 64):
        assert slopes[k] == pytest.approx(fd_k[k], rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("advantage,params", [("grpo", {}), ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1}),
                                              ("rloo", {})])
def test_the_expected_sharpening_gradient_matches_sampled_batches(advantage, params):
    """The closed form E[grad_s] against the mean of the simulator's own gradient over 3000 sampled batches
    (numpy, the registry's advantage), within 4 standard errors."""
    task = make_task("sharpen", sharpen_scale=0.7, **SMALL)
    rng = np.random.default_rng(1)
    prm = _random_params(task, rng)
    G = 4
    call = advantage_call(SimConfig(advantage=advantage, advantage_params=params, G=G))
    draws = []
    for _ in range(3000):
        ro = task.rollout(prm, rng.random((24, G)), np)
        adv = call(ro["rewards"], {}, ro["logprobs"], {})
        draws.append(task.score(prm, ro["actions"], adv, np)["s"])
    draws = np.asarray(draws)
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    exact = expected_sharpening_gradient(task, advantage, G, prm, **params)
    assert abs(draws.mean() - exact) < 4 * se, (draws.mean(), exact, se)


def test_the_sign_of_the_mass_does_not_change_the_first_order_drift():
    """PSR = NSR = REINFORCE-shaped: omega(p) = 1; W-REINFORCE(lam) = 1 + lam; GRPO weights the extremes more."""
    p = np.linspace(0.02, 0.98, 49)
    for name, kw, want in [("psr", {}, 1.0), ("nsr", {}, 1.0), ("w_reinforce", {"lam": 0.1}, 1.1)]:
        np.testing.assert_allclose(prompt_weight(name, 8, p, **kw), want, rtol=1e-12)
    grpo = prompt_weight("grpo", 8, p)
    assert grpo[0] > grpo[24] < grpo[-1] and grpo.min() > 1.0
    task = make_task("sharpen", sharpen_scale=0.7, **SMALL)
    p0, dp = pass_rate_slopes(task)
    assert expected_sharpening_gradient(task, "psr", 8) == pytest.approx(np.mean(dp), rel=1e-12)
    assert expected_sharpening_gradient(task, "nsr", 8) == pytest.approx(np.mean(dp), rel=1e-12)


def test_crossing_k_reads_the_slopes():
    assert crossing_k({1: 0.1, 2: 0.01, 4: -0.02, 8: -0.05}) == 4
    assert crossing_k({1: 0.1, 2: 0.01, 4: 0.002}) is None
    assert crossing_k({1: -0.1, 4: -0.2}) is None  # pass@1 does not rise: no crossover


# a MATH-like base: mean pass rate about 0.63 with a tail of hard prompts (Beta(0.6, 0.35))
CROSSING_TASK = dict(n_prompts=96, n_answers=32, n_correct=3, prior="zipf", difficulty=Stratified(Beta(0.6, 0.35)),
                     seed=0)


def test_sharpening_crosses_where_the_first_order_theory_says_and_the_bandit_does_not():
    """Pure shared sharpening, SGD, small steps (the sharpness moves 1 -> 1.3): pass@1 rises and pass@k falls from
    exactly the k the first-order slopes predict; the tabular bandit with the same initial policy and the same run
    never ends below its base at any k."""
    task = make_task("sharpen", sharpen_scale=1.0, tabular=False, **CROSSING_TASK)
    p, dp = pass_rate_slopes(task)
    ks = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    predicted = crossing_k(pass_at_k_slopes(p, dp, ks))
    assert predicted == 8
    cfg = SimConfig(advantage="grpo", G=8, steps=20, log_every=20, optimizer="sgd", lr=0.05)
    res = simulate(task, cfg, seeds=[0, 1])
    change = {k: res.metrics[f"pass@{k}"][0, :, -1].mean() - res.metrics[f"pass@{k}"][0, :, 0].mean() for k in ks}
    assert change[1] > 0.02
    assert all(change[k] < 0 for k in ks if k >= predicted)
    assert all(change[k] > 0 for k in ks if k < predicted)
    assert 1.1 < res.metrics["sharpness"][0, :, -1].min() <= res.metrics["sharpness"][0, :, -1].max() < 1.5
    bandit = simulate(make_task("bandit", **CROSSING_TASK), cfg.replace(lr=2.0), seeds=[0, 1])
    assert min(bandit.metrics[f"pass@{k}"][0, :, -1].mean() - bandit.metrics[f"pass@{k}"][0, :, 0].mean()
               for k in ks) > 0


@pytest.mark.parametrize("advantage", ["grpo", "fade"])
def test_numpy_and_jax_agree_on_a_prompt_mini_batch(advantage):
    task = make_task("sharpen", sharpen_scale=0.5, prompts_per_step=5, **SMALL)
    assert_jax_equals_numpy(task, SimConfig(advantage=advantage, G=4, steps=20, log_every=10), 5, rtol=1e-5,
                            atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(optimizer=st.sampled_from(["sgd", "adam"]), B=st.integers(1, 24), G=st.integers(2, 6),
       seed=st.integers(0, 10_000))
def test_a_mini_batch_step_is_the_full_step_of_the_drawn_prompts_alone(optimizer, B, G, seed):
    """One step of a task drawing B of 24 prompts equals one step of the task made of those B prompts alone
    (same rollouts): the advantage sees the drawn groups only (every registered advantage is computed group by group,
    so a user's batch-level one, reward minus the batch's mean reward, checks that), the update is their mean, the
    undrawn prompts' logits do not move, and the logged masses are per drawn group."""
    import fadesim
    from fadesim.sim.step import initial_state, train_step
    from fadesim.tasks.sharpen import Sharpen

    def batch_centred(rewards, *, mask=None, signals=None, logprobs=None):
        valid = np.ones(rewards.shape, bool) if mask is None else mask
        return np.where(valid, rewards - rewards[valid].mean(), 0.0)

    fadesim.register("_batch_centred_test", batch_centred, paper="user", replace=True)

    task = make_task("sharpen", sharpen_scale=0.7, prompts_per_step=B, **SMALL)
    rng = np.random.default_rng(seed)
    u = rng.random(task.uniform_shape(G))
    assert u.shape == (24, G + 1)
    drawn = np.sort(np.argsort(u[:, G])[:B])
    sub = Sharpen(logits0=task.logits0[drawn], correct=task.correct[drawn], sharpen_scale=0.7)
    # Adam divides a gradient entry by its own size: an entry that is zero up to rounding in one computation (N / B
    # times 1 / (G N) vs 1 / (G B)) can be 1e-17 in the other, which Adam turns into a step of about lr 1e-17 / eps
    atol = 1e-15 if optimizer == "sgd" else 1e-10
    try:
        for advantage in ("grpo", "psr", "_batch_centred_test"):
            cfg = SimConfig(advantage=advantage, G=G, optimizer=optimizer, lr=0.1)
            state, batch = train_step(task, cfg, initial_state(task, cfg, np, np.float64), u, {}, np)
            s_state, s_batch = train_step(sub, cfg, initial_state(sub, cfg, np, np.float64), u[drawn, :G], {}, np)
            assert state["params"]["s"] == pytest.approx(s_state["params"]["s"], rel=1e-12, abs=atol)
            np.testing.assert_allclose(state["params"]["theta"][drawn], s_state["params"]["theta"], rtol=1e-12,
                                       atol=atol)
            undrawn = np.setdiff1d(np.arange(24), drawn)
            np.testing.assert_array_equal(state["params"]["theta"][undrawn], 0.0)
            for name in ("reward_mean", "positive_mass", "negative_mass", "sign_balance", "hardness", "ess"):
                assert batch[name] == pytest.approx(s_batch[name], rel=1e-12, abs=1e-15), (advantage, name)
    finally:
        fadesim.unregister("_batch_centred_test")


def test_a_mini_batch_draws_every_prompt_equally_often():
    """Exactly B prompts a step, each drawn with frequency B / N (4 standard errors over 4000 steps)."""
    B, N = 6, 24
    task = make_task("sharpen", prompts_per_step=B, **SMALL)
    params = task.init_params(np, np.float64)
    rng = np.random.default_rng(0)
    counts = np.zeros(N)
    for _ in range(4000):
        w = task.rollout(params, rng.random(task.uniform_shape(3)), np)["group_weight"]
        assert (w > 0).sum() == B and set(np.unique(w)) == {0.0, N / B}
        counts += w > 0
    p = B / N
    se = np.sqrt(4000 * p * (1 - p))
    assert np.abs(counts - 4000 * p).max() < 4 * se


def test_evaluation_prompts_are_never_trained_and_are_what_the_metrics_measure():
    """eval_prompts = 8 of 24: after 5 steps (all training prompts, then a mini-batch of 4) their logits have moved
    only through s (theta rows exactly 0), the training prompts' have moved, and every logged policy metric is the
    mean over the 8 alone (checked against the exact per-prompt values); numpy = jax with them."""
    from fadesim.sim.step import initial_state, policy_metrics, train_step
    from fadesim.tasks import softmax_policy as sp

    for B in (0, 4):
        task = make_task("sharpen", sharpen_scale=0.7, prompts_per_step=B, eval_prompts=8, **SMALL)
        ev = task.evaluated()
        assert ev.shape == (24,) and ev.sum() == 8
        cfg = SimConfig(advantage="grpo", G=4, optimizer="adam", lr=0.1)
        state = initial_state(task, cfg, np, np.float64)
        rng = np.random.default_rng(B)
        for _ in range(5):
            u = rng.random(task.uniform_shape(cfg.G))
            w = task.rollout(state["params"], u, np)["group_weight"]
            assert not w[ev].any() and (w > 0).sum() == (B or 16) and np.allclose(w[w > 0], 24 / (B or 16))
            state, _ = train_step(task, cfg, state, u, {}, np)
        theta = state["params"]["theta"]
        np.testing.assert_array_equal(theta[ev], 0.0)
        assert np.abs(theta[~ev]).max() > 0 and state["params"]["s"] != 0
        m = policy_metrics(task, cfg, state["params"], np)
        ex = task.exact(state["params"], np, cfg.floor)
        for k in (1, 4, 64):
            assert m[f"pass@{k}"] == pytest.approx(np.mean(1 - (1 - ex["pass_rate"][ev]) ** k), rel=1e-12)
        assert m["entropy"] == pytest.approx(ex["entropy"][ev].mean(), rel=1e-12)
        assert m["unsolved"] == pytest.approx(np.mean(ex["pass_rate"][ev] < sp.UNSOLVED_PASS_RATE), abs=1e-12)
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=4, steps=20, log_every=10), 3, rtol=1e-5, atol=1e-5)


def test_bad_sharpen_settings_are_refused():
    with pytest.raises(ValueError, match="eval_prompts must be an integer in"):
        make_task("sharpen", eval_prompts=24, **SMALL)
    with pytest.raises(ValueError, match="more than the 4 training prompts"):
        make_task("sharpen", eval_prompts=20, prompts_per_step=5, **SMALL)
    for bad in (-1, 25, 2.5, True):
        with pytest.raises(ValueError, match="prompts_per_step must be an integer in"):
            make_task("sharpen", prompts_per_step=bad, **SMALL)
    with pytest.raises(ValueError, match="sharpen_scale must be a finite number >= 0"):
        make_task("sharpen", sharpen_scale=-1.0)
    with pytest.raises(ValueError, match="sharpen_scale must be a finite number >= 0"):
        make_task("sharpen", sharpen_scale=float("nan"))
    with pytest.raises(ValueError, match="tabular must be True or False"):
        make_task("sharpen", tabular="yes")
    with pytest.raises(ValueError, match="leaves nothing to train"):
        make_task("sharpen", sharpen_scale=0.0, tabular=False)


# ----------------------------------------------------------------------------- the shared skill direction
def _skill_params(task, rng, s=0.3, g=0.4, scale=0.5):
    return {**_random_params(task, rng, s, scale), "g": np.float64(g)}


def test_the_skill_direction_starts_at_the_bandits_policy_and_is_absent_at_d_zero():
    bandit = make_task("bandit", **SMALL)
    task = make_task("sharpen", sharpen_scale=0.5, skill_scale=2.0, **SMALL)
    params = task.init_params(np, np.float64)
    assert set(params) == {"s", "g", "theta"}
    np.testing.assert_array_equal(task.logits(params, np), bandit.logits0)
    assert set(make_task("sharpen", **SMALL).init_params(np, np.float64)) == {"s", "theta"}
    # one unit of g adds d to every correct logit and nothing to a wrong one
    moved = task.logits({**params, "g": np.float64(1.0)}, np) - bandit.logits0
    np.testing.assert_allclose(moved, np.where(task.correct, 2.0, 0.0), atol=1e-12)
    assert float(task.geometry({**params, "g": np.float64(0.25)}, np)["skill"]) == pytest.approx(0.5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.floats(0.1, 3.0), g=st.floats(-1.0, 2.0))
def test_skill_raises_every_prompt_by_d_p_one_minus_p(seed, d, g):
    """dp_n/dg = d p_n (1 - p_n) >= 0 on every prompt (central differences of the exact pass rate)."""
    task = make_task("sharpen", sharpen_scale=0.5, skill_scale=d, **{**SMALL, "seed": seed})
    params = _skill_params(task, np.random.default_rng(seed), g=g)
    p = task.exact(params, np)["pass_rate"]
    h = 1e-6
    up = task.exact({**params, "g": params["g"] + h}, np)["pass_rate"]
    down = task.exact({**params, "g": params["g"] - h}, np)["pass_rate"]
    np.testing.assert_allclose((up - down) / (2 * h), d * p * (1 - p), rtol=1e-5, atol=1e-9)


def test_numpy_and_jax_agree_with_the_skill_direction():
    task = make_task("sharpen", sharpen_scale=0.5, skill_scale=0.8, prompts_per_step=5, eval_prompts=6, **SMALL)
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=4, steps=20, log_every=10, optimizer="adam"), 5,
                            rtol=1e-5, atol=1e-5)


def _sampled_group_gradients(task, prm, advantage, params, G, draws, rng):
    """(draws, N) per-prompt group gradients on s, g and (where the task has it) h from the task's own code (its 1/N
    undone)."""
    call = advantage_call(SimConfig(advantage=advantage, advantage_params=params, G=G))
    l0 = task.sharpened(np, np.float64)  # the base logits, less the tail's entropy where it has one
    n = task.n_prompts
    out = {"s": [], "g": [], **({"h": []} if task.shortcut_scale else {})}
    for _ in range(draws):
        ro = task.rollout(prm, rng.random((n, G)), np)
        dlogits = n * task.logit_gradient(prm, ro["actions"], call(ro["rewards"], {}, ro["logprobs"], {}), np)
        out["s"].append(task.sharpen_scale * (dlogits * l0).sum(-1))
        out["g"].append(task.skill_scale * (dlogits * task.skilled(np, np.float64)).sum(-1))
        if task.shortcut_scale:
            out["h"].append(task.shortcut_scale * (dlogits * task.skilled(np, np.float64, 1.0)).sum(-1))
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("advantage,params", [("grpo", {}), ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1})])
def test_direction_moments_match_sampled_groups(advantage, params):
    """The exact per-prompt mean and variance of each shared direction's group gradient against 4000 sampled groups
    per prompt (the simulator's rollout, the registry's advantage, the task's own gradient): every prompt's mean
    within 4 standard errors, its variance within 4 standard errors of the sample variance (fourth moments
    estimated from the draws), and the expected skill gradient equal to the mean of the per-prompt means."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, **SMALL)
    rng = np.random.default_rng(2)
    prm = _skill_params(task, rng)
    G = 4
    draws = _sampled_group_gradients(task, prm, advantage, params, G, 4000, rng)
    exact = direction_moments(task, advantage, G, prm, **params)
    for name in ("s", "g"):
        x = draws[name]
        mu, var = exact[name]
        se = x.std(axis=0, ddof=1) / np.sqrt(len(x)) + 1e-12
        assert np.all(np.abs(x.mean(0) - mu) < 4 * se), name
        centred = x - x.mean(0)
        var_se = np.sqrt(np.maximum((centred ** 4).mean(0) - x.var(0) ** 2, 0.0) / len(x)) + 1e-12
        assert np.all(np.abs(x.var(0, ddof=1) - var) < 4 * var_se), name
    assert expected_skill_gradient(task, advantage, G, prm, **params) == pytest.approx(exact["g"][0].mean(), rel=1e-10)
    assert expected_sharpening_gradient(task, advantage, G, prm, **params) == pytest.approx(exact["s"][0].mean(),
                                                                                           rel=1e-10)


def test_direction_snr_reads_a_mini_batch_of_the_moments():
    """direction_snr against a hand computation from direction_moments at B = N (no prompt spread) and B = 1 (the
    spread over prompts in full), and against drawing B = 3 of the 24 prompts' sampled group gradients."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, **SMALL)
    mom = direction_moments(task, "psr", 4)
    n = task.n_prompts
    for name, (mu, var) in mom.items():
        assert direction_snr(task, "psr", 4)[name] == pytest.approx(mu.mean() / np.sqrt(var.mean() / n), rel=1e-12)
        assert direction_snr(task, "psr", 4, 1)[name] == pytest.approx(mu.mean() / np.sqrt(var.mean() + mu.var()),
                                                                       rel=1e-12)
    rng = np.random.default_rng(5)
    draws = _sampled_group_gradients(task, task.init_params(np, np.float64), "psr", {}, 4, 4000, rng)
    pick = np.argsort(rng.random((4000, n)), axis=1)[:, :3]  # 3 of 24 without replacement, each draw
    for name in ("s", "g"):
        steps = np.take_along_axis(draws[name], pick, axis=1).mean(1)
        snr = steps.mean() / steps.std(ddof=1)
        # the sample SNR's standard error is about sqrt((1 + snr^2 / 2) / draws)
        assert abs(snr - direction_snr(task, "psr", 4, 3)[name]) < 4 * np.sqrt((1 + snr ** 2 / 2) / 4000), name
    with pytest.raises(ValueError, match="prompts_per_step must be in"):
        direction_snr(task, "psr", 4, 25)


def test_a_bad_skill_scale_is_refused():
    for bad in (-0.5, float("inf"), float("nan"), True, "1"):
        with pytest.raises(ValueError, match="skill_scale must be a finite number >= 0"):
            make_task("sharpen", skill_scale=bad, **SMALL)
    make_task("sharpen", sharpen_scale=0.0, skill_scale=1.0, tabular=False, **SMALL)  # the skill alone trains
    from fadesim.lab.literature import ProtocolSettings
    with pytest.raises(ValueError, match="^skill_scale: sharpen-task settings .* given with task 'bandit'$"):
        ProtocolSettings(task="bandit", skill_scale=1.0)


# ----------------------------------------------------------------------------- the mean-field Adam path
def test_adam_path_is_adams_recursion_on_the_step_moments():
    """One step from the start: m_hat = mu, v_hat = mu^2 + var, so each shared direction moves
    lr mu / (sqrt(mu^2 + var) + eps); two steps apply the bias-corrected recursion (by hand)."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, tabular=False, **SMALL)
    mom = step_moments(task, "nsr", 4, 3)
    one = adam_path(task, "nsr", 4, 1, 0.05, 3, every=1)
    for name in ("s", "g"):
        mu, var = mom[name]
        assert one[name][1] == pytest.approx(0.05 * mu / (np.sqrt(mu * mu + var) + 1e-8), rel=1e-12)
    two = adam_path(task, "nsr", 4, 2, 0.05, 3, every=2)  # the moments held for both steps
    for name in ("s", "g"):
        mu, var = mom[name]
        m1, v1 = 0.1 * mu, 0.001 * (mu * mu + var)
        m2, v2 = 0.9 * m1 + 0.1 * mu, 0.999 * v1 + 0.001 * (mu * mu + var)
        hand = 0.05 * mu / (np.sqrt(mu * mu + var) + 1e-8) + 0.05 * (m2 / (1 - 0.81)) / (
            np.sqrt(v2 / (1 - 0.999 ** 2)) + 1e-8)
        assert two[name][-1] == pytest.approx(hand, rel=1e-12)
    with pytest.raises(ValueError, match="must be a multiple of every"):
        adam_path(task, "nsr", 4, 15, 0.05, every=10)


@pytest.mark.parametrize("advantage,B", [("psr", 0), ("nsr", 0), ("psr", 1), ("nsr", 1)])
def test_adam_path_follows_the_simulators_shared_directions(advantage, B):
    """Without per-prompt logits the mean-field path is the whole first-order model: the simulated sharpness and
    skill (16 seeds, per-entry adam) stay within 4 standard errors plus 4% of the distance travelled of the path.
    The 4% is the mean-field approximation's own error (E[m / sqrt(v)] against E[m] / sqrt(E[v]), the moments held
    for 10 steps), measured at 1-3% over 150 steps on this task."""
    task = make_task("sharpen", n_prompts=32, n_answers=16, n_correct=3, prior="zipf",
                     difficulty=Stratified(Beta(0.6, 0.4)), sharpen_scale=0.5, skill_scale=0.5, tabular=False,
                     prompts_per_step=B, seed=0)
    res = simulate(task, SimConfig(advantage=advantage, G=8, steps=150, log_every=50, optimizer="adam", lr=0.02),
                   seeds=range(16))
    path = adam_path(task, advantage, 8, 150, 0.02, B, every=10)
    at = [list(path["step"]).index(int(t)) for t in res.steps]
    for metric, name, start in (("sharpness", "s", 1.0), ("skill", "g", 0.0)):
        sim = np.asarray(res.metrics[metric][0])
        want = start + 0.5 * path[name][at]
        se = sim.std(0, ddof=1) / 4
        assert np.all(np.abs(sim.mean(0) - want) <= 4 * se + 0.04 * np.abs(want - start)), (metric, sim.mean(0), want)


def test_a_stratified_evaluation_split_keeps_the_calibrated_difficulty():
    """eval_split "stratified" holds out every (N / M)-th prompt in order of initial pass rate: the held-out prompts'
    mean pass rate and pass@16 stay within 0.01 of the whole set's on every draw (a random half strays up to 0.05
    on this task), exactly M are held out, and the draw moves which ones."""
    kw = dict(n_prompts=256, n_answers=16, n_correct=3, prior="zipf", difficulty=Stratified(Beta(0.5, 0.3)),
              eval_prompts=128)
    masks, worst_random = [], 0.0
    for seed in range(6):
        task = make_task("sharpen", eval_split="stratified", seed=seed, **kw)
        p = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
        held = task.evaluated()
        assert held.sum() == 128
        for k in (1, 16):
            assert abs(np.mean(1 - (1 - p[held]) ** k) - np.mean(1 - (1 - p) ** k)) < 0.01
        masks.append(held)
        rnd = make_task("sharpen", eval_split="random", seed=seed, **kw)
        q = rnd.exact(rnd.init_params(np, np.float64), np)["pass_rate"]
        worst_random = max(worst_random, abs(q[rnd.evaluated()].mean() - q.mean()))
    assert any(not np.array_equal(masks[0], m) for m in masks[1:]) and worst_random > 0.01
    one = make_task("sharpen", eval_split="stratified", eval_prompts=5, **{**SMALL, "n_prompts": 24})
    assert one.evaluated().sum() == 5
    with pytest.raises(ValueError, match="eval_split must be one of random, stratified"):
        make_task("sharpen", eval_split="quantile", eval_prompts=4, **SMALL)


def test_the_entropy_signal_reads_the_training_prompts_only():
    """FADE's entropy signal is what a trainer sees: the policy's mean entropy over the prompts it trains on, the
    held-out evaluation prompts left out (at the start and after steps); numpy and jax agree on a FADE run."""
    from fadesim.sim.step import initial_state, policy_entropy

    task = make_task("sharpen", sharpen_scale=0.5, skill_scale=0.8, prompts_per_step=3, eval_prompts=10, **SMALL)
    train = ~task.evaluated()
    state = initial_state(task, SimConfig(advantage="fade", G=4), np, np.float64)
    h = task.exact(state["params"], np)["entropy"]
    assert state["initial_entropy"] == pytest.approx(h[train].mean(), rel=1e-12)
    assert abs(h[train].mean() - h.mean()) > 1e-4  # the held-out prompts would move it
    params = {**state["params"], "theta": 0.3 * np.random.default_rng(0).standard_normal(task.logits0.shape)}
    after = task.exact(params, np)["entropy"]
    assert policy_entropy(task, params, {}, np) == pytest.approx(after[train].mean(), rel=1e-12)
    assert_jax_equals_numpy(task, SimConfig(advantage="fade", G=4, steps=20, log_every=10), 5, rtol=1e-5, atol=1e-5)


# --- restarting from a checkpoint (the phase-shift experiment's late phase) --------------------------------------

def test_restarted_sharpen_starts_from_its_checkpoint_and_runs_the_same_on_numpy_and_jax():
    task = make_sharpen(n_prompts=12, n_answers=6, n_correct=2, skill_scale=0.5, prompts_per_step=3, eval_prompts=4,
                        seed=2)
    params = {"s": np.float64(0.7), "g": np.float64(-0.4),
              "theta": np.random.default_rng(0).normal(size=task.logits0.shape)}
    late = task.restarted(params)
    start = late.init_params(np, np.float64)
    assert set(start) == {"s", "g", "theta"} and float(start["s"]) == 0.7 and float(start["g"]) == -0.4
    np.testing.assert_array_equal(late.logits(start, np), task.logits(params, np))
    np.testing.assert_array_equal(late.evaluated(), task.evaluated())  # the same held-out prompts
    assert float(task.init_params(np, np.float64)["s"]) == 0.0  # the original is untouched
    assert_jax_equals_numpy(late, SimConfig(advantage="grpo", G=4, steps=20, log_every=10, optimizer="adam"), 4,
                            rtol=1e-5, atol=1e-5)


def test_restarted_sharpen_refuses_a_checkpoint_that_does_not_fit():
    task = make_sharpen(n_prompts=6, n_answers=5, n_correct=2, skill_scale=0.5, seed=0)
    good = {"s": 0.0, "g": 0.0, "theta": np.zeros((6, 5))}
    with pytest.raises(ValueError, match=r"exactly the parameters \['g', 's', 'theta'\]; got \['s', 'theta'\]"):
        task.restarted({"s": 0.0, "theta": np.zeros((6, 5))})
    with pytest.raises(ValueError, match=r"checkpoint theta has shape \(5, 5\); the task's is \(6, 5\)"):
        task.restarted({**good, "theta": np.zeros((5, 5))})
    with pytest.raises(ValueError, match=r"checkpoint s has shape \(2,\); the task's is \(\)"):
        task.restarted({**good, "s": np.zeros(2)})
    with pytest.raises(ValueError, match="must be finite"):
        task.restarted({**good, "s": np.nan})
    again = task.restarted(good).restarted({**good, "s": 1.0})  # a restarted task restarts from the new checkpoint
    assert float(again.init_params(np, np.float64)["s"]) == 1.0


def test_groups_per_step_is_the_mini_batch_or_every_training_prompt():
    from fadesim.tasks.protocol import groups_per_step

    assert groups_per_step(make_sharpen(n_prompts=12, n_answers=5, prompts_per_step=3, eval_prompts=4)) == 3
    assert groups_per_step(make_sharpen(n_prompts=12, n_answers=5, eval_prompts=4)) == 8  # the training prompts
    assert groups_per_step(make_task("bandit", n_prompts=12, n_answers=5)) == 12


def test_shared_answer_biases_move_an_answer_on_every_prompt():
    """answer_scale e > 0: one bias per answer, shared by every prompt (held-out ones included). Its analytic gradient
    equals finite differences of (1/(GN)) sum w log pi; pushing down a sampled answer on one prompt lowers that answer
    on every other prompt too; e = 0 leaves the task as it was (no beta, the same logits); jax = numpy."""
    plain = make_task("sharpen", skill_scale=0.3, eval_prompts=4, **SMALL)
    shared = make_task("sharpen", skill_scale=0.3, eval_prompts=4, answer_scale=0.7, **SMALL)
    assert "beta" not in plain.init_params(np, np.float64)
    rng = np.random.default_rng(0)
    prm = {k: v + 0.1 * rng.standard_normal(np.shape(v)) for k, v in shared.init_params(np, np.float64).items()}
    np.testing.assert_allclose(shared.logits(prm, np) - plain.logits({k: v for k, v in prm.items() if k != "beta"}, np),
                               np.broadcast_to(0.7 * prm["beta"], shared.logits0.shape), atol=1e-12)
    N, K = shared.logits0.shape
    actions, weights = rng.integers(0, K, size=(N, 3)), rng.standard_normal((N, 3))
    grad = shared.score(prm, actions, weights, np)["beta"]

    def objective(beta):
        return float((weights * shared.logprob({**prm, "beta": beta}, actions, np)).sum() / (3 * N))

    h = 1e-6
    numeric = [(objective(prm["beta"] + h * e) - objective(prm["beta"] - h * e)) / (2 * h) for e in np.eye(K)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    # one negative sample of answer 0 on prompt 0 alone: answer 0's probability falls on every other prompt
    w = np.zeros((N, 3))
    w[0, 0] = -1.0
    a = np.zeros((N, 3), dtype=int)
    step = shared.score(prm, a, w, np)["beta"]
    before = np.exp(shared.logits(prm, np))[:, 0] / np.exp(shared.logits(prm, np)).sum(1)
    moved = {**prm, "beta": prm["beta"] + 10.0 * step}
    after = np.exp(shared.logits(moved, np))[:, 0] / np.exp(shared.logits(moved, np)).sum(1)
    assert (after[1:] < before[1:]).all()
    assert_jax_equals_numpy(shared, SimConfig(advantage="nsr", G=4, steps=20, log_every=10, optimizer="adam"), 3,
                            rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="answer_scale must be a finite number >= 0"):
        make_task("sharpen", answer_scale=-1.0, **SMALL)


# ----------------------------------------------------------------------------- the skill's reach and the sharpness floor
def test_the_skill_reaches_a_prompt_with_the_base_probability_of_a_correct_draw_among_k():
    """reach_samples = K_r: prompt n is reached with probability 1 - (1 - p_n)^K_r, so over many prompts the reached
    fraction is the base's pass@K_r (4 standard errors of a Bernoulli mean), fixed by the task's seed; K_r = 0 reaches
    every prompt (reach None, the task as it was)."""
    dist = Stratified(Beta(0.4, 2.0))
    for k in (1, 8, 64):
        task = make_sharpen(4000, 16, 2, dist, skill_scale=0.3, reach_samples=k, prior="zipf", seed=5)
        p = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
        covered = 1.0 - (1.0 - p) ** k
        se = np.sqrt((covered * (1 - covered)).sum()) / len(p)
        assert abs(task.reach.mean() - covered.mean()) < 4 * se, k
        again = make_sharpen(4000, 16, 2, dist, skill_scale=0.3, reach_samples=k, prior="zipf", seed=5)
        np.testing.assert_array_equal(again.reach, task.reach)
    assert make_sharpen(**SMALL, skill_scale=0.3).reach is None


def test_the_skill_moves_reached_prompts_only_and_its_gradient_is_the_surrogates():
    """On an unreached prompt the skill moves no logit and gets no gradient; on a reached one it adds d to every correct
    logit; task.score's g equals central differences of (1/(GN)) sum w log pi."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.3, reach_samples=2, **SMALL)
    reach = task.reach
    assert 0 < reach.sum() < len(reach)
    rng = np.random.default_rng(1)
    prm = _skill_params(task, rng)
    moved = task.logits({**prm, "g": prm["g"] + 1.0}, np) - task.logits(prm, np)
    np.testing.assert_allclose(moved, np.where(task.correct & reach[:, None], 1.3, 0.0), atol=1e-12)
    G, N = 4, task.n_prompts
    actions, weights = rng.integers(0, 10, size=(N, G)), rng.standard_normal((N, G))
    surrogate = lambda prm_: float(np.sum(weights * task.logprob(prm_, actions, np)) / (G * N))  # noqa: E731
    h = 1e-6
    fd = (surrogate({**prm, "g": prm["g"] + h}) - surrogate({**prm, "g": prm["g"] - h})) / (2 * h)
    assert task.score(prm, actions, weights, np)["g"] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    only_unreached = np.where(reach[:, None], 0.0, weights)
    assert task.score(prm, actions, only_unreached, np)["g"] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("advantage", ["grpo", "nsr"])
def test_direction_moments_with_a_limited_reach_match_sampled_groups(advantage):
    """The exact skill moments with reach_samples set (zero on unreached prompts) against 4000 sampled groups a prompt,
    each prompt's mean within 4 standard errors, and the expected skill gradient equal to their mean."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, reach_samples=2, **SMALL)
    rng = np.random.default_rng(4)
    prm = _skill_params(task, rng)
    draws = _sampled_group_gradients(task, prm, advantage, {}, 4, 4000, rng)["g"]
    mu, var = direction_moments(task, advantage, 4, prm)["g"]
    assert np.all(mu[~task.reach] == 0.0) and np.all(var[~task.reach] == 0.0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws)) + 1e-12
    assert np.all(np.abs(draws.mean(0) - mu) < 4 * se)
    assert expected_skill_gradient(task, advantage, 4, prm) == pytest.approx(mu.mean(), rel=1e-10)


def test_the_sharpness_floor_keeps_the_sharpness_at_its_start_and_runs_the_same_on_numpy_and_jax():
    """All prompts hard (Beta(0.3, 8)) with a skill: unconstrained, the sharpness falls below its start (the hard
    prompts' correct answers sit in the prior's tail); with floor_sharpness it never does (the projection s >= 0
    after every step), the skill still moves, and numpy and jax agree step for step (two seeds of the numpy reference
    each for the premise, then one jax run against it)."""
    kw = dict(n_prompts=32, n_answers=12, n_correct=2, difficulty=Stratified(Beta(0.3, 8.0)), prior="zipf", seed=1,
              sharpen_scale=1.0, skill_scale=0.5, prompts_per_step=4)
    cfg = SimConfig(advantage="grpo", G=4, steps=100, log_every=10, optimizer="adam", lr=0.1)
    free, task = make_task("sharpen", **kw), make_task("sharpen", floor_sharpness=True, **kw)
    for seed in (0, 1):
        assert simulate_reference(free, cfg, seed=seed).metrics["sharpness"].min() < 0.9
        floored = simulate_reference(task, cfg, seed=seed).metrics
        assert floored["sharpness"].min() >= 1.0 and floored["skill"][..., -1].min() > 0.5
    assert task.constrain({"s": np.float64(-0.3), "g": np.float64(2.0)}, np) == {"s": 0.0, "g": 2.0}
    assert_jax_equals_numpy(task, cfg, 2, rtol=1e-5, atol=1e-5)


def test_bad_reach_and_floor_settings_are_refused():
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="reach_samples must be an integer >= 0"):
            make_task("sharpen", skill_scale=0.3, reach_samples=bad, **SMALL)
    with pytest.raises(ValueError, match="needs skill_scale > 0"):
        make_task("sharpen", reach_samples=8, **SMALL)
    with pytest.raises(ValueError, match="floor_sharpness must be True or False"):
        make_task("sharpen", floor_sharpness=1, **SMALL)


def _log_odds(pass_rate):
    return np.log(pass_rate) - np.log1p(-pass_rate)


def _trained_theta(task, rng, scale=0.8):
    """Random per-prompt logits on the training prompts, 0 on the held-out ones (as training leaves them)."""
    return np.where(task.evaluation[:, None], 0.0, scale * rng.standard_normal(task.logits0.shape))


def test_each_held_out_prompt_has_a_distinct_training_twin_at_its_quantile_of_initial_pass_rate():
    """Stratified halves: the twins are training prompts, all different, each next to its held-out prompt in the
    order of initial pass rate; a random third: the twins are training prompts in the same order as their prompts."""
    for split, m in (("stratified", 12), ("random", 8)):
        task = make_task("sharpen", eval_prompts=m, eval_split=split, transfer=1.0, **SMALL)
        p0 = task.exact(task.init_params(np, np.float64), np)["pass_rate"]
        held = np.flatnonzero(task.evaluation)
        twins = task.twin[held]
        assert not task.evaluation[twins].any() and len(set(twins.tolist())) == m
        np.testing.assert_array_equal(task.twin[~task.evaluation], np.flatnonzero(~task.evaluation))
        by_rate = held[np.argsort(p0[held], kind="stable")]
        assert np.all(np.diff(p0[task.twin[by_rate]]) >= 0)
        if split == "stratified":
            rank = np.argsort(np.argsort(p0, kind="stable"), kind="stable")
            assert np.all(np.abs(rank[held] - rank[twins]) == 1)


@pytest.mark.parametrize("tau,reach", [(1.0, 0), (0.5, 0), (1.0, 2)])
def test_transfer_adds_tau_times_the_twins_learned_log_odds_to_reached_held_out_prompts(tau, reach):
    """At the initial policy transfer changes no logit (bit for bit); with trained per-prompt logits a held-out prompt's
    log-odds is its own without transfer plus tau x its twin's gain (the twin's log-odds with theta minus without),
    exactly, on reached prompts where the skill has a reach and not on the others; the training prompts' logits are
    those of the task without transfer."""
    kw = dict(SMALL, sharpen_scale=0.7, skill_scale=0.5, reach_samples=reach, eval_prompts=12,
              eval_split="stratified")
    plain, task = make_task("sharpen", **kw), make_task("sharpen", transfer=tau, **kw)
    init = task.init_params(np, np.float64)
    np.testing.assert_array_equal(task.logits(init, np), plain.logits(init, np))
    rng = np.random.default_rng(7)
    prm = {"s": np.float64(0.4), "g": np.float64(1.1), "theta": _trained_theta(task, rng)}
    ours, theirs = task.exact(prm, np)["pass_rate"], plain.exact(prm, np)["pass_rate"]
    untrained = plain.exact({**prm, "theta": np.zeros_like(prm["theta"])}, np)["pass_rate"]
    gain = _log_odds(theirs) - _log_odds(untrained)
    ev = task.evaluation
    lifted = ev & (task.reach if reach else True)
    assert 0 < lifted.sum() and (not reach or lifted.sum() < ev.sum())
    np.testing.assert_allclose(_log_odds(ours[lifted]), _log_odds(theirs[lifted]) + tau * gain[task.twin[lifted]],
                               rtol=0, atol=1e-9)
    np.testing.assert_array_equal(task.logits(prm, np)[~lifted], plain.logits(prm, np)[~lifted])


def test_at_tau_one_without_shared_directions_a_held_out_prompt_moves_as_its_twin_does():
    """With the sharpness and skill off (c = 0, d = 0) only the per-prompt logits learn: after 30 steps of GRPO at
    tau = 1 every held-out prompt's log-odds has moved by exactly its twin's move, and at tau = 0 not at all."""
    from fadesim.sim.step import initial_state, train_step

    kw = dict(SMALL, sharpen_scale=0.0, eval_prompts=12, eval_split="stratified", prompts_per_step=4)
    cfg = SimConfig(advantage="grpo", G=4, optimizer="adam", lr=0.1)
    moves = {}
    for tau in (0.0, 1.0):
        task = make_task("sharpen", transfer=tau, **kw)
        state = initial_state(task, cfg, np, np.float64)
        before = _log_odds(task.exact(state["params"], np)["pass_rate"])
        rng = np.random.default_rng(5)
        for _ in range(30):
            state, _ = train_step(task, cfg, state, rng.random(task.uniform_shape(cfg.G)), {}, np, metrics=False)
        moves[tau] = _log_odds(task.exact(state["params"], np)["pass_rate"]) - before
    ev, twin = task.evaluation, task.twin
    assert np.abs(moves[1.0][twin[ev]]).max() > 0.1
    np.testing.assert_allclose(moves[1.0][ev], moves[1.0][twin[ev]], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(moves[0.0][ev], 0.0)
    np.testing.assert_allclose(moves[1.0][~ev], moves[0.0][~ev], rtol=0, atol=1e-12)


def test_transfer_leaves_the_gradient_that_of_the_training_prompts():
    """Held-out prompts carry no weight, so task.score with transfer is the score without it, and equals central
    differences of the surrogate over the training prompts (s, g and a training prompt's theta entry)."""
    kw = dict(SMALL, sharpen_scale=0.7, skill_scale=0.5, reach_samples=2, eval_prompts=12, eval_split="stratified")
    plain, task = make_task("sharpen", **kw), make_task("sharpen", transfer=1.0, **kw)
    rng = np.random.default_rng(2)
    prm = {"s": np.float64(0.3), "g": np.float64(0.8), "theta": _trained_theta(task, rng)}
    G, N = 4, task.n_prompts
    actions = rng.integers(0, 10, size=(N, G))
    weights = np.where(task.evaluation[:, None], 0.0, rng.standard_normal((N, G)))
    ours, theirs = task.score(prm, actions, weights, np), plain.score(prm, actions, weights, np)
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-12, atol=1e-15)
    surrogate = lambda prm_: float(np.sum(weights * task.logprob(prm_, actions, np)) / (G * N))  # noqa: E731
    h = 1e-6
    for name in ("s", "g"):
        fd = (surrogate({**prm, name: prm[name] + h}) - surrogate({**prm, name: prm[name] - h})) / (2 * h)
        assert ours[name] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    n = int(task.twin[np.flatnonzero(task.evaluation)[0]])
    bump = np.zeros_like(prm["theta"])
    bump[n, 1] = h
    fd = (surrogate({**prm, "theta": prm["theta"] + bump}) - surrogate({**prm, "theta": prm["theta"] - bump})) / (2 * h)
    assert ours["theta"][n, 1] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_numpy_and_jax_agree_with_transfer():
    task = make_task("sharpen", **dict(SMALL, sharpen_scale=1.0, skill_scale=0.3, reach_samples=4, eval_prompts=12,
                                       eval_split="stratified", prompts_per_step=2, transfer=1.0))
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=4, steps=40, log_every=10, optimizer="adam", lr=0.1),
                            2, rtol=1e-5, atol=1e-5)


def test_bad_transfer_settings_are_refused():
    from fadesim.lab.literature import CHOSEN, ProtocolSettings

    for bad in (-0.5, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="transfer must be a finite number >= 0"):
            make_task("sharpen", eval_prompts=8, transfer=bad, **SMALL)
    with pytest.raises(ValueError, match="needs eval_prompts > 0 and tabular=True"):
        make_task("sharpen", transfer=1.0, **SMALL)
    with pytest.raises(ValueError, match="needs eval_prompts > 0 and tabular=True"):
        make_task("sharpen", eval_prompts=8, tabular=False, transfer=1.0, **SMALL)
    with pytest.raises(ValueError, match="first_order engine"):
        ProtocolSettings(**{**CHOSEN, "transfer": 1.0, "engine": "first_order", "clock": "simulator"})
    with pytest.raises(ValueError, match="needs eval_prompts > 0"):
        ProtocolSettings(**{**CHOSEN, "transfer": 1.0, "eval_prompts": 0})
    with pytest.raises(ValueError, match="sharpen-task settings"):
        ProtocolSettings(task="bandit", transfer=1.0)


def test_the_tail_answer_is_each_prompts_least_likely_wrong_one_and_leaves_the_base_policy():
    """One tail answer a prompt, wrong, the smallest base logit among its wrong answers; at s = 0 the policy is the
    task's without the tail (the logits differ by rounding only); at sharpness 0 (s = -1 / c, theta = 0, no skill)
    each prompt's policy is e^H : 1 : ... : 1 over its tail and its K - 1 other answers, in closed form."""
    H = 3.0
    plain, task = make_task("sharpen", sharpen_scale=0.5, **SMALL), make_task("sharpen", sharpen_scale=0.5,
                                                                              tail_entropy=H, **SMALL)
    assert plain.tail is None and np.all(task.tail.sum(axis=1) == 1) and not np.any(task.tail & task.correct)
    wrong = np.where(task.correct, np.inf, task.logits0)
    np.testing.assert_array_equal(np.argmax(task.tail, axis=1), np.argmin(wrong, axis=1))
    np.testing.assert_allclose(task.sharpened(np, np.float64), task.logits0 - H * task.tail, rtol=0, atol=0)
    init = task.init_params(np, np.float64)
    np.testing.assert_allclose(task.logits(init, np), plain.logits(init, np), rtol=0, atol=1e-12)
    np.testing.assert_allclose(task.exact(init, np)["pass_rate"], plain.exact(init, np)["pass_rate"], rtol=1e-12)
    flat = dict(init, s=np.float64(-2.0))  # 1 + c s = 0
    K, C = SMALL["n_answers"], SMALL["n_correct"]
    np.testing.assert_allclose(task.exact(flat, np)["pass_rate"], C / (np.exp(H) + K - 1), rtol=1e-12)
    np.testing.assert_allclose(plain.exact(flat, np)["pass_rate"], C / K, rtol=1e-12)


def test_with_a_tail_the_sharpness_gradient_and_the_theorys_slopes_are_those_of_the_sharpened_logits():
    """task.score's s entry equals central differences of the surrogate; the crossing theory's dp_n/ds (which reads
    Sharpen.sharpened) equals central differences of the exact pass rates, at a flattened policy where the tail
    matters."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=0.5, tail_entropy=4.0, **SMALL)
    rng = np.random.default_rng(8)
    prm = _skill_params(task, rng, s=-0.8)
    G, N = 4, task.n_prompts
    actions, weights = rng.integers(0, SMALL["n_answers"], size=(N, G)), rng.standard_normal((N, G))
    surrogate = lambda prm_: float(np.sum(weights * task.logprob(prm_, actions, np)) / (G * N))  # noqa: E731
    h = 1e-6
    fd = (surrogate({**prm, "s": prm["s"] + h}) - surrogate({**prm, "s": prm["s"] - h})) / (2 * h)
    assert task.score(prm, actions, weights, np)["s"] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    p, dp = pass_rate_slopes(task, prm)
    rate = lambda s_: task.exact({**prm, "s": np.float64(s_)}, np)["pass_rate"]  # noqa: E731
    np.testing.assert_allclose(p, rate(prm["s"]), rtol=1e-12)
    np.testing.assert_allclose(dp, (rate(prm["s"] + h) - rate(prm["s"] - h)) / (2 * h), rtol=1e-5, atol=1e-9)


def test_a_tail_turns_every_prompts_pull_toward_sharpening_at_a_flat_policy():
    """At sharpness 0 without a tail the hard prompts lose from sharpening (their correct answers sit in the prior's
    tail: dp/ds < 0 on some prompt); with a tail of e^8 answers, which a flat policy puts most of its mass on,
    every prompt gains from sharpening (the restoring force that keeps the prior from inverting)."""
    for H, sign in ((0.0, -1), (8.0, 1)):
        task = make_task("sharpen", tail_entropy=H, **SMALL)
        _, dp = pass_rate_slopes(task, dict(task.init_params(np, np.float64), s=np.float64(-1.0)))
        assert (dp.min() < 0) if sign < 0 else (dp.min() > 0)


@pytest.mark.parametrize("advantage", ["grpo", "nsr"])
def test_direction_moments_with_a_tail_match_sampled_groups(advantage):
    """The exact sharpness moments with a tail (on the sharpened logits) against 4000 sampled groups a prompt, at a
    flattened policy: every prompt's mean within 4 standard errors."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, tail_entropy=3.0, **SMALL)
    rng = np.random.default_rng(6)
    prm = _skill_params(task, rng, s=-0.6)
    draws = _sampled_group_gradients(task, prm, advantage, {}, 4, 4000, rng)["s"]
    mu, _ = direction_moments(task, advantage, 4, prm)["s"]
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws)) + 1e-12
    assert np.all(np.abs(draws.mean(0) - mu) < 4 * se)


def test_a_tail_keeps_the_prior_from_inverting_and_runs_the_same_on_numpy_and_jax():
    """All prompts hard (Beta(0.3, 8)) with a skill: without a tail GRPO drives the sharpness through 0 (the prior
    inverts); with a tail of e^8 answers it stays above 0 on both seeds, with no projection, and the skill still
    moves; numpy and jax agree step for step."""
    kw = dict(n_prompts=32, n_answers=12, n_correct=2, difficulty=Stratified(Beta(0.3, 8.0)), prior="zipf", seed=1,
              sharpen_scale=1.0, skill_scale=0.5, prompts_per_step=4)
    cfg = SimConfig(advantage="grpo", G=4, steps=300, log_every=10, optimizer="adam", lr=0.1)
    free, task = make_task("sharpen", **kw), make_task("sharpen", tail_entropy=8.0, **kw)
    for seed in (0, 1):
        assert simulate_reference(free, cfg, seed=seed).metrics["sharpness"].min() < 0.0
        tailed = simulate_reference(task, cfg, seed=seed).metrics
        assert tailed["sharpness"].min() > 0.0 and tailed["skill"][..., -1].min() > 5.0
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=4, steps=60, log_every=10, optimizer="adam", lr=0.1),
                            2, rtol=1e-5, atol=1e-5)


def test_bad_tail_settings_are_refused():
    from fadesim.lab.literature import ProtocolSettings

    for bad in (-1.0, float("inf"), True, "2"):
        with pytest.raises(ValueError, match="tail_entropy must be a finite number >= 0"):
            make_task("sharpen", tail_entropy=bad, **SMALL)
    with pytest.raises(ValueError, match="tail_entropy: sharpen-task settings"):
        ProtocolSettings(task="bandit", tail_entropy=4.0)


# ------------------------------------------------------------------------ a reach drawn uniformly; the skill's misfire
def test_a_uniform_reach_keeps_the_share_and_draws_it_independently_of_the_pass_rate():
    """reach_draw = "uniform": the reached share is still the base's pass@K_r (4 standard errors of a Bernoulli mean)
    but the reached prompts' mean initial pass rate is the unreached ones' (within 4 standard errors of the
    difference), where "base" reaches the easy prompts first."""
    dist = Stratified(Beta(0.4, 2.0))
    kw = dict(skill_scale=0.3, reach_samples=8, prior="zipf", seed=5)
    by_base = make_sharpen(4000, 16, 2, dist, **kw)
    uniform = make_sharpen(4000, 16, 2, dist, reach_draw="uniform", **kw)
    p = by_base.exact(by_base.init_params(np, np.float64), np)["pass_rate"]
    share = (1.0 - (1.0 - p) ** 8).mean()
    assert abs(uniform.reach.mean() - share) < 4 * np.sqrt(share * (1 - share) / len(p))
    for task, independent in ((uniform, True), (by_base, False)):
        r = task.reach
        gap = p[r].mean() - p[~r].mean()
        se = np.sqrt(p[r].var() / r.sum() + p[~r].var() / (~r).sum())
        assert bool(abs(gap) < 4 * se) == independent, (gap, se)


def test_misfire_raises_each_unreached_prompts_most_likely_wrong_answer_and_lowers_its_pass_rate():
    """misfire = m: the shortcut is each unreached prompt's most likely wrong answer at the base policy (none on a
    reached prompt); a unit of g moves the reached prompts' correct logits by d and the shortcut by d m; on an
    unreached prompt dp/dg = -d m p pi(shortcut) (central differences of the exact pass rates); task.score's g equals
    central differences of the surrogate."""
    d, m = 1.3, 0.8
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=d, reach_samples=2, misfire=m, **SMALL)
    reach, cut = task.reach, task.shortcut
    assert 0 < reach.sum() < len(reach)
    assert not cut[reach].any() and (cut[~reach].sum(axis=1) == 1).all() and not (cut & task.correct).any()
    wrong = np.where(task.correct, -np.inf, task.logits0)
    np.testing.assert_array_equal(np.flatnonzero(cut[~reach].ravel()) % task.correct.shape[1],
                                  np.argmax(wrong[~reach], axis=1))
    rng = np.random.default_rng(7)
    prm = _skill_params(task, rng)
    moved = task.logits({**prm, "g": prm["g"] + 1.0}, np) - task.logits(prm, np)
    np.testing.assert_allclose(moved, np.where(task.correct & reach[:, None], d, 0.0) + d * m * cut, atol=1e-12)
    h = 1e-6
    rate = lambda g: task.exact({**prm, "g": np.float64(g)}, np)["pass_rate"]  # noqa: E731
    fd = (rate(prm["g"] + h) - rate(prm["g"] - h)) / (2 * h)
    pi = np.exp(task.logprob(prm, np.argmax(cut, axis=1)[:, None], np))[:, 0]
    p = rate(prm["g"])
    np.testing.assert_allclose(fd[~reach], -d * m * p[~reach] * pi[~reach], rtol=1e-5, atol=1e-10)
    assert (fd[~reach] < 0).all() and (fd[reach] > 0).all()
    G, N = 4, task.n_prompts
    actions, weights = rng.integers(0, 10, size=(N, G)), rng.standard_normal((N, G))
    surrogate = lambda prm_: float(np.sum(weights * task.logprob(prm_, actions, np)) / (G * N))  # noqa: E731
    fd_g = (surrogate({**prm, "g": prm["g"] + h}) - surrogate({**prm, "g": prm["g"] - h})) / (2 * h)
    assert task.score(prm, actions, weights, np)["g"] == pytest.approx(fd_g, rel=1e-6, abs=1e-9)
    assert make_task("sharpen", skill_scale=d, reach_samples=2, **SMALL).shortcut is None


@pytest.mark.parametrize("advantage", ["grpo", "nsr"])
def test_direction_moments_with_a_misfire_match_sampled_groups(advantage):
    """The exact skill moments with a misfire (rho = -m q and the shortcut's variance on the unreached prompts)
    against 4000 sampled groups a prompt: every prompt's mean within 4 standard errors and its variance within 4
    standard errors of the sample variance; the unreached prompts' mean gradient on g below 0 where their pass rate
    rises with their weight; the expected skill gradient the mean of the per-prompt means."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, reach_samples=2, misfire=1.5, **SMALL)
    rng = np.random.default_rng(8)
    prm = _skill_params(task, rng)
    x = _sampled_group_gradients(task, prm, advantage, {}, 4, 4000, rng)["g"]
    mu, var = direction_moments(task, advantage, 4, prm)["g"]
    assert np.all(var[~task.reach] > 0)  # the shortcut's draw adds variance the reached prompts' gradient lacks
    se = x.std(axis=0, ddof=1) / np.sqrt(len(x)) + 1e-12
    assert np.all(np.abs(x.mean(0) - mu) < 4 * se)
    centred = x - x.mean(0)
    var_se = np.sqrt(np.maximum((centred ** 4).mean(0) - x.var(0) ** 2, 0.0) / len(x)) + 1e-12
    assert np.all(np.abs(x.var(0, ddof=1) - var) < 4 * var_se)
    assert expected_skill_gradient(task, advantage, 4, prm) == pytest.approx(mu.mean(), rel=1e-10)


def test_numpy_and_jax_agree_with_a_misfire_and_a_uniform_reach():
    task = make_task("sharpen", sharpen_scale=1.0, skill_scale=0.5, reach_samples=4, reach_draw="uniform",
                     misfire=1.0, tail_entropy=3.0, prompts_per_step=4, **SMALL)
    assert_jax_equals_numpy(task, SimConfig(advantage="grpo", G=4, steps=40, log_every=10, optimizer="adam", lr=0.1),
                            2, rtol=1e-5, atol=1e-5)


def test_bad_reach_draw_misfire_and_learned_shortcut_settings_are_refused():
    from fadesim.lab.literature import ProtocolSettings

    with pytest.raises(ValueError, match="reach_draw must be one of base, uniform; got 'even'"):
        make_task("sharpen", skill_scale=0.3, reach_samples=2, reach_draw="even", **SMALL)
    with pytest.raises(ValueError, match="reach_draw = 'uniform' says how the reached prompts are drawn"):
        make_task("sharpen", skill_scale=0.3, reach_draw="uniform", **SMALL)
    for name, bads, value_words, needs_words, needs_settings, other_task in (
            ("misfire", (-1.0, float("nan"), True), "misfire must be a finite number >= 0",
             "misfire raises the shortcut answer .* needs reach_samples > 0",
             "reach_draw, misfire and shortcut_scale .* need reach_samples > 0", "misfire, reach_draw: sharpen-task"),
            ("shortcut_scale", (-0.5, float("inf"), False),
             "shortcut_scale must be a finite number >= 0 \\(0: no learned shortcut\\)",
             "shortcut_scale adds a shortcut .* needs reach_samples > 0", "shortcut_scale .* need reach_samples > 0",
             "shortcut_scale: sharpen-task")):
        for bad in bads:
            with pytest.raises(ValueError, match=value_words):
                make_task("sharpen", skill_scale=0.3, reach_samples=2, **{name: bad}, **SMALL)
        with pytest.raises(ValueError, match=needs_words):
            make_task("sharpen", skill_scale=0.3, **{name: 1.0}, **SMALL)
        with pytest.raises(ValueError, match=f"{other_task} settings"):
            ProtocolSettings(task="bandit", **{name: 1.0}, **({"reach_draw": "uniform"} if name == "misfire" else {}))
        with pytest.raises(ValueError, match=needs_settings):
            ProtocolSettings(task="sharpen", skill_scale=0.3, **{name: 1.0})


# ------------------------------------------------------------------------------------------ a learned shortcut
def test_the_learned_shortcut_moves_its_answers_on_both_sides_and_its_gradient_is_the_surrogates():
    """shortcut_scale = f: a parameter h of its own (absent at f = 0, where the logits are the task's without it); a
    unit of h raises every reached prompt's correct answers and each unreached prompt's shortcut by f and nothing
    else; dp/dh = f p (1 - p) on a reached prompt and -f p pi(shortcut) on an unreached one (central differences of
    the exact pass rates); task.score's h equals central differences of the surrogate; the skill g is left as it
    is (no misfire: it moves the reached prompts alone)."""
    f = 0.9
    kw = dict(sharpen_scale=0.7, skill_scale=1.3, reach_samples=2, **SMALL)
    task, plain = make_task("sharpen", shortcut_scale=f, **kw), make_task("sharpen", **kw)
    assert set(task.init_params(np, np.float64)) == {"s", "g", "h", "theta"} and "h" not in plain.init_params(np, np.float64)
    reach, cut = task.reach, task.shortcut
    assert 0 < reach.sum() < len(reach) and not cut[reach].any() and (cut[~reach].sum(axis=1) == 1).all()
    rng = np.random.default_rng(11)
    prm = {**_skill_params(task, rng), "h": np.float64(-0.2)}
    without = {k: v for k, v in prm.items() if k != "h"}
    np.testing.assert_array_equal(task.logits({**prm, "h": np.float64(0.0)}, np), plain.logits(without, np))
    moved = task.logits({**prm, "h": prm["h"] + 1.0}, np) - task.logits(prm, np)
    np.testing.assert_allclose(moved, f * ((task.correct & reach[:, None]) | cut), atol=1e-12)
    moved_g = task.logits({**prm, "g": prm["g"] + 1.0}, np) - task.logits(prm, np)
    np.testing.assert_allclose(moved_g, np.where(task.correct & reach[:, None], 1.3, 0.0), atol=1e-12)
    step = 1e-6
    rate = lambda h: task.exact({**prm, "h": np.float64(h)}, np)["pass_rate"]  # noqa: E731
    fd = (rate(prm["h"] + step) - rate(prm["h"] - step)) / (2 * step)
    p = rate(prm["h"])
    pi = np.exp(task.logprob(prm, np.argmax(cut, axis=1)[:, None], np))[:, 0]
    np.testing.assert_allclose(fd[reach], f * p[reach] * (1 - p[reach]), rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(fd[~reach], -f * p[~reach] * pi[~reach], rtol=1e-5, atol=1e-10)
    G, N = 4, task.n_prompts
    actions, weights = rng.integers(0, 10, size=(N, G)), rng.standard_normal((N, G))
    surrogate = lambda prm_: float(np.sum(weights * task.logprob(prm_, actions, np)) / (G * N))  # noqa: E731
    fd_h = (surrogate({**prm, "h": prm["h"] + step}) - surrogate({**prm, "h": prm["h"] - step})) / (2 * step)
    assert task.score(prm, actions, weights, np)["h"] == pytest.approx(fd_h, rel=1e-6, abs=1e-9)
    assert float(task.geometry(prm, np)["shortcut"]) == pytest.approx(f * -0.2)


@pytest.mark.parametrize("advantage", ["grpo", "nsr"])
def test_the_learned_shortcuts_moments_are_a_misfiring_skills_and_match_sampled_groups(advantage):
    """direction_moments' "h": exactly the "g" rows of a task whose skill has scale f and misfire 1 (same reach,
    same shortcut, same policy), and against 4000 sampled groups a prompt every prompt's mean within 4 standard
    errors and its variance within 4 standard errors of the sample variance; an unreached prompt's mean gradient on
    h is below 0 where it has correct rollouts to weigh, a reached one's above."""
    f = 1.1
    kw = dict(sharpen_scale=0.7, reach_samples=2, **SMALL)
    task = make_task("sharpen", skill_scale=0.6, shortcut_scale=f, **kw)
    twin = make_task("sharpen", skill_scale=f, misfire=1.0, **kw)
    rng = np.random.default_rng(12)
    prm = {**_skill_params(task, rng), "h": np.float64(0.3)}
    # the twin at g = h, its per-prompt logits carrying the task's skill: the same logits, so the same policy
    twin_prm = {"s": prm["s"], "theta": prm["theta"] + 0.6 * prm["g"] * task.skilled(np, np.float64), "g": prm["h"]}
    np.testing.assert_allclose(twin.logits(twin_prm, np), task.logits(prm, np), atol=1e-12)
    mu, var = direction_moments(task, advantage, 4, prm)["h"]
    twin_mu, twin_var = direction_moments(twin, advantage, 4, twin_prm)["g"]
    np.testing.assert_allclose(mu, twin_mu, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(var, twin_var, rtol=1e-12, atol=1e-15)
    assert (mu[task.reach] > 0).all() and (mu[~task.reach] < 0).all()
    x = _sampled_group_gradients(task, prm, advantage, {}, 4, 4000, rng)["h"]
    se = x.std(axis=0, ddof=1) / np.sqrt(len(x)) + 1e-12
    assert np.all(np.abs(x.mean(0) - mu) < 4 * se)
    centred = x - x.mean(0)
    var_se = np.sqrt(np.maximum((centred ** 4).mean(0) - x.var(0) ** 2, 0.0) / len(x)) + 1e-12
    assert np.all(np.abs(x.var(0, ddof=1) - var) < 4 * var_se)


def test_the_mean_field_path_moves_the_learned_shortcut_and_numpy_and_jax_agree():
    """adam_path follows h as it follows s and g (its first step lr mu / (sqrt(mu^2 + var) + eps) from
    step_moments' "h"); the jax simulator equals the numpy reference with a learned shortcut."""
    task = make_task("sharpen", sharpen_scale=0.7, skill_scale=1.2, reach_samples=2, shortcut_scale=0.8,
                     tabular=False, **SMALL)
    mu, var = step_moments(task, "grpo", 4, 3)["h"]
    one = adam_path(task, "grpo", 4, 1, 0.05, 3, every=1)
    assert one["h"][1] == pytest.approx(0.05 * mu / (np.sqrt(mu * mu + var) + 1e-8), rel=1e-12) and mu != 0
    assert not adam_path(make_task("sharpen", skill_scale=1.2, reach_samples=2, tabular=False, **SMALL),
                         "grpo", 4, 1, 0.05, 3, every=1)["h"].any()
    tabular = make_task("sharpen", sharpen_scale=1.0, skill_scale=0.5, reach_samples=4, reach_draw="uniform",
                        shortcut_scale=0.7, tail_entropy=3.0, prompts_per_step=4, **SMALL)
    assert_jax_equals_numpy(tabular, SimConfig(advantage="grpo", G=4, steps=40, log_every=10, optimizer="adam",
                                               lr=0.1), 2, rtol=1e-5, atol=1e-5)
