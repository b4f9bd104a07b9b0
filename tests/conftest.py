import os
from pathlib import Path

from hypothesis import HealthCheck, settings

# jax's persistent compilation cache: both xdist workers and the experiment subprocesses reuse each other's
# compiled programs, and a repeated local run starts warm. Speed only: every test passes without it
# (FADESIM_JAX_CACHE=off disables it; FADESIM_JAX_CACHE=DIR moves it). Set before any test module imports jax.
_cache = os.environ.get("FADESIM_JAX_CACHE", str(Path(__file__).resolve().parents[1] / ".cache" / "jax"))
if _cache != "off":
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _cache)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

# The tests compile jax's CPU programs at LLVM optimisation level 0: most of the suite's time is XLA compiling
# many small programs, and level 0 compiles them about twice as fast. The numbers agree with the default level's
# to float rounding (tests/test_simulator.py checks that in a subprocess at the default level), and every test
# passes at both (FADESIM_XLA_OPT=default runs the suite at XLA's default level). Experiments run at the default.
TEST_XLA_FLAG = "--xla_backend_optimization_level=0"
if os.environ.get("FADESIM_XLA_OPT", "0") != "default" and TEST_XLA_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAG}".strip()

settings.register_profile(
    "fadesim", deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fadesim"))
