"""Closed forms from derivations/ against the package's own code, Monte-Carlo, and finite differences."""

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

import fadesim
from derivations import difficulty_tradeoff, entropy_law, make_results, sharpen_crossing, sign_axis_second_order
from derivations.common import p as p_sym
from fadesim.theory.entropy import entropy, expected_entropy_drift, sampled_step, sampled_step_entropy_change
from fadesim.theory.signal import signal_under_beta

ROOT = Path(__file__).resolve().parents[1]
# one xdist worker runs this module, so the derivations' cached symbolic results (seconds of sympy each, read by
# RESULTS.md, the scripts' mains and the tests below) are computed once
pytestmark = pytest.mark.xdist_group("derivations")
DERIVATIONS = make_results.all_derivations()
IDS = [d.label for d in DERIVATIONS]


def _profile(d, G):
    return fadesim.profile(d.name, G, signals=d.signals,
                           **{k: v for k, v in d.params.items() if k != "eta"})


def _valid(d, G):
    K = d.params.get("K")
    return K is None or (G >= K if d.name == "pass_at_k" else G > K)


@pytest.mark.parametrize("d", DERIVATIONS, ids=IDS)
@pytest.mark.parametrize("G", [2, 3, 4, 8, 16, 64])
def test_closed_form_equals_the_package_code(d, G):
    if not _valid(d, G):
        pytest.skip(f"{d.label} needs more rollouts than G = {G}")
    prof = _profile(d, G)
    a_pos, a_neg = d.tables(G)
    np.testing.assert_allclose(a_pos, prof.a_pos, rtol=1e-10, atol=1e-10, equal_nan=True)
    np.testing.assert_allclose(a_neg, prof.a_neg, rtol=1e-10, atol=1e-10, equal_nan=True)
    ps = np.linspace(0, 1, 41)
    pos, neg = d.expected(ps, G)
    np.testing.assert_allclose(pos, prof.expected_positive_mass(ps), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(neg, prof.expected_negative_mass(ps), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("d", DERIVATIONS, ids=IDS)
@pytest.mark.parametrize("pass_rate", [0.2, 0.7])
def test_closed_form_equals_monte_carlo(d, pass_rate):
    G, N = 8, 20000
    if not _valid(d, G):
        pytest.skip("group too small")
    rng = np.random.default_rng(0)
    r = (rng.random((N, G)) < pass_rate).astype(float)
    kw = {"signals": d.signals} if d.signals else {}
    A = fadesim.get(d.name, **{k: v for k, v in d.params.items() if k != "eta"})(r, **kw)
    dec = fadesim.decompose(A, r)
    pos_k, neg_k = d.masses(G)
    w = stats.binom.pmf(np.arange(G + 1), G, pass_rate)
    for sampled, table in ((dec.positive_mass, pos_k), (dec.negative_mass, neg_k)):
        exact = w @ table
        se = np.sqrt(max(w @ table**2 - exact**2, 0.0) / N)
        assert abs(sampled.mean() - exact) <= 4 * se + 1e-12


@pytest.mark.parametrize("d", DERIVATIONS, ids=IDS)
def test_large_group_limit(d):
    """Mass per rollout at G = 4096 is within 3% (relative, or 3e-3 absolute) of the symbolic G -> oo limit."""
    G = 4096
    # deferred limits (seconds of sympy, not paid at import) resolve to sympy expressions, once
    assert isinstance(d.limit_pos, sp.Expr) and d.limit_pos is d.limit_pos and d.limit_neg is d.limit_neg
    for p in (0.1, 0.3, 0.6, 0.85):
        pos, neg = d.expected(p, G)
        lim_pos = float(d.limit_pos.subs(dict(d.substitutions)).subs(p_sym, p))
        lim_neg = float(d.limit_neg.subs(dict(d.substitutions)).subs(p_sym, p))
        assert abs(pos / G - lim_pos) <= 0.03 * abs(lim_pos) + 3e-3, (p, pos / G, lim_pos)
        assert abs(neg / G - lim_neg) <= 0.03 * abs(lim_neg) + 3e-3, (p, neg / G, lim_neg)


def test_known_closed_forms():
    G, p = sp.symbols("G p", positive=True)
    from derivations.group_relative import CLOSED_FORMS

    assert sp.simplify(CLOSED_FORMS["dr_grpo"] - (G - 1) * p * (1 - p)) == 0
    assert sp.simplify(CLOSED_FORMS["rloo"] - G * p * (1 - p)) == 0
    grpo = next(d for d in DERIVATIONS if d.name == "grpo")
    assert sp.simplify(grpo.limit_pos - sp.sqrt(p * (1 - p))) == 0
    from derivations.difficulty import focal_peak, gamma

    assert sp.simplify(focal_peak - 1 / (2 * gamma + 2)) == 0


# ----------------------------------------------------------------------------- entropy law
def test_entropy_identities_hold_symbolically():
    assert all(residual == 0 for residual in entropy_law.check_identities().values())


@settings(max_examples=300)
@given(data=st.data())
def test_first_order_entropy_change_matches_finite_difference(data):
    K = data.draw(st.integers(2, 10))
    logits = np.array(data.draw(st.lists(st.floats(-4, 4), min_size=K, max_size=K)))
    G = data.draw(st.integers(1, 12))
    actions = np.array(data.draw(st.lists(st.integers(0, K - 1), min_size=G, max_size=G)))
    adv = np.array(data.draw(st.lists(st.floats(-3, 3), min_size=G, max_size=G)))
    g = sampled_step(logits, actions, adv)
    predicted = sampled_step_entropy_change(logits, actions, adv, lr=1.0)
    assume(abs(predicted) > 1e-4)
    h = 1e-5  # central difference: truncation O(h^2), rounding O(1e-16 / h)
    measured = (entropy(logits + h * g) - entropy(logits - h * g)) / (2 * h)
    assert abs(measured - predicted) <= 1e-6 * abs(predicted)


@settings(max_examples=200)
@given(logits=st.lists(st.floats(-4, 4), min_size=2, max_size=10), G=st.integers(2, 16))
def test_entropy_sign_pattern(logits, G):
    """Positive mass on the (correct) mode lowers entropy; negative mass on a (wrong) mode raises it."""
    logits = np.array(logits)
    mode = int(np.argmax(logits))
    assume(np.sort(logits)[-1] - np.sort(logits)[-2] > 1e-3 and np.ptp(logits) > 0.1)
    only_mode = np.zeros_like(logits, dtype=bool)
    only_mode[mode] = True
    assert sampled_step_entropy_change(logits, np.array([mode]), np.array([1.0]), 1.0) < 0
    assert sampled_step_entropy_change(logits, np.array([mode]), np.array([-1.0]), 1.0) > 0
    assert expected_entropy_drift(fadesim.profile("psr", G), logits, only_mode).total < 0
    assert expected_entropy_drift(fadesim.profile("nsr", G), logits, ~only_mode).total > 0


@pytest.mark.parametrize("name,params", [("grpo", {}), ("w_reinforce", {"lam": 0.1}), ("focal", {"gamma": 2.0}),
                                         ("sign_balanced", {"balance": 0.5})])
def test_expected_entropy_drift_matches_sampled_batches(name, params):
    from fadesim.theory.entropy import EXAMPLE_CORRECT as correct, EXAMPLE_LOGITS as logits

    G, N = 8, 20000
    drift = expected_entropy_drift(fadesim.profile(name, G, **params), logits, correct)
    rng = np.random.default_rng(1)
    pi = np.exp(logits) / np.exp(logits).sum()
    actions = rng.choice(len(pi), size=(N, G), p=pi)
    rewards = correct[actions].astype(float)
    A = fadesim.get(name, **params)(rewards)
    from fadesim.theory.entropy import entropy_gradient_weights

    w, _ = entropy_gradient_weights(logits)
    per_batch = -(A * w[actions]).mean(axis=1)
    pos_part = -(np.where(A > 0, A, 0) * w[actions]).mean(axis=1)
    for sampled, exact in ((per_batch, drift.total), (pos_part, drift.from_positive)):
        se = sampled.std(ddof=1) / np.sqrt(N)
        assert abs(sampled.mean() - exact) <= 4 * se


# ----------------------------------------------------------------------------- difficulty trade-off
@pytest.mark.parametrize("gamma", [0.0, 1.0, 3.0])
def test_difficulty_curve_matches_simulation(gamma):
    G, a, b, N = 16, 0.8, 0.8, 60000
    s = signal_under_beta(fadesim.profile("focal", G, gamma=gamma), a, b)
    rng = np.random.default_rng(2)
    p = rng.beta(a, b, size=(N, 1))
    r = (rng.random((N, G)) < p).astype(float)
    A = fadesim.get("focal", gamma=gamma)(r)
    g = (A * (r - p)).mean(axis=1)  # two-answer abstraction: d log pi / d theta = r - p
    hard = g * (p[:, 0] < 0.25)
    for sampled, exact in ((g, s.signal), (hard, s.hard_signal)):
        se = sampled.std(ddof=1) / np.sqrt(N)
        assert abs(sampled.mean() - exact) <= 4 * se
    assert abs(g.std() - s.noise) <= 0.02 * s.noise


def test_hard_focus_sharpens_signal_but_costs_sample_size():
    curve = difficulty_tradeoff.curve()
    shares = [s.hard_share for _, s in curve]
    ess = [s.ess_fraction for _, s in curve]
    assert all(np.diff(shares) > 0) and all(np.diff(ess) < 0)


# ----------------------------------------------------------------------------- scripts and RESULTS.md
def test_results_md_is_up_to_date():
    assert (ROOT / "derivations" / "RESULTS.md").read_text() == make_results.render(), \
        "derivations/RESULTS.md is stale: run python derivations/make_results.py"


def test_second_order_moments_and_hessians_hold_symbolically():
    moments = sign_axis_second_order.moment_residuals()
    assert len(moments) == 4 and all(r == 0 for pair in moments.values() for r in pair)
    hessians = sign_axis_second_order.hessian_residuals()
    assert set(hessians) == {"entropy", "correct_entropy", "logit_norm_sq", "logit_norm", "pass_rate"}
    assert all(r == 0 for pair in hessians.values() for r in pair)


def test_package_drift_equals_the_lr_derivatives_of_the_enumerated_expectation():
    residuals = sign_axis_second_order.package_residuals()
    assert len(residuals) == len(sign_axis_second_order.CHECK_ADVANTAGES) * 6
    assert max(max(pair) for pair in residuals.values()) < 1e-12


def test_the_sharpening_drift_holds_symbolically():
    """fadesim.theory.crossing's closed forms: the score and dp/ds in symbolic logits, E[g_s] by enumerating every
    group (G = 2, 3; |C| = 1, 2) against a symbolic advantage table, and omega = alpha for affine advantages."""
    assert all(r == 0 for r in sharpen_crossing.score_residuals())
    residuals = sharpen_crossing.drift_residuals()
    assert len(residuals) == 4 and all(r == 0 for r in residuals.values())
    assert sharpen_crossing.affine_weight_residual() == 0


def test_the_skills_misfire_moments_hold_symbolically():
    """fadesim.theory.crossing._skill_rows: the misfire's group gradient on g, its mean and second moment by
    enumerating every group of G = 2, 3 (a correct answer, the shortcut, another wrong one) against the closed forms."""
    for G in sharpen_crossing.GROUP_SIZES:
        assert sharpen_crossing.misfire_residuals(G) == (0, 0), G


@pytest.mark.parametrize("script", ["group_relative", "sign_weighted", "pass_at_k", "difficulty", "fade",
                                    "entropy_law", "difficulty_tradeoff", "sign_axis_second_order",
                                    "sharpen_crossing"])
def test_scripts_print_their_results(script, capsys):
    """Each script's main prints its results (in this process: sympy is imported once)."""
    importlib.import_module(f"derivations.{script}").main()
    assert len(capsys.readouterr().out.splitlines()) >= 2


def test_a_script_runs_standalone():
    """``python derivations/<script>.py`` from any directory (each script puts the repository on sys.path)."""
    out = subprocess.run([sys.executable, str(ROOT / "derivations" / "group_relative.py")], capture_output=True,
                         text=True, timeout=300, check=True, cwd=ROOT / "derivations").stdout
    assert len(out.splitlines()) >= 2
