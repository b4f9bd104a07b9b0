"""The joint screen of fadesim.apps.check.run_checks: the same search per property as a separate run, the same findings,
each failure shrunk for its own property."""

import numpy as np
import pytest

from fadesim.apps.check import (CONTRACT, PROPERTIES, AdvantageSpec, _property_tests, run_checks, run_property,
                           spec_from_registry)
from tests.planted import advantages as planted

CROSS_BACKEND = ("shape_and_namespace", "backend_agreement_f64", "backend_agreement_f32", "jax_transformations")
NUMPY_ONLY = [p for p in PROPERTIES if p not in CROSS_BACKEND]


def _spec(fn, **kw):
    return AdvantageSpec(name=fn.__name__, fn=fn, **kw)


def test_every_property_runs_on_max_examples_examples_and_shared_cases_are_drawn_once(monkeypatch):
    """Each property's function is called once per example (max_examples times); properties that take the same
    kind of case see the same case object in each example."""
    import fadesim.apps.check as check

    spec = spec_from_registry("grpo")
    assert spec.mean_centred
    seen = {}
    real = check._property_tests

    def counting(spec):
        tests = real(spec)
        out = {}
        for prop, (fn, strategies) in tests.items():
            def wrapped(spec, *, _fn=fn, _prop=prop, **kw):
                seen.setdefault(_prop, []).append(kw["case"])
                return _fn(spec, **kw)
            out[prop] = (wrapped, strategies)
        return out

    monkeypatch.setattr(check, "_property_tests", counting)
    results = run_checks(spec, properties=NUMPY_ONLY, max_examples=25)
    assert all(r.passed for r in results), [(r.prop, r.detail) for r in results if not r.passed]
    runnable = [p for p in NUMPY_ONLY if p in real(spec)]
    assert set(seen) == set(runnable)
    assert all(len(seen[p]) == 25 for p in runnable), {p: len(v) for p, v in seen.items()}
    # permutation_equivariant, deterministic and mean_centred take the same kind of case: drawn once per example
    assert all(a is b is c for a, b, c in zip(seen["permutation_equivariant"], seen["deterministic"],
                                               seen["mean_centred"]))
    # mask_handling and masked_rewards_ignored share a masked case; every one of them has a mask
    assert all(a is b and a.mask is not None for a, b in zip(seen["mask_handling"], seen["masked_rewards_ignored"]))
    # a case's kind is kept: extreme_rewards draws up to 1e6, the shared case up to 10
    assert max(np.abs(c.rewards).max() for c in seen["extreme_rewards"]) > 10
    assert max(np.abs(c.rewards).max() for c in seen["permutation_equivariant"]) <= 10


@pytest.mark.parametrize("function,prop,message", [
    ("not_equivariant", "permutation_equivariant", "A(permuted r) != permuted A(r)"),
    ("grpo_float32_residue", "float32_ties", "rounding residue of the group statistics is amplified"),
    ("masked_in_baseline", "masked_rewards_ignored", "changing the rewards of masked rollouts changed valid"),
])
def test_a_planted_bug_found_by_the_screen_is_shrunk_for_its_own_property(function, prop, message):
    fn = getattr(planted, function)
    spec = _spec(fn)
    joint = {r.prop: r for r in run_checks(spec, properties=NUMPY_ONLY, max_examples=30)}
    result = joint[prop]
    assert not result.passed and message in result.detail, result
    assert result.counterexample.startswith(f"Falsifying example: {prop}(") and "case=Case(rewards=" in \
        result.counterexample
    # the shrunk example is small: one group, at most two or three rollouts
    assert result.counterexample.count("],") <= 3, result.counterexample


@pytest.mark.heavy
def test_the_screen_and_separate_runs_agree_on_every_planted_function():
    """Which properties fail is the same whether they are screened together or run one by one."""
    for function in ("ignores_mask", "relative_to_mean"):  # properties and contract items, failing and passing
        spec = _spec(getattr(planted, function))
        joint = {r.prop: r.passed for r in run_checks(spec, properties=NUMPY_ONLY, max_examples=30)}
        alone = {p: run_property(spec, p, max_examples=30).passed for p in NUMPY_ONLY}
        assert joint == alone, (function, {p for p in joint if joint[p] != alone[p]})


def test_a_function_that_fails_only_sometimes_is_reported_unshrunk():
    """If the rerun alone does not fail again, the screen's failure is kept and the report says why."""
    calls = [0]

    def flaky(rewards, *, mask=None, signals=None, logprobs=None):
        calls[0] += 1
        out = rewards - rewards.mean(axis=-1, keepdims=True)
        return out + 1.0 if calls[0] == 7 else out

    results = {r.prop: r for r in run_checks(_spec(flaky), properties=["deterministic", "permutation_equivariant"],
                                             max_examples=20)}
    failed = [r for r in results.values() if not r.passed]
    assert len(failed) == 1 and "not reproduced when the property was re-run alone" in failed[0].counterexample


def test_contract_findings_keep_their_kind_and_fix():
    results = {r.prop: r for r in run_checks(_spec(planted.plain_centred), properties=NUMPY_ONLY, max_examples=20)}
    for prop in CONTRACT:
        assert results[prop].kind == "contract"
    bad = [r for r in results.values() if not r.passed]
    assert bad and all(r.kind == "contract" and r.fix == CONTRACT[r.prop] for r in bad)
    assert set(_property_tests(_spec(planted.plain_centred))) >= {r.prop for r in bad}
