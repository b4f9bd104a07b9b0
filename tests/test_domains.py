"""Declared hyper-parameter domains: every registered parameter has one; one shared check refuses values outside it
(library calls, get/bind, SimConfig and sweeps, the fadesim command, the experiments' flags); fadesim check probes
the boundaries and catches a function that declares a domain but does not enforce it."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fadesim
from fadesim.advantages.domains import BOOL, NON_NEGATIVE, POSITIVE, SIGNED_UNIT, UNIT, Choice, Interval
from fadesim.apps.check import AdvantageSpec, run_property, spec_from_registry
from fadesim.sim import SimConfig, simulate
from fadesim.tasks import make_task
from tests.planted import advantages as planted

ROOT = Path(__file__).resolve().parents[1]
R = np.array([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])


def test_every_registered_hyper_parameter_declares_its_domain():
    for entry in fadesim.entries():
        assert set(entry.domains) == set(entry.params), (entry.name, sorted(entry.params), sorted(entry.domains))
        for name, default in entry.params.items():  # the defaults themselves lie inside
            assert entry.domains[name].contains(default), (entry.name, name, default)


@pytest.mark.parametrize("name, params, message", [
    # the examples: each was silently wrong before (sign flip, NaN, inverted ranks, -1 on correct rollouts)
    ("grpo", {"eps": -1}, r"grpo: parameter eps = -1 is outside its domain \[0, inf\)"),
    ("focal", {"gamma": -1}, r"focal: parameter gamma = -1 is outside its domain \[0, inf\)"),
    ("unlikeliness", {"beta_rank": 2}, r"unlikeliness: parameter beta_rank = 2 is outside its domain \[0, 1\]"),
    ("w_reinforce", {"lam": -1}, r"w_reinforce: parameter lam = -1 is outside its domain \[0, inf\)"),
    ("pass_at_k", {"K": 0}, r"pass_at_k: parameter K = 0 is outside its domain an integer >= 1"),
    ("pass_at_k", {"K": 2.5}, r"parameter K = 2.5"),
    ("grpo", {"scale": "groups"}, r"scale = 'groups' is outside its domain one of 'group', 'batch', 'none'"),
    ("grpo", {"unbiased_std": "yes"}, r"unbiased_std = 'yes' is outside its domain a bool"),
    ("risk_sensitive", {"beta": 0.0}, r"beta = 0.0 is outside its domain a nonzero finite real"),
    ("fade", {"lam_neg_exploit": math.nan}, r"lam_neg_exploit = nan"),
    ("sign_scaled", {"balance": 1.5}, r"balance = 1.5 is outside its domain \[-1, 1\]"),
])
def test_values_outside_the_domain_are_refused_in_every_way_of_calling(name, params, message):
    kw = {"logprobs": np.zeros_like(R)} if name == "unlikeliness" else {}
    kw.update({"signals": {"entropy": 1.0, "initial_entropy": 1.0}} if name == "fade" else {})
    with pytest.raises(ValueError, match=message):
        fadesim.get(name)(R, **kw, **params)  # a direct call of the registered function
    with pytest.raises(ValueError, match=message):
        fadesim.get(name, **params)  # binding
    with pytest.raises(ValueError, match=message):
        SimConfig(advantage=name, advantage_params=params, G=8)


def test_boundaries_are_accepted_with_finite_output():
    assert np.isfinite(fadesim.get("focal")(R, gamma=0.0)).all()
    assert np.isfinite(fadesim.get("unlikeliness")(R, beta_rank=1.0, logprobs=np.zeros_like(R))).all()
    assert np.isfinite(fadesim.get("grpo")(R, eps=0.0)).all()  # eps = 0: all-equal groups are still exactly 0
    np.testing.assert_array_equal(fadesim.get("w_reinforce")(R, lam=0.0), fadesim.get("nsr")(R))


def test_a_sweep_is_checked_before_it_is_traced():
    task = make_task("bandit", n_prompts=4, n_answers=8, n_correct=2, seed=0)
    cfg = SimConfig(advantage="focal", G=4, steps=2, log_every=1)
    with pytest.raises(ValueError, match="focal: parameter gamma = -0.5 is outside"):
        simulate(task, cfg, sweep={"gamma": [0.0, -0.5]})
    with pytest.raises(ValueError, match="every lr must be a finite number > 0"):
        simulate(task, cfg, sweep={"lr": [0.1, 0.0]})


def test_domain_objects_describe_and_probe_their_edges():
    assert str(POSITIVE) == "(0, inf)" and str(UNIT) == "[0, 1]" and str(SIGNED_UNIT) == "[-1, 1]"
    assert str(Interval(low=1, integer=True)) == "an integer >= 1" and str(BOOL) == "a bool (True or False)"
    inside, outside = NON_NEGATIVE.probes()
    assert inside == [0.0] and outside[0] < 0 and outside[0] == np.nextafter(0.0, -1.0)
    assert all(not NON_NEGATIVE.contains(v) for v in outside) and all(NON_NEGATIVE.contains(v) for v in inside)
    inside, outside = POSITIVE.probes()
    assert 0.0 in outside and all(POSITIVE.contains(v) for v in inside)
    inside, outside = Interval(low=1, high=3, integer=True).probes()
    assert inside == [1, 3] and 0 in outside and 4 in outside and 1.5 in outside
    assert not BOOL.contains(1) and BOOL.contains(np.True_) and not Choice(("a",)).contains(1)


def test_the_decorator_enforces_declared_domains_and_the_registry_reads_them():
    @fadesim.advantage(domains={"scale": POSITIVE})
    def scaled(rewards, *, mask=None, scale=1.0):
        return scale * (rewards - rewards.mean(axis=-1, keepdims=True))

    with pytest.raises(ValueError, match=r"scaled: parameter scale = 0.0 is outside its domain \(0, inf\)"):
        scaled(R, scale=0.0)
    assert np.isfinite(scaled(R, scale=2.0)).all()
    fadesim.register("_scaled_test", scaled, paper="user", replace=True)
    try:
        assert fadesim.info("_scaled_test").domains == {"scale": POSITIVE}
        with pytest.raises(ValueError, match="scale = -1"):
            fadesim.get("_scaled_test", scale=-1)
    finally:
        fadesim.unregister("_scaled_test")
    with pytest.raises(ValueError, match=r"domains declared for unknown parameter\(s\) \['gamma'\]"):
        fadesim.advantage(domains={"gamma": POSITIVE})(lambda rewards, *, mask=None: rewards)
    with pytest.raises(TypeError, match="must be a fadesim Interval or Choice"):
        fadesim.register("_bad_domain", lambda rewards, *, mask=None, a=1: rewards, paper="user",
                         domains={"a": (0, 1)})


def test_the_property_catches_a_declared_domain_that_is_not_enforced():
    bad = AdvantageSpec(name="unchecked_domain", fn=planted.unchecked_domain, mean_centred=True,
                        domains=planted.unchecked_domain.__fadesim__["domains"])
    result = run_property(bad, "parameter_domains", max_examples=10)
    assert not result.passed and "scale = -5e-324 lies outside the declared domain [0, inf)" in result.detail
    good = run_property(spec_from_registry("focal"), "parameter_domains", max_examples=10)
    assert good.passed and not good.skipped
    skipped = run_property(spec_from_registry("rloo"), "parameter_domains", max_examples=10)
    assert skipped.passed and skipped.skipped


def test_the_fadesim_command_refuses_out_of_domain_parameters_with_status_2(tmp_path, capsys):
    from fadesim.apps.cli import main

    assert main(["card", "focal", "--param", "gamma=-1", "--out", str(tmp_path / "c.png")]) == 2
    out = capsys.readouterr()
    assert out.err.strip() == "fadesim card: error: focal: parameter gamma = -1 is outside its domain [0, inf)"
    assert "nan" not in out.out.lower() and not (tmp_path / "c.png").exists()
    assert main(["check", "tests/planted/advantages.py:unchecked_domain", "--examples", "5",
                 "--only", "parameter_domains"]) == 1
    assert "FAIL  parameter_domains" in capsys.readouterr().out


@pytest.mark.parametrize("script, argv, message", [
    ("sign_axis", ["--regime", "foo"], "sign_axis: regimes must be a non-empty subset"),
    ("difficulty_axis", ["--gammas=-1,0"],
     "difficulty_axis: gammas: focal: parameter gamma = -1.0 is outside its domain [0, inf)"),
    ("phase_shift", ["--lam-negs=0.5,-2"], "phase_shift: lam_negs: fade: parameter lam_neg_explore"),
    ("sign_axis", ["--seeds", "0"], "--seeds must be >= 1; got 0"),
    ("ladder", ["--lr=nan"], "--lr must be a finite number > 0"),
])
def test_an_experiments_bad_flag_is_one_line_and_status_2(script, argv, message, tmp_path, capsys):
    import importlib

    sys.path.insert(0, str(ROOT / "experiments"))
    main = importlib.import_module(script).main
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(tmp_path / "r"), "--figures", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "r").exists() and not (tmp_path / "f").exists()


def test_an_experiment_run_as_a_script_prints_no_traceback_for_a_bad_flag(tmp_path):
    proc = subprocess.run([sys.executable, "experiments/sign_axis.py", "--regime", "foo", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "sign_axis.py: error: sign_axis: regimes must be a non-empty subset of ['toy', 'llm', 'math']; got ['foo']"]
