"""theory.profile: exact expectations against Monte-Carlo decomposition of sampled groups."""

import zlib

import numpy as np
import pytest

import fadesim
from fadesim.theory import beta_binomial_weights

SIGNALS = {"entropy": 0.6, "initial_entropy": 1.0}
N_GROUPS = 6000


def _setup(name, G):
    info = fadesim.info(name)
    params = {"K": min(4, G - 1)} if "K" in info.params else {}
    extra = {}
    if info.needs_signals:
        extra["signals"] = SIGNALS
    return params, extra


def _logprobs_for(rewards):
    # a deterministic function of the reward (correct rollouts are more likely), so the rank pattern of
    # a sampled group is the canonical group's pattern up to permutation; the profile gets the same table
    return np.where(rewards > 0.5, -1.0, -2.0)


@pytest.mark.parametrize("name", fadesim.names())
@pytest.mark.parametrize("G", [4, 16])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9])
def test_profile_matches_monte_carlo(name, G, p):
    params, extra = _setup(name, G)
    canon = fadesim.theory.canonical_groups(G)
    lp = _logprobs_for(canon) if fadesim.info(name).needs_logprobs else None
    prof = fadesim.profile(name, G, logprobs=lp, **params, **extra)
    # a seed fixed across processes (Python's hash() of a str is salted per process, so it made this
    # test draw new groups on every run and fail at random on a >4-SE draw)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{G}/{p}".encode()))
    r = (rng.random((N_GROUPS, G)) < p).astype(float)
    kw = dict(extra)
    if lp is not None:
        kw["logprobs"] = _logprobs_for(r)
    d = fadesim.decompose(fadesim.get(name, **params)(r, **kw), r)
    w = fadesim.theory.binomial_weights(p, G)
    for sampled, table in [(d.positive_mass, prof.pos_mass), (d.negative_mass, prof.neg_mass)]:
        exact = w @ table
        np.testing.assert_allclose(exact, prof.expected_positive_mass(p) if table is prof.pos_mass
                                   else prof.expected_negative_mass(p), rtol=1e-12)
        # the exact standard error (a sample SD is 0 when rare k never occur in the sample)
        se = np.sqrt(max(w @ table**2 - exact**2, 0.0) / N_GROUPS)
        assert abs(sampled.mean() - exact) <= 4 * se + 1e-12, (sampled.mean(), exact, se)
    # ESS per group: the ratio estimator (mean m)^2 / mean(m^2). Its delta-method standard error from the
    # exact moments E[m^j] = w @ t^j of the per-k mass table t (as above, a sample covariance understates it
    # when rare k are missing from the sample)
    t = prof.pos_mass + prof.neg_mass
    mu1, mu2, mu3, mu4 = (w @ t**j for j in (1, 2, 3, 4))
    if mu2 > 0:
        grad = np.array([2 * mu1 / mu2, -mu1 * mu1 / mu2**2])
        cov = np.array([[mu2 - mu1**2, mu3 - mu1 * mu2], [mu3 - mu1 * mu2, mu4 - mu2**2]]) / N_GROUPS
        se = float(np.sqrt(max(grad @ cov @ grad, 0.0)))
        assert abs(float(d.ess) / N_GROUPS - prof.ess_fraction(p)) <= 4 * se + 1e-9


def test_profile_under_beta_matches_sampling():
    G, a, b = 8, 0.7, 1.8
    prof = fadesim.profile("grpo", G)
    rng = np.random.default_rng(0)
    p = rng.beta(a, b, size=(40000, 1))
    r = (rng.random((40000, G)) < p).astype(float)
    d = fadesim.decompose(fadesim.get("grpo")(r), r)
    s = prof.under_beta(a, b)
    se = d.positive_mass.std() / np.sqrt(len(r))
    assert abs(d.positive_mass.mean() - s.positive_mass) < 4 * se
    m = d.positive_mass + d.negative_mass
    se_h = np.std(m * (1 - d.pass_rate)) / np.sqrt(len(r)) / m.mean()
    assert abs(float(d.hardness) - s.hardness) < 4 * se_h + 1e-3 * s.hardness  # ratio estimator bias is O(1/N)


def test_beta_binomial_is_a_pmf_and_matches_scipy():
    from scipy import stats

    w = beta_binomial_weights(0.5, 2.0, 12)
    np.testing.assert_allclose(w, stats.betabinom.pmf(np.arange(13), 12, 0.5, 2.0), rtol=1e-12)


def test_profile_tables_and_symmetry():
    prof = fadesim.profile("grpo", 6)
    assert np.isnan(prof.a_pos[0]) and np.isnan(prof.a_neg[6])
    assert prof.symmetric
    np.testing.assert_allclose(prof.pos_mass, prof.neg_mass, atol=1e-12)
    assert fadesim.profile("focal", 16, gamma=4.0).peak() < fadesim.profile("grpo", 16).peak()
    assert fadesim.profile("grpo", 16).peak() == pytest.approx(0.5, abs=1e-3)


def test_profile_accepts_a_user_function():
    def doubled(rewards, *, mask=None, signals=None, logprobs=None):
        return 2 * fadesim.get("dr_grpo")(rewards, mask=mask)

    prof = fadesim.profile(doubled, 8)
    np.testing.assert_allclose(prof.pos_mass, 2 * fadesim.profile("dr_grpo", 8).pos_mass)
