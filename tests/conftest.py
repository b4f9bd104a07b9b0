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

# One intra-op thread per xdist worker where the workers already fill the cores: two workers of two OpenMP threads each
# on 2 cores oversubscribe them, and torch's spinning threads then wait on each other (the heavy tests: 69-73 s at
# torch's default, 56 s at one thread each). Set before any test module imports torch; experiments honour it
# (experiments/real_model.py). Speed only: the tests that compare torch numbers compare runs made in one process.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1 and _workers >= (os.cpu_count() or 1):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# The tests compile jax's CPU programs at LLVM optimisation level 0 and with XLA's older elemental emitters instead
# of its fusion emitters: most of the suite's time is XLA compiling many small programs, and these two flags
# compile them about twice as fast (a 20-step simulator program: 2.0 s -> 0.8 s; an eager jax operation: about a
# third less). The numbers agree with the default flags' to float rounding (tests/test_simulator.py checks that
# in a subprocess at the defaults), and every test passes at both (FADESIM_XLA_OPT=default runs the suite at
# XLA's defaults). Experiments and benchmarks run at the defaults: level 0 runs a large program several times slower.
# The flags are for jax's CPU compiler: where jax runs on a GPU (JAX_PLATFORMS names another platform first, or a
# CUDA / ROCm plugin is installed and JAX_PLATFORMS is unset) they are not set. On an H200 they killed the process
# silently at the first jax computation on the GPU (scripts/gpu_smoke.sh's machine, 2026-12-04).
TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def jax_accelerator_plugin() -> str | None:
    """The installed jax GPU plugin (a CUDA or ROCm PJRT plugin module), if any; found without importing jax."""
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec("jax_plugins")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    names = [m.name for m in pkgutil.iter_modules(locations)]
    names += [m.name for m in pkgutil.iter_modules() if m.name.startswith(("jax_cuda", "jax_rocm"))]
    return next((n for n in names if "cuda" in n or "rocm" in n), None)


def jax_runs_on_cpu() -> bool:
    """Whether jax will compile for the CPU in this process (the platform the test flags are for)."""
    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms:
        return platforms.split(",")[0].strip() == "cpu"
    return jax_accelerator_plugin() is None


TEST_FLAGS_APPLIED = os.environ.get("FADESIM_XLA_OPT", "0") != "default" and jax_runs_on_cpu()
if TEST_FLAGS_APPLIED:
    _flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = " ".join([_flags, *(f for f in TEST_XLA_FLAGS if f not in _flags)]).strip()

settings.register_profile(
    "fadesim", deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fadesim"))


def pytest_ignore_collect(collection_path, config):
    """Skip importing a module whose every test is marked integration (``pytestmark = pytest.mark.integration``) when
    the ``-m`` expression selects no integration test, as the core suite's does: importing transformers and TRL
    only to deselect every test costs each xdist worker about 3 s."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    markexpr = config.getoption("markexpr", "")
    if not markexpr or "\npytestmark = pytest.mark.integration" not in collection_path.read_text():
        return None
    try:
        from _pytest.mark.expression import Expression
    except ImportError:  # pragma: no cover - pytest moved it: collect as usual
        return None
    expr = Expression.compile(markexpr)
    # every test in the module carries integration; some may carry slow as well
    def selects(marks):
        return expr.evaluate(lambda name, *args, **kwargs: name in marks)

    return True if not (selects({"integration"}) or selects({"integration", "slow"})) else None


def pytest_collection_modifyitems(session, config, items):
    """Tests marked ``heavy`` (several seconds each) first. xdist's loadgroup hands out the groups first (most tests
    first), then single tests in collection order, one at a time to whichever worker is free: a long test left to the
    end keeps one worker busy while the other waits. The same stable order on every worker."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_collection_finish(session):
    """With --dist loadgroup, xdist marks a grouped test by suffixing its node id with ``@group`` on the worker; if
    that suffix is missing the grouping is silently lost (pytest 9.2 with xdist 3.8: pytest-xdist issue 1386), the
    groups' shared state (Ray's cluster, compiled programs, cached derivations) is built on both workers, and the
    Ray tests can collide. Refuse to run rather than lose it silently."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items if item.get_closest_marker("xdist_group") is not None
            and item.nodeid.rfind("@") <= item.nodeid.rfind("]")]
    if lost:
        raise RuntimeError(
            f"--dist loadgroup lost the xdist_group of {len(lost)} tests (e.g. {lost[0]}): this pytest / pytest-xdist "
            "pair does not group tests (pytest-xdist issue 1386); install the versions pyproject.toml pins")
