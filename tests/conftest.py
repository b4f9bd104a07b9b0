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

settings.register_profile(
    "fadesim", deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fadesim"))
