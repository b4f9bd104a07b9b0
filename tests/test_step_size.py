"""Each advantage's step size in the trainer form against the simulator's (fadesim.theory.step_size): the rule for
PSR, NSR and GRPO derived by hand, the power Q_A against sampled groups, the trainer form's normaliser against a
sampled batch of nearly orthogonal scores, and the clock's invariances."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadesim.tasks import make_task
from fadesim.theory.mass_profile import profile
from fadesim.theory.step_size import advantage_power, direction_parts, noise_clock, step_rates, trainer_clock


def test_psr_and_nsr_by_hand():
    """PSR (A = 1 on a correct rollout, 0 else) and NSR (A = -1 on a wrong one): both move a prompt's correct logit by
    w(p) = p (1 - p); their powers are Q = E[k / G] = p and 1 - p; the logit's mean square E[g^2] is
    (1 - p)^2 E[k^2] / G^2 and p^2 E[(G - k)^2] / G^2 with E[k^2] = G p (1 - p) + G^2 p^2."""
    G, p = 6, np.array([0.05, 0.2, 0.5, 0.9])
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    gain = weights * (p * (1 - p)) ** 2  # pi p (1 - p) w(p)
    m2_psr = (1 - p) ** 2 * (p * (1 - p) / G + p ** 2)
    m2_nsr = p ** 2 * (p * (1 - p) / G + (1 - p) ** 2)
    for name, m2, q in (("psr", m2_psr, p), ("nsr", m2_nsr, 1 - p)):
        r = step_rates(name, G, p, weights)
        np.testing.assert_allclose(advantage_power(profile(name, G), p), q, rtol=1e-12)
        np.testing.assert_allclose(r.sgd, gain.sum(), rtol=1e-12)
        np.testing.assert_allclose(r.per_prompt_adam, (gain / np.sqrt(m2)).sum(), rtol=1e-12)
        np.testing.assert_allclose(r.shared_scalar_adam, gain.sum() / np.sqrt((weights * m2).sum()), rtol=1e-12)
        np.testing.assert_allclose(r.trainer, gain.sum() / np.sqrt((weights * q).sum()), rtol=1e-12)
    # on hard prompts the trainer runs NSR slower than PSR by sqrt(E p / E (1 - p)); per-prompt Adam runs it faster
    hard = np.array([0.05, 0.1, 0.15])
    psr, nsr = step_rates("psr", G, hard), step_rates("nsr", G, hard)
    np.testing.assert_allclose(nsr.trainer / psr.trainer, np.sqrt(hard.mean() / (1 - hard).mean()), rtol=1e-12)
    assert nsr.per_prompt_adam > psr.per_prompt_adam and nsr.trainer < 0.5 * psr.trainer


def test_grpo_power_by_hand():
    """GRPO with the unbiased std: a mixed group's advantages have mean square (G - 1) / G, a uniform group's are 0,
    so Q(p) = (G - 1) / G (1 - p^G - (1 - p)^G) (up to eps = 1e-6 in the denominator)."""
    G, p = 8, np.linspace(0.0, 1.0, 11)
    want = (G - 1) / G * (1 - p ** G - (1 - p) ** G)
    np.testing.assert_allclose(advantage_power(profile("grpo", G), p), want, rtol=1e-5, atol=1e-12)


@settings(max_examples=25)
@given(G=st.integers(2, 10), p=st.floats(0.02, 0.98), scale=st.floats(0.01, 100.0),
       name=st.sampled_from(["grpo", "psr", "nsr", "risk_sensitive", "focal"]))
def test_the_trainer_form_is_scale_free_and_sgd_is_not(G, p, scale, name):
    from fadesim.advantages.registry import get
    from fadesim.theory.signal import group_update

    fn = get(name)
    scaled = profile(lambda r, **kw: scale * np.asarray(fn(r, **kw)), G)
    plain = profile(name, G)
    q, q_scaled = advantage_power(plain, np.array([p])), advantage_power(scaled, np.array([p]))
    (w, _), (w_s, _) = group_update(plain, np.array([p])), group_update(scaled, np.array([p]))
    np.testing.assert_allclose(w_s, scale * w, rtol=1e-9, atol=1e-15)  # SGD's step scales with A
    np.testing.assert_allclose(w_s / np.sqrt(q_scaled), w / np.sqrt(q), rtol=1e-9, atol=1e-15)  # the trainer's: not


def test_the_power_against_sampled_groups():
    """Q_A(p) = E[(1/G) sum A_i^2] against 20000 sampled groups of the registry's own code, within 4 standard errors."""
    from fadesim.advantages.registry import get

    rng = np.random.default_rng(0)
    G, n = 8, 20000
    for name in ("grpo", "nsr", "risk_sensitive"):
        for p in (0.1, 0.6):
            rewards = (rng.random((n, G)) < p).astype(np.float64)
            per_group = np.mean(np.asarray(get(name)(rewards), dtype=np.float64) ** 2, axis=1)
            exact = float(advantage_power(profile(name, G), np.array([p]))[0])
            assert abs(per_group.mean() - exact) < 4 * per_group.std() / np.sqrt(n), (name, p)


