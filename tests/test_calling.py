"""fadesim.advantages.calling: the one rule by which the simulator, the bridge and the plug-ins call an advantage."""

import numpy as np
import pytest

import fadesim
from fadesim.advantages.calling import AdvantageCall, mass_metrics, smoothed_entropy


def test_signals_and_logprobs_reach_only_the_advantages_that_read_them():
    r = (np.random.default_rng(0).random((5, 8)) < 0.4).astype(float)
    logp = np.random.default_rng(1).normal(size=(5, 8))
    signals = {"entropy": 0.5, "initial_entropy": 1.0, "step": 3}
    w = AdvantageCall("w_reinforce", {"lam": 0.3})
    np.testing.assert_array_equal(w(r, signals=signals, logprobs=logp), fadesim.get("w_reinforce", lam=0.3)(r))
    fade = AdvantageCall("fade")
    np.testing.assert_array_equal(fade(r, signals=signals), fadesim.get("fade")(r, signals=signals))
    with pytest.raises(ValueError, match="'fade' reads the training signals"):
        fade(r)
    unlikely = AdvantageCall("unlikeliness", {"beta_rank": 0.5})
    np.testing.assert_array_equal(unlikely(r, logprobs=logp), fadesim.get("unlikeliness", beta_rank=0.5)(r, logprobs=logp))
    with pytest.raises(ValueError, match="'unlikeliness' reads per-rollout log-probs"):
        unlikely(r, signals=signals)
    with pytest.raises(ValueError, match="lam"):
        AdvantageCall("w_reinforce", {"lam": -1.0})  # checked against its domain when bound
    # a call-time override of a bound hyper-parameter wins (the simulator's per-run sweeps)
    np.testing.assert_array_equal(w(r, lam=0.9), fadesim.get("w_reinforce", lam=0.9)(r))


def test_the_entropy_signal_and_the_mass_row():
    assert smoothed_entropy(None, 2.0, 0.9) == 2.0
    assert smoothed_entropy(2.0, 1.0, 0.9) == pytest.approx(1.9)
    r = (np.random.default_rng(2).random((6, 8)) < 0.3).astype(float)
    adv = fadesim.get("psr")(r)
    d = fadesim.decompose(adv, r)
    row = mass_metrics(d, 6)
    assert row["positive_mass"] == pytest.approx(float(np.clip(adv, 0, None).sum()) / 6)
    assert row["negative_mass"] == 0 and row["sign_balance"] == 1.0
    assert set(row) == {"positive_mass", "negative_mass", "sign_balance", "hardness", "ess"}
