"""Training simulators: ``simulate`` (JAX: scan / vmap / jit) and ``simulate_reference`` (numpy loop)."""

from typing import Any

from fadesim.sim.config import SimConfig
from fadesim.sim.reference import simulate_reference
from fadesim.sim.result import SimResult

__all__ = ["SimConfig", "SimResult", "simulate", "simulate_reference", "step_uniforms"]


def __getattr__(name: str) -> Any:
    """``simulate`` and ``step_uniforms`` load the JAX simulator on first use: importing jax takes about a second,
    and what needs only this package's light parts (the ``fadesim`` command's list / card / check, which read
    ``fadesim.sim.optim``) should not pay it."""
    if name in ("simulate", "step_uniforms"):
        from fadesim.sim import vectorized

        return getattr(vectorized, name)
    raise AttributeError(f"module 'fadesim.sim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "simulate", "step_uniforms"})
