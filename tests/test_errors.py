"""Bad input gets a clear error naming the problem."""

import numpy as np
import pytest

import fadesim

R = np.array([[1.0, 0.0, 1.0, 0.0]])


@pytest.mark.parametrize("name", fadesim.names())
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rewards(name, bad):
    r = np.array([[1.0, 0.0, bad, 0.0, 1.0, 0.0]])
    kw = _required(name, r)
    with pytest.raises(ValueError, match=rf"{name}: rewards contain 1 NaN or inf"):
        fadesim.get(name)(r, **kw)


def _required(name, r):
    kw = {}
    if fadesim.info(name).needs_logprobs:
        kw["logprobs"] = np.zeros_like(r)
    if fadesim.info(name).needs_signals:
        kw["signals"] = {"entropy": 1.0, "initial_entropy": 1.0}
    return kw


@pytest.mark.parametrize("name", fadesim.names())
def test_zero_dim_and_mask_shape(name):
    kw = _required(name, np.zeros((1, 6)))
    with pytest.raises(ValueError, match="0-d array"):
        fadesim.get(name)(np.float64(1.0), **{k: v for k, v in kw.items() if k == "signals"})
    with pytest.raises(ValueError, match=r"mask shape \(1, 5\) does not match rewards shape \(1, 6\)"):
        fadesim.get(name)(np.zeros((1, 6)), mask=np.ones((1, 5), dtype=bool), **kw)
    with pytest.raises(ValueError, match="mask must be boolean"):
        fadesim.get(name)(np.zeros((1, 6)), mask=np.ones((1, 6)), **kw)


def test_masked_nan_is_allowed():
    r = np.array([[1.0, 0.0, np.nan]])
    out = fadesim.get("grpo")(r, mask=np.array([[True, True, False]]))
    a = 0.5 / (np.sqrt(0.5) + 1e-6)  # centred +-0.5 over the unbiased std sqrt(0.5)
    np.testing.assert_allclose(out, [[a, -a, 0.0]], rtol=1e-12)


def test_unknown_name_and_parameter():
    with pytest.raises(KeyError, match="unknown advantage 'gpro'; known advantages: .*grpo"):
        fadesim.get("gpro")
    with pytest.raises(ValueError, match=r"advantage 'grpo' has no parameter\(s\) \['gamma'\]"):
        fadesim.get("grpo", gamma=2.0)


@pytest.mark.parametrize("name", [n for n in fadesim.names() if fadesim.info(n).min_group_size >= 2])
def test_group_of_one_where_undefined(name):
    kw = _required(name, np.zeros((3, 1)))
    with pytest.raises(ValueError, match=rf"{name}: group size G = 1 is too small"):
        fadesim.get(name)(np.zeros((3, 1)), **kw)


@pytest.mark.parametrize("name", ["reinforce", "psr", "nsr", "w_reinforce"])
def test_group_of_one_is_fine_without_baseline(name):
    assert fadesim.get(name)(np.array([[1.0], [0.0]])).shape == (2, 1)


def test_missing_logprobs_and_signals():
    with pytest.raises(ValueError, match="unlikeliness: this advantage needs logprobs"):
        fadesim.get("unlikeliness")(R)
    with pytest.raises(ValueError, match=r"logprobs shape \(1, 3\) does not match"):
        fadesim.get("unlikeliness")(R, logprobs=np.zeros((1, 3)))
    with pytest.raises(KeyError, match="fade: this advantage reads training signals"):
        fadesim.get("fade")(R)
    with pytest.raises(KeyError, match="fade: signals is missing 'initial_entropy'"):
        fadesim.get("fade")(R, signals={"entropy": 1.0})


def test_hyper_parameter_errors():
    with pytest.raises(ValueError, match="pass_at_k: K = 5 is too large for groups of G = 4"):
        fadesim.get("pass_at_k", K=5)(R)
    with pytest.raises(ValueError, match="pkpo: K = 4 is too large for groups of G = 4 \\(needs K <= 3\\)"):
        fadesim.get("pkpo", K=4)(R)
    with pytest.raises(ValueError, match="pass_at_k: parameter K = 0 is outside its domain an integer >= 1"):
        fadesim.get("pass_at_k", K=0)(R)
    with pytest.raises(ValueError, match="pkpo: parameter K = 1.5 is outside its domain an integer >= 1"):
        fadesim.get("pkpo", K=1.5)(R)
    with pytest.raises(ValueError, match="risk_sensitive: parameter beta = 0.0? is outside its domain a nonzero finite real"):
        fadesim.get("risk_sensitive", beta=0.0)(R)
    with pytest.raises(ValueError, match="grpo: parameter scale = 'tokens' is outside its domain one of 'group', 'batch', 'none'"):
        fadesim.get("grpo", scale="tokens")(R)
    with pytest.raises(ValueError, match="reinforce: parameter convention = .* is outside its domain one of '01', 'pm1'"):
        fadesim.get("reinforce", convention="+-1")(R)


def test_non_array_input():
    with pytest.raises(TypeError, match="rewards must be an array"):
        fadesim.get("grpo")("1, 0, 1")
    out = fadesim.get("grpo")([[1.0, 0.0]])  # nested lists become numpy arrays
    assert out.shape == (1, 2)


def test_register_conflicts_and_user_registration():
    def mine(rewards, *, mask=None, scale: float = 2.0, signals=None, logprobs=None):
        return fadesim.get("dr_grpo")(rewards, mask=mask) * scale

    with pytest.raises(ValueError, match="already registered"):
        fadesim.register("grpo", mine, paper="0000.00000")
    fadesim.register("mine_test", mine, paper="0000.00000", mean_centred=True)
    try:
        assert fadesim.info("mine_test").params == {"scale": 2.0}
        assert fadesim.get("mine_test") is mine
        np.testing.assert_allclose(fadesim.get("mine_test", scale=3.0)(R), 3 * (R - 0.5))
    finally:
        fadesim.unregister("mine_test")
    assert "mine_test" not in fadesim.names()


def test_get_returns_the_registered_function_object():
    from fadesim.advantages.group import grpo

    assert fadesim.get("grpo") is grpo
    assert fadesim.get("grpo", eps=1e-4).func is grpo


def test_decompose_and_profile_errors():
    with pytest.raises(ValueError, match=r"decompose: advantages shape \(1, 3\) does not match rewards shape \(1, 4\)"):
        fadesim.decompose(np.zeros((1, 3)), R)
    with pytest.raises(ValueError, match="decompose: bins must be a positive integer"):
        fadesim.decompose(np.zeros((1, 4)), R, bins=0)
    with pytest.raises(ValueError, match="decompose: advantages contain NaN"):
        fadesim.decompose(np.full((1, 4), np.nan), R)
    with pytest.raises(KeyError, match="unknown advantage"):
        fadesim.profile("nope", 8)
    with pytest.raises(ValueError, match="Beta parameters must be positive"):
        fadesim.profile("grpo", 8).under_beta(0.0, 1.0)
    with pytest.raises(ValueError, match=r"pass rate p must lie in \[0, 1\]"):
        fadesim.profile("grpo", 8).expected_positive_mass(1.5)
