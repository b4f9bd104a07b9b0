"""The device_preserved contract item: torch rewards on an accelerator give advantages on that device, equal to the
CPU's. Without an accelerator (CI, this project's 2-core machines) the item is reported as not checked; the tests
that need a GPU run on the GPU machine (scripts/gpu_smoke.sh runs this module there)."""

import numpy as np
import pytest

import fadesim
from fadesim.apps.check import CONTRACT, AdvantageSpec, accelerator, run_checks, run_property, spec_from_registry
from fadesim.apps.cli import main
from tests.planted import advantages as planted

PLANTED = "tests/planted/advantages.py"
needs_accelerator = pytest.mark.skipif(accelerator() is None, reason="needs a GPU (CUDA) or MPS visible to torch")
without_accelerator = pytest.mark.skipif(accelerator() is not None, reason="checks the report where torch sees no GPU")


def _spec(fn, **kw):
    return AdvantageSpec(name=fn.__name__, fn=fn, **kw)


@without_accelerator
def test_without_an_accelerator_the_item_is_reported_as_not_checked(capsys):
    result = run_property(_spec(planted.through_numpy, mean_centred=True), "device_preserved", max_examples=5)
    assert result.passed and result.skipped and result.kind == "contract"
    assert "no accelerator" in result.detail
    # never counted as met: the report says SKIP and "not checked"
    assert main(["check", f"{PLANTED}:decorated_centred", "--examples", "5", "--only", "device_preserved",
                 "--only", "dtype_preserved"]) == 0
    out = capsys.readouterr().out
    assert any(line.strip().startswith("SKIP  device_preserved") for line in out.splitlines())
    assert "1 contract items met, 0 warning(s), 1 not checked" in out


def test_the_decorator_returns_a_torch_result_for_torch_rewards_from_a_numpy_detour():
    """fadesim.advantage puts a torch output on the rewards' device (here the CPU: the numpy detour's tensor is
    passed through; on CUDA it is copied back, checked by the accelerator test below)."""
    import torch

    r = torch.tensor([[1.0, 0.0, 0.0, 1.0]], dtype=torch.float32)
    out = planted.decorated_through_numpy(r)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.device == r.device
    np.testing.assert_allclose(out.numpy(), [[0.5, -0.5, -0.5, 0.5]])


@needs_accelerator
def test_a_numpy_detour_is_caught_on_the_accelerator_and_the_decorator_fixes_it():
    bad = run_property(_spec(planted.through_numpy, mean_centred=True), "device_preserved", max_examples=10)
    assert not bad.passed and not bad.skipped and bad.kind == "contract" and bad.fix == CONTRACT["device_preserved"]
    assert "advantages on cpu" in bad.detail, bad.detail
    good = run_property(_spec(planted.decorated_through_numpy, mean_centred=True), "device_preserved", max_examples=10)
    assert good.passed and not good.skipped, good.detail


@needs_accelerator
@pytest.mark.parametrize("name", fadesim.names())
def test_every_registered_advantage_keeps_the_device_and_the_cpu_values(name):
    spec = spec_from_registry(name, max_group_size=64)
    results = {r.prop: r for r in run_checks(spec, properties=["device_preserved", "dtype_preserved"],
                                             max_examples=20)}
    for r in results.values():
        assert r.passed and not r.skipped, f"{name}.{r.prop}: {r.detail}\n{r.counterexample}"
