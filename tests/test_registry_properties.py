"""Every registered advantage passes the property suite (fadesim.apps.check, the same code `fadesim check` runs).

The default run draws 80 hypothesis examples per numpy-only property and 10-20 per cross-backend property
(which compile jax code for each new shape and dtype), over G in {2, ..., 64}; `slow` copies run 200 of
every property. Hypothesis is derandomized (tests/conftest.py), so every run draws the same examples.
The numpy-only properties of one advantage are screened together (``run_checks``: each example is drawn once for
all of them; a failing property is re-run alone to shrink its counter-example), once per advantage and worker.
"""

import functools

import pytest

import fadesim
from fadesim.apps.check import PROPERTIES, run_checks, run_property, spec_from_registry

CROSS_BACKEND = ("shape_and_namespace", "backend_agreement_f64", "backend_agreement_f32", "jax_transformations")
NUMPY_ONLY = tuple(p for p in PROPERTIES if p not in CROSS_BACKEND)


def _assert(name, prop, examples):
    result = run_property(spec_from_registry(name, max_group_size=64), prop, max_examples=examples)
    assert result.passed, f"{name}.{prop}: {result.detail}\n{result.counterexample}"


#: examples per numpy-only property in the default run (drawing them is most of the cost)
DEFAULT_RUN_NUMPY_EXAMPLES = 80


@functools.lru_cache(maxsize=None)
def _screen(name, examples):
    spec = spec_from_registry(name, max_group_size=64)
    return {r.prop: r for r in run_checks(spec, properties=NUMPY_ONLY, max_examples=examples)}


def _assert_screened(name, prop, examples):
    result = _screen(name, examples)[prop]
    assert result.passed, f"{name}.{prop}: {result.detail}\n{result.counterexample}"


# one xdist group per advantage: its numpy-only properties share one screen, so one worker runs it once
BY_NAME = [pytest.param(name, marks=pytest.mark.xdist_group(f"properties-{name}")) for name in fadesim.names()]


@pytest.mark.parametrize("prop", NUMPY_ONLY)
@pytest.mark.parametrize("name", BY_NAME)
def test_property(name, prop):
    _assert_screened(name, prop, DEFAULT_RUN_NUMPY_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("prop", NUMPY_ONLY)
@pytest.mark.parametrize("name", BY_NAME)
def test_property_200(name, prop):
    _assert_screened(name, prop, 200)


#: examples per cross-backend property in the default run (each new shape and dtype compiles jax code)
DEFAULT_RUN_EXAMPLES = {"shape_and_namespace": 10, "backend_agreement_f64": 20, "backend_agreement_f32": 15,
                        "jax_transformations": 15}


# one xdist worker runs these and the CLI's checks: their eager jax operations compile once (per process and shape)
@pytest.mark.xdist_group("eager_jax")
@pytest.mark.parametrize("prop", CROSS_BACKEND)
@pytest.mark.parametrize("name", fadesim.names())
def test_cross_backend(name, prop):
    _assert(name, prop, DEFAULT_RUN_EXAMPLES[prop])


@pytest.mark.slow
@pytest.mark.parametrize("prop", CROSS_BACKEND)
@pytest.mark.parametrize("name", fadesim.names())
def test_cross_backend_200(name, prop):
    _assert(name, prop, 200)


def test_affine_invariance_of_grpo_is_exact_without_eps():
    """GRPO(a r + b) = GRPO(r) for a > 0 when eps = 0 (the registry property allows for eps)."""
    import numpy as np
    from hypothesis import given, settings, strategies as st

    grpo = fadesim.get("grpo", eps=0.0)

    @settings(max_examples=200)
    @given(r=st.lists(st.floats(-3, 3, allow_subnormal=False), min_size=2, max_size=32),
           a=st.floats(1e-3, 1e3), b=st.floats(-1e3, 1e3))
    def check(r, a, b):
        r = np.array([r])
        if np.ptp(r) < 1e-3:
            return  # near-equal groups: a r + b rounds them to equal, a legitimate 0
        np.testing.assert_allclose(grpo(a * r + b), grpo(r), rtol=1e-6, atol=1e-6)

    check()