def test_the_trainer_forms_normaliser_is_the_advantage_power_for_nearly_orthogonal_scores():
    """Fact 1 of the module docstring on a sampled batch: rollout scores drawn as independent Gaussian vectors in D
    dimensions (nearly orthogonal) give a per-weight mean square of g = (1/n) sum A_i s_i equal to Q / n (unit score
    variance), within 4 standard errors of its sampling spread over weights, for PSR and NSR on the same rewards."""
    rng = np.random.default_rng(1)
    n, D, G = 64, 20000, 8
    rewards = (rng.random((n // G, G)) < 0.2).astype(np.float64)
    from fadesim.advantages.registry import get

    scores = rng.standard_normal((n, D))
    for name in ("psr", "nsr"):
        A = np.asarray(get(name)(rewards), dtype=np.float64).reshape(-1)
        g = A @ scores / n
        q = np.mean(A ** 2)
        # g_w ~ N(0, q / n) per weight: mean of g_w^2 over D weights has sd sqrt(2 / D) q / n
        assert abs(np.mean(g ** 2) - q / n) < 4 * np.sqrt(2 / D) * q / n, name


def _task(prompts_per_step=1):
    return make_task("sharpen", n_prompts=24, n_answers=8, n_correct=2, difficulty="hard", skill_scale=0.3,
                     prompts_per_step=prompts_per_step, eval_prompts=8, seed=0)


def test_the_clock_by_hand_for_psr_against_nsr():
    """With one prompt a step the skill's step gradient has mean square d^2 mean_n m2_A(p_n) over the training
    prompts (step_moments at B = 1), so clock(PSR) / clock(NSR) (either against GRPO) is
    sqrt((mean m2_PSR / mean p) / (mean m2_NSR / mean (1 - p)))."""
    task = _task()
    p = np.asarray(task.exact(task.init_params(np, np.float64), np)["pass_rate"])[~np.asarray(task.evaluated())]
    G = 6
    m2_psr = np.mean((1 - p) ** 2 * (p * (1 - p) / G + p ** 2))
    m2_nsr = np.mean(p ** 2 * (p * (1 - p) / G + (1 - p) ** 2))
    want = np.sqrt((m2_psr / p.mean()) / (m2_nsr / (1 - p).mean()))
    got = trainer_clock(task, "psr", G) / trainer_clock(task, "nsr", G)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert trainer_clock(task, "nsr", G) < trainer_clock(task, "psr", G)  # hard prompts: NSR's power is off the skill


def test_the_clock_is_one_for_the_reference_and_names_bad_input():
    task = _task(prompts_per_step=0)
    assert trainer_clock(task, "grpo", 8) == pytest.approx(1.0, rel=1e-12)
    assert trainer_clock(task, "sign_scaled", 8, params={"balance": 0.0}) == pytest.approx(1.0, rel=1e-9)
    assert trainer_clock(task, "psr", 8, reference="psr") == pytest.approx(1.0, rel=1e-12)
    assert 0 < trainer_clock(task, "fade", 8) < 2  # a schedule reads the initial signals
    with pytest.raises(ValueError, match="defined for the sharpen task"):
        trainer_clock(make_task("bandit", n_prompts=4, n_answers=8, n_correct=2, seed=0), "grpo", 8)
    with pytest.raises(ValueError, match="pass rates must lie in"):
        step_rates("grpo", 8, np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="weights must be finite"):
        step_rates("grpo", 8, np.array([0.5, 0.2]), weights=np.array([1.0, -1.0]))


def test_the_sign_weighted_closed_forms_equal_the_enumeration():
    """derivations/step_size.py: w, Q and E[g^2] of A+ = alpha, A- = -beta in closed form (sympy) against the exact
    enumeration of PSR, NSR, REINFORCE +-1 and W-REINFORCE; NSR over PSR in a trainer: sqrt(m / (1 - m))."""
    import sympy as sp

    from derivations import step_size

    assert step_size.check() < 1e-12
    m = sp.symbols("m", positive=True)
    assert sp.simplify(step_size.trainer_ratio_nsr_over_psr() - sp.sqrt(m / (1 - m))) == 0


def test_the_noise_clock_by_hand_for_psr_against_nsr():
    """PSR and NSR have the same per-rollout signal on the skill, mu = d mean_n p_n (1 - p_n); their powers are
    Q = mean p and mean (1 - p); with one prompt a step the simulator's normalisers are d^2 mean m2 (as in the trainer
    clock's check). So, NSR the reference, clock(PSR) = sqrt(m2_PSR / m2_NSR) sqrt((mu^2 + x mean(1 - p)) /
    (mu^2 + x mean p)), x = rho / N: the trainer clock's ratio at N -> 0 and sqrt(m2_PSR / m2_NSR) at N -> infinity."""
    task = _task()
    p = np.asarray(task.exact(task.init_params(np, np.float64), np)["pass_rate"])[~np.asarray(task.evaluated())]
    G, d = 6, 0.3
    m2_psr = np.mean((1 - p) ** 2 * (p * (1 - p) / G + p ** 2))
    m2_nsr = np.mean(p ** 2 * (p * (1 - p) / G + (1 - p) ** 2))
    mu = d * np.mean(p * (1 - p))
    for rho, N in ((1.0, 64), (0.5, 8192), (3.0, 1024), (1.0, 1e-9), (1.0, 1e12)):
        x = rho / N
        want = np.sqrt(m2_psr / m2_nsr) * np.sqrt((mu ** 2 + x * (1 - p).mean()) / (mu ** 2 + x * p.mean()))
        np.testing.assert_allclose(noise_clock(task, "psr", G, N, rho, reference="nsr"), want, rtol=1e-9)
    parts = direction_parts(task, "psr", G)
    np.testing.assert_allclose([parts.mu, parts.power, parts.advantage_power], [mu, d * d * m2_psr, p.mean()],
                               rtol=1e-10)


def test_the_noise_clock_runs_from_the_trainer_clock_to_the_signal_limit():
    """N -> 0 (None) is trainer_clock exactly; N -> infinity is sqrt(P_A / P_R) |mu_R / mu_A|; in between the clock is
    monotone in N (a ratio of two lines in rho / N); 1 for the reference and for a positive multiple of it at every
    N; bad batches and noise scales are refused by name."""
    task = _task()
    for name in ("nsr", "psr", "risk_sensitive"):
        a, r = direction_parts(task, name, 8), direction_parts(task, "grpo", 8)
        assert noise_clock(task, name, 8, None) == trainer_clock(task, name, 8)
        np.testing.assert_allclose(noise_clock(task, name, 8, 1e15), np.sqrt(a.power / r.power) * abs(r.mu / a.mu),
                                   rtol=1e-9)
        path = np.array([noise_clock(task, name, 8, n) for n in (1, 16, 256, 4096, 65536)])
        steps = np.diff(path)
        assert np.all(steps >= -1e-12) or np.all(steps <= 1e-12), (name, path)
    for n in (None, 64, 8192):
        assert noise_clock(task, "grpo", 8, n) == pytest.approx(1.0, rel=1e-12)
        assert noise_clock(task, "sign_scaled", 8, n, params={"balance": 0.0}) == pytest.approx(1.0, rel=1e-9)
    for bad, words in (({"rollouts_per_step": 0}, "rollouts_per_step must be a positive number"),
                       ({"rollouts_per_step": float("nan")}, "rollouts_per_step must be a positive number"),
                       ({"noise_scale": -1.0}, "noise_scale must be a positive number"),
                       ({"noise_scale": True}, "noise_scale must be a positive number")):
        kw = {"rollouts_per_step": 64, "noise_scale": 1.0, **bad}
        with pytest.raises(ValueError, match=words):
            noise_clock(task, "nsr", 8, **kw)


def test_the_normaliser_with_signal_and_a_finite_batch():
    """The noise clock's premise on sampled batches: each rollout's score on a weight is its skill projection
    (r - p) plus independent noise of variance sigma^2, so the batch mean g_w = (1/N) sum A_i s_iw has
    E[g_w^2] = mu^2 + (sigma^2 Q + V) / N, with mu = E[A (r - p)], Q = E[A^2] and V = Var(A (r - p)) per rollout (a
    group's rollouts share their advantage's baseline, so V is taken over groups: the variance of a group's sum over
    G), each enumerated exactly over k ~ Binomial(G, p); within 4 standard errors, for GRPO and NSR at two batches."""
    from scipy.stats import binom

    from fadesim.advantages.registry import get

    rng = np.random.default_rng(2)
    G, p, sigma, batches, D = 8, 0.3, 3.0, 300, 64
    weight = binom.pmf(np.arange(G + 1), G, p)
    for name in ("grpo", "nsr"):
        fn = get(name)
        groups = np.array([[1.0] * k + [0.0] * (G - k) for k in range(G + 1)])  # a group with k correct
        a = np.asarray(fn(groups), dtype=np.float64)
        proj = (a * (groups - p)).sum(axis=1)  # the group's sum of A_i (r_i - p)
        mu = weight @ proj / G
        V = (weight @ proj ** 2 - (weight @ proj) ** 2) / G
        Q = weight @ np.mean(a ** 2, axis=1)
        for n_groups in (4, 32):
            N = n_groups * G
            r = (rng.random((batches, n_groups, G)) < p).astype(np.float64)
            A = np.asarray(fn(r.reshape(-1, G)), dtype=np.float64).reshape(batches, N)
            score = (r.reshape(batches, N) - p)[:, :, None] + sigma * rng.standard_normal((batches, N, D))
            g = np.einsum("bn,bnw->bw", A, score) / N
            sq = (g ** 2).mean(axis=1)  # each batch's mean over weights
            want = mu ** 2 + (sigma ** 2 * Q + V) / N
            assert abs(sq.mean() - want) < 4 * sq.std() / np.sqrt(batches), (name, N, sq.mean(), want)


def test_the_trainer_clock_reads_each_method_at_its_own_step(tmp_path):
    """The protocol under clock 'trainer': the reference at the matched length, every other method at length x its
    trainer_clock on the calibrated task (and so NSR, whose power lies off the skill on hard prompts, earlier than
    PSR); the first-order engine reads at the same steps; the settings it cannot serve are refused by name."""
    import dataclasses

    from fadesim.lab.literature import ProtocolSettings, calibrated_task, load_curves, load_methods, run_setting

    (tmp_path / "c.csv").write_text("setting,source,method,k,pass_at_k\n" + "".join(
        f"s,hand,{m},{k},{v}\n" for m, vals in [("base", (0.15, 0.4, 0.7)), ("GRPO", (0.3, 0.5, 0.72)),
                                               ("NSR", (0.25, 0.5, 0.75)), ("PSR", (0.3, 0.45, 0.65))]
        for k, v in zip((1, 4, 32), vals)))
    (tmp_path / "m.csv").write_text("method,advantage,params,steps_scale\nGRPO,grpo,{},1\nNSR,nsr,{},1\nPSR,psr,{},1\n")
    curves, methods = load_curves(tmp_path / "c.csv"), load_methods(tmp_path / "m.csv")
    s = ProtocolSettings(task="sharpen", optimizer="adam", n_prompts=32, n_answers=16, n_correct=2, skill_scale=0.3,
                         prompts_per_step=1, eval_prompts=16, eval_split="stratified", seeds=4, max_steps=60,
                         log_every=20, readout="interpolated", clock="trainer")
    res = run_setting("s", curves, methods, s)
    task, _ = calibrated_task(s, {1: 0.15, 4: 0.4, 32: 0.7})
    length = res["length"]
    for name, advantage in (("NSR", "nsr"), ("PSR", "psr")):
        assert res["read_at"][name] == pytest.approx(min(length * trainer_clock(task, advantage, s.G), 60.0))
    assert res["read_at"]["GRPO"] == pytest.approx(length) and res["read_at"]["NSR"] < res["read_at"]["PSR"]
    first = run_setting("s", curves, methods, dataclasses.replace(s, engine="first_order"))
    assert first["read_at"]["NSR"] == pytest.approx(first["length"] * trainer_clock(task, "nsr", s.G))
    for bad, words in (({"optimizer": "adam_shared"}, "optimizer 'adam_shared'"), ({"match": "pass@1"}, "match"),
                       ({"clock": "wall"}, "clock must be one of")):
        with pytest.raises(ValueError, match=words):
            dataclasses.replace(s, **bad)


def test_the_noise_clock_reads_each_method_at_its_clock_for_the_settings_batch(tmp_path):
    """The protocol under clock 'noise': with the setting's batch known (``training``), NSR is read at length x
    noise_clock at that batch; with none (a curves file whose setting has no training row), every method at the
    matched length itself, and the result says the batch was unknown."""
    import dataclasses

    from fadesim.lab.literature import ProtocolSettings, calibrated_task, load_curves, load_methods, run_setting

    (tmp_path / "c.csv").write_text("setting,source,method,k,pass_at_k\n" + "".join(
        f"s,hand,{m},{k},{v}\n" for m, vals in [("base", (0.15, 0.4, 0.7)), ("GRPO", (0.3, 0.5, 0.72)),
                                               ("NSR", (0.25, 0.5, 0.75))] for k, v in zip((1, 4, 32), vals)))
    (tmp_path / "m.csv").write_text("method,advantage,params,steps_scale\nGRPO,grpo,{},1\nNSR,nsr,{},1\n")
    curves, methods = load_curves(tmp_path / "c.csv"), load_methods(tmp_path / "m.csv")
    s = ProtocolSettings(task="sharpen", optimizer="adam", n_prompts=32, n_answers=16, n_correct=2, skill_scale=0.3,
                         prompts_per_step=1, eval_prompts=16, eval_split="stratified", seeds=4, max_steps=60,
                         log_every=20, readout="interpolated", clock="noise", noise_scale=2.0)
    task, _ = calibrated_task(s, {1: 0.15, 4: 0.4, 32: 0.7})
    clock = noise_clock(task, "nsr", s.G, 64, 2.0)
    assert clock != pytest.approx(1.0, abs=0.01) and clock != pytest.approx(noise_clock(task, "nsr", s.G, 64), abs=1e-3)
    known = run_setting("s", curves, methods, dataclasses.replace(s, engine="first_order"), {"s": 64})
    assert known["rollouts_per_step"] == 64 and known["clocks"]["NSR"] == pytest.approx(clock, rel=1e-12)
    assert known["read_at"]["NSR"] == pytest.approx(min(known["length"] * clock, 60.0))
    unknown = run_setting("s", curves, methods, dataclasses.replace(s, engine="first_order"), {"other": 64})
    assert unknown["rollouts_per_step"] is None and unknown["clocks"] == {"GRPO": 1.0, "NSR": 1.0}
    assert unknown["read_at"]["NSR"] == pytest.approx(unknown["length"])
    simulated = run_setting("s", curves, methods, s, {"s": 64})
    assert simulated["read_at"]["NSR"] == pytest.approx(min(simulated["length"] * clock, 60.0))
    with pytest.raises(ValueError, match="noise_scale must be a positive number"):
        dataclasses.replace(s, noise_scale=0.0)
    with pytest.raises(ValueError, match="the noise clock compares per-entry Adam"):
        dataclasses.replace(s, optimizer="adam_shared")


def test_a_trainer_clock_run_writes_files_of_its_own():
    """experiments/literature.py's file names carry the clock, the answer scale and adam_tied's tie, so a trainer-clock
    run, one with shared answers or one at another tie never overwrites the default's or each other's."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import literature

    from fadesim.lab.literature import CHOSEN, ProtocolSettings

    simulator = literature._sharpen_design(ProtocolSettings(**{**CHOSEN, "clock": "simulator"}))
    assert literature._sharpen_design(ProtocolSettings(**{**CHOSEN, "clock": "trainer"})) == simulator + "_trainerclock"
    assert literature._sharpen_design(ProtocolSettings(**CHOSEN)) == simulator + "_noiseclock"  # the default's
    assert literature._sharpen_design(ProtocolSettings(**{**CHOSEN, "noise_scale": 4.0})) == simulator + "_noiseclock4"
    # and the shared answer biases theirs, so runs at different e never overwrite each other or the default's
    assert simulator == "_b1_eval128s_d0.3_reach256_misfire1fallback"
    shared = literature._sharpen_design(ProtocolSettings(**{**CHOSEN, "answer_scale": 0.3, "clock": "simulator"}))
    assert shared == "_b1_eval128s_d0.3_e0.3_reach256_misfire1fallback"
    # the whole stem: the default's committed name, and adam_tied's tie in it (runs at two ties are two files; no
    # clock applies to adam_tied)
    assert literature.run_stem(literature.Settings(**CHOSEN), "full") == (
        "literature_sharpen_c1_b1_eval128s_d0.3_reach256_misfire1fallback_noiseclock_interp_heldmatch_adam_full")
    assert literature.run_stem(literature.Settings(**{**CHOSEN, "family": "beta+unsolved"}), "full") == (
        "literature_sharpen_c1_b1_eval128s_d0.3_reach256_misfire1fallback_noiseclock_interp_heldmatch_fitbeta_unsolved"
        "_adam_full")
    # without the misfire (the default until the thirteenth session) and matched on the tuning seeds as well (until
    # the tenth): the committed files of those families keep their names
    earlier = {**CHOSEN, "misfire": 0.0, "misfire_fallback": False}
    assert literature.run_stem(literature.Settings(**earlier), "full") == (
        "literature_sharpen_c1_b1_eval128s_d0.3_reach256_noiseclock_interp_heldmatch_adam_full")
    assert literature.run_stem(literature.Settings(**{**earlier, "match_seeds": "tuning"}), "full") == (
        "literature_sharpen_c1_b1_eval128s_d0.3_reach256_noiseclock_interp_adam_full")
    tied = [literature.run_stem(literature.Settings(**{**CHOSEN, "optimizer": "adam_tied", "tie": t,
                                                       "clock": "simulator"}, tag="smollm2"), "full")
            for t in (0.1, 0.3)]
    assert tied == [f"literature_sharpen_c1_b1_eval128s_d0.3_reach256_misfire1fallback_interp_heldmatch_adam_tied_tie{t}"
                    "_smollm2_full"
                    for t in ("0.1", "0.3")]


def test_fadesim_predict_reads_each_advantage_at_its_trainer_clock():
    """predict() (``fadesim predict --clock trainer``): every advantage read at the given length x its clock, GRPO at
    the length itself."""
    from fadesim.lab.literature import ProtocolSettings, calibrated_task, predict

    curve = {1: 0.2, 8: 0.6, 64: 0.85}
    s = ProtocolSettings(task="sharpen", optimizer="adam", n_prompts=32, n_answers=16, n_correct=2, skill_scale=0.3,
                         prompts_per_step=1, eval_prompts=16, eval_split="stratified", seeds=4, max_steps=40,
                         log_every=10, readout="interpolated", clock="trainer")
    out = predict(curve, [("grpo", "grpo", {}), ("nsr", "nsr", {})], s, steps=30.0)
    task, _ = calibrated_task(s, curve)
    assert out["read_at"]["grpo"] == pytest.approx(30.0)
    clock = trainer_clock(task, "nsr", s.G)
    assert clock < 1 and out["read_at"]["nsr"] == pytest.approx(30.0 * clock)
    assert out["trajectories"].groupby("label").step.max()["nsr"] <= out["read_at"]["nsr"]
    # task_draws = 2: each draw predicted on its own (the first is the run above), every number their mean
    other = predict(curve, [("grpo", "grpo", {}), ("nsr", "nsr", {})], dataclasses.replace(s, task_seed=1), steps=30.0)
    both = predict(curve, [("grpo", "grpo", {}), ("nsr", "nsr", {})], dataclasses.replace(s, task_draws=2), steps=30.0)
    tables = [t.set_index(["label", "k"]) for t in (out["table"], other["table"], both["table"])]
    np.testing.assert_allclose(tables[2].pass_at_k, (tables[0].pass_at_k + tables[1].pass_at_k) / 2, atol=1e-12)
    np.testing.assert_allclose(tables[2].ci95, np.hypot(tables[0].ci95, tables[1].ci95) / 2, atol=1e-12)
    assert both["read_at"]["nsr"] == pytest.approx((out["read_at"]["nsr"] + other["read_at"]["nsr"]) / 2)
    assert both["draws"].task_seed.tolist() == [0, 1] and both["dropped"] == ""
