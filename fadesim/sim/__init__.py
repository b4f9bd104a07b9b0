"""Training simulators: ``simulate`` (JAX: scan / vmap / jit) and ``simulate_reference`` (numpy loop)."""

from fadesim.sim.config import SimConfig
from fadesim.sim.reference import simulate_reference
from fadesim.sim.result import SimResult
from fadesim.sim.vectorized import simulate, step_uniforms

__all__ = ["SimConfig", "SimResult", "simulate", "simulate_reference", "step_uniforms"]
