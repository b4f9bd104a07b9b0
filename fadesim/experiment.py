"""What every experiment script shares: settings from the command line, resumable unit loops, CIs, verdicts."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd
from tqdm import tqdm

from fadesim.results import ResultStore, unit_key


def check_axes(experiment: str, **axes: tuple[tuple[str, ...], Any]) -> None:
    """Each named axis (e.g. regimes=(values, known)) must be a non-empty subset of its known values."""
    for name, (values, known) in axes.items():
        if not values or any(v not in known for v in values):
            raise ValueError(f"{experiment}: {name} must be a non-empty subset of {list(known)}; got {list(values)}")


def check_tag(experiment: str, tag: str) -> None:
    """A tag names an experiment's files: empty, or letters, digits, '-' and '_' only."""
    if tag and not tag.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{experiment}: tag must be letters, digits, '-' or '_' (it names files); got {tag!r}")


def check_advantage_values(experiment: str, advantage: str, **values: tuple[str, Any]) -> None:
    """parameter=(setting, values): each setting's values (a comma string or a sequence) must parse as numbers in
    ``advantage``'s declared domain of that parameter (``fadesim.advantages.domains``), e.g.
    ``check_advantage_values("difficulty_axis", "focal", gamma=("gammas", "0,1,2"))``."""
    from fadesim.advantages.registry import info

    for param, (setting, given) in values.items():
        items = [x.strip() for x in given.split(",")] if isinstance(given, str) else list(given)
        try:
            parsed = [float(x) for x in items if x != ""]
        except ValueError:
            raise ValueError(f"{experiment}: {setting} must be comma-separated numbers; got {given!r}") from None
        if not parsed:
            raise ValueError(f"{experiment}: {setting} is empty; give at least one value")
        try:
            info(advantage).check_params(**{param: parsed})
        except ValueError as err:
            raise ValueError(f"{experiment}: {setting}: {err}") from None


@dataclasses.dataclass(frozen=True)
class LLMRegimeSettings:
    """The llm regime's task sizes, shared by the experiments' Settings (each may override the defaults)."""

    llm_n_prompts: int = 64
    llm_n_answers: int = 2048
    llm_n_correct: int = 32
    llm_width: int = 8  # linear_softmax's feature width


def llm_task(settings: Any, name: str, seed: int = 0) -> Any:
    """The llm regime's task ``name`` at an experiment's llm_n_prompts / llm_n_answers / llm_n_correct (and
    llm_width, for linear_softmax); the chain's llm preset has its own sequence space (T = 4, V = 8, 3 correct),
    so it takes only llm_n_prompts."""
    from fadesim.tasks import make_task

    if name == "chain":
        return make_task("chain", regime="llm", n_prompts=settings.llm_n_prompts, seed=seed)
    kw = dict(n_prompts=settings.llm_n_prompts, n_answers=settings.llm_n_answers, n_correct=settings.llm_n_correct)
    if name == "linear_softmax":
        kw["width"] = settings.llm_width
    return make_task(name, regime="llm", seed=seed, **kw)


def toy_task(settings: Any, name: str, *, difficulty: Any = None, seed: int = 0) -> Any:
    """The toy regime's task ``name`` (``make_task(name, regime="toy")``) at the sizes an experiment's Settings
    declare, each optional: ``n_prompts``, ``n_correct``, ``difficulty``; ``n_answers`` (bandit, linear_softmax),
    ``width`` (linear_softmax), ``chain_length`` and ``chain_vocab`` (chain: T and V). A size the Settings do not
    declare is the toy regime's. ``difficulty`` overrides the Settings' (an experiment that sweeps prompt sets)."""
    from fadesim.tasks import make_task

    def declared(*fields: str) -> dict[str, Any]:
        return {f: getattr(settings, f) for f in fields if hasattr(settings, f)}

    kw = declared("n_prompts", "n_correct", "difficulty")
    if name == "chain":
        kw.update({k: v for k, v in (("length", getattr(settings, "chain_length", None)),
                                     ("vocab", getattr(settings, "chain_vocab", None))) if v is not None})
    else:
        kw.update(declared("n_answers"))
    if name == "linear_softmax":
        kw.update(declared("width"))
    if difficulty is not None:
        kw["difficulty"] = difficulty
    return make_task(name, regime="toy", seed=seed, **kw)


def regime_task(settings: Any, name: str, regime: str, *, difficulty: Any = None, seed: int = 0) -> Any:
    """The one task builder of the regime experiments: ``llm_task`` in the llm regime (its calibrated difficulty;
    ``difficulty`` is ignored there), ``toy_task`` in the toy regime, and in the math regime its preset exactly
    (the literature protocol's chosen design and sizes, ``fadesim.tasks.regimes``: the settings' sizes and
    ``difficulty`` are ignored there)."""
    if regime == "llm":
        return llm_task(settings, name, seed=seed)
    if regime == "toy":
        return toy_task(settings, name, difficulty=difficulty, seed=seed)
    if regime == "math":
        from fadesim.tasks import make_task

        return make_task(name, regime="math", seed=seed)
    from fadesim.tasks import REGIMES

    raise ValueError(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")


#: the prompt set a calibrated regime runs on (its own difficulty; the toy regime's sets are named distributions)
CALIBRATED_SETS = {"llm": "calibrated", "math": "calibrated-math"}


def regime_task_names(settings: Any, regime: str) -> list[str]:
    """The tasks a regime experiment runs in ``regime``: its ``math_tasks`` in the math regime, its ``llm_tasks`` in
    the llm regime where it declares them, else its ``tasks`` (each a tuple or a comma-separated string)."""
    field = {"math": "math_tasks", "llm": "llm_tasks"}.get(regime)
    names = getattr(settings, field) if field is not None and hasattr(settings, field) else settings.tasks
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def regime_n_prompts(settings: Any, regime: str) -> int:
    """How many prompts a regime experiment's task has in ``regime``: the settings' ``llm_n_prompts`` (llm) or
    ``n_prompts`` (toy), the preset's in the math regime."""
    if regime == "math":
        from fadesim.tasks.regimes import MATH_SIZES

        return int(MATH_SIZES["n_prompts"])
    return int(settings.llm_n_prompts if regime == "llm" else settings.n_prompts)


def _comma_list(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected one or more comma-separated values")
    return items


def parse_settings(doc: str, quick: Any, full: Any, argv: list[str] | None, root: Path, name: str, *,
                   zero_allowed: tuple[str, ...] = (),
                   implied: Callable[[Any, Mapping[str, Any]], Mapping[str, Any]] | None = None,
                   presets: Mapping[str, Any] | None = None,
                   ) -> tuple[Any, str, argparse.Namespace]:
    """--quick (default) / --full plus an override flag for every int/float/str/tuple[str, ...] field of the
    settings (``--name VALUE``) and every bool field (``--name`` / ``--no-name``).

    ``zero_allowed``: int fields whose 0 means "off" although the presets set them above 0. ``implied(preset,
    overrides)``: further fields the user's flags imply, applied under the flags themselves (e.g. a flag that picks
    another task family resets the preset's settings that only the default family takes). ``presets``: further named
    Settings beside quick and full, chosen by ``--preset NAME`` (the mode returned is then NAME)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(doc.splitlines()[1:]))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sweep, about a minute on 2 cores (default)")
    mode.add_argument("--full", action="store_true", help="the published figure's sweep")
    presets = dict(presets or {})
    if presets:
        mode.add_argument("--preset", choices=sorted(presets), default=None,
                          help="a named setting beside --quick and --full (" + ", ".join(sorted(presets)) + ")")
    ap.add_argument("--out", default=str(root / "results" / name), help="result folder (resumable)")
    ap.add_argument("--figures", default=str(root / "paper_figures" / name),
                    help=f"figure folder (default paper_figures/{name})")
    ap.add_argument("--no-figures", action="store_true",
                    help="compute, store and print everything but draw no figure (a sweep on a headless node: "
                         "rerun without this flag to draw them from the stored results)")
    kinds = {"int": int, "float": float, "str": str, "tuple[str, ...]": _comma_list}
    for field in dataclasses.fields(quick):
        if field.type in kinds:
            flags = [f"--{field.name.replace('_', '-')}"]
            if field.type == "tuple[str, ...]" and field.name.endswith("s"):  # --regime llm, --optimizer adam,sgd
                singular = field.name[:-3] + "y" if field.name.endswith("ies") else field.name[:-1]
                flags.append(f"--{singular.replace('_', '-')}")
            ap.add_argument(*flags, dest=field.name, type=kinds[field.type], default=None,
                            help=f"override {field.name}{' (comma-separated)' if field.type.startswith('tuple') else ''}"
                                 f" (quick {getattr(quick, field.name)!r}, full {getattr(full, field.name)!r})")
        elif field.type == "bool":  # --flag / --no-flag
            ap.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=None,
                            action=argparse.BooleanOptionalAction,
                            help=f"override {field.name} (quick {getattr(quick, field.name)!r}, "
                                 f"full {getattr(full, field.name)!r})")
    ap.add_argument("--executor", choices=EXECUTORS, default="local",
                    help="where units run: 'local' (this process) or 'ray' (one Ray task per unit; pip install -e '.[ray]')")
    ap.add_argument("--ray-address", default=None,
                    help="a running Ray cluster ('auto', host:port or ray://host:port); default: start a local one")
    ap.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the local Ray cluster (default: all)")
    args = ap.parse_args(argv)
    chosen = getattr(args, "preset", None)
    settings = presets[chosen] if chosen else full if args.full else quick
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(settings)
                 if getattr(args, f.name, None) is not None}
    try:  # each Settings validates itself (__post_init__): a bad flag is one line and exit status 2, as in argparse
        for name, value in overrides.items():  # counts and sizes are >= 1 (>= 0 where the default is 0), rates finite
            if (isinstance(value, int) and not isinstance(value, bool) and value < min(1, getattr(quick, name))
                    and not (name in zero_allowed and value == 0)):
                raise ValueError(f"--{name.replace('_', '-')} must be >= {min(1, getattr(quick, name))}; got {value}")
            if isinstance(value, float) and (value != value or abs(value) == float("inf")
                                             or (name.endswith("lr") and value <= 0)):
                raise ValueError(f"--{name.replace('_', '-')} must be a finite number{' > 0' if name.endswith('lr') else ''}"
                                 f"; got {value}")
        settings = dataclasses.replace(settings, **{**(implied(settings, overrides) if implied else {}), **overrides})
    except (ValueError, TypeError, KeyError) as err:
        ap.exit(2, f"{ap.prog}: error: {err.args[0] if isinstance(err, KeyError) and err.args else err}\n")
    return settings, (chosen or ("full" if args.full else "quick")), args


EXECUTORS = ("local", "ray")


@dataclasses.dataclass(frozen=True)
class Executor:
    """Where ``run_units`` computes units: ``"local"`` (one after another in this process) or ``"ray"``.

    With Ray each unit is one Ray task that computes its rows and writes them through ``ResultStore``'s
    atomic write, so the results folder must be one every worker can reach (on a multi-machine cluster, a
    shared file system). ``address``: a running cluster (``"auto"``, ``"host:port"`` or ``"ray://host:port"``);
    None starts a local one with ``num_cpus`` CPUs (default: all) unless Ray is already initialised.
    """

    kind: str = "local"
    address: str | None = None
    num_cpus: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ValueError(f"unknown executor {self.kind!r}; choose one of {', '.join(EXECUTORS)}")
        if self.kind == "local" and (self.address is not None or self.num_cpus is not None):
            raise ValueError("address and num_cpus are Ray settings; use them with executor 'ray'")
        if self.num_cpus is not None and (isinstance(self.num_cpus, bool) or int(self.num_cpus) != self.num_cpus
                                          or self.num_cpus < 1):
            raise ValueError(f"num_cpus must be a positive integer; got {self.num_cpus!r}")

    def connect(self) -> Any:
        """Import Ray and join (or start) the cluster; returns the ray module. Idempotent."""
        ray = _import_ray()
        if self.address is not None:
            _check_reachable(self.address)
        if ray.is_initialized():
            return ray
        try:
            ray.init(address=self.address, num_cpus=self.num_cpus, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        except ConnectionError as err:
            raise ConnectionError(f"could not join the Ray cluster at address {self.address!r}: {err}") from err
        return ray


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError("executor 'ray' needs Ray: pip install -e '.[ray]'") from err
    return ray


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A host:port (or ray://host:port) address must accept a TCP connection, or we fail before writing anything."""
    import socket

    if address == "auto":
        return  # Ray finds the local cluster itself and raises ConnectionError when there is none
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"Ray address {address!r} is not 'auto', 'host:port' or 'ray://host:port'")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise ConnectionError(f"the Ray address {address!r} does not answer ({err})") from err


def executor_from_args(args: argparse.Namespace) -> Executor:
    """The executor the command line asked for, connected (a Ray cluster that does not answer fails here)."""
    executor = Executor(args.executor, address=args.ray_address, num_cpus=args.ray_cpus)
    if executor.kind == "ray":
        executor.connect()
    return executor


LOCAL = Executor()

_WORKER_COMPUTE: dict[str, Callable[[Mapping[str, Any]], pd.DataFrame]] = {}


def _ray_unit(compute_key: str, compute_box: list[Any], root: str, spec: Mapping[str, Any]) -> str:
    """One unit inside a Ray worker: compute its rows and write them atomically (skipped if already there).

    The compute function arrives boxed in a list, so Ray does not resolve it for every task: each worker
    fetches it once and keeps it, so what it caches (tasks, jax's compiled programs) serves later units.
    """
    import ray

    store = ResultStore(root)
    if not store.has(spec):
        if compute_key not in _WORKER_COMPUTE:
            _WORKER_COMPUTE.clear()
            _WORKER_COMPUTE[compute_key] = ray.get(compute_box[0])
        store.put(spec, _WORKER_COMPUTE[compute_key](spec))
    return unit_key(spec)


def _pickle_module_by_value(fn: Callable[..., Any], ray: Any) -> None:
    """Experiment scripts are not an installed package: ship their code to the workers by value."""
    import sys

    name = getattr(fn, "__module__", None) or "__main__"
    if name != "__main__" and not name.split(".")[0] == "fadesim" and name in sys.modules:
        ray.cloudpickle.register_pickle_by_value(sys.modules[name])


def run_units(specs: list[Mapping[str, Any]], compute: Callable[[Mapping[str, Any]], pd.DataFrame],
              store: ResultStore, desc: str, executor: Executor | str = LOCAL) -> pd.DataFrame:
    """Compute every unit not yet on disk (with a progress bar), then return exactly the units' rows.

    ``executor``: an ``Executor`` (or its kind). Units already on disk are skipped either way, and a killed
    driver or worker loses at most the units in flight; the table is the same for every executor.
    """
    executor = Executor(executor) if isinstance(executor, str) else executor
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be an Executor or one of {EXECUTORS}; got {executor!r}")
    if executor.kind == "local":
        for spec in tqdm(specs, desc=desc, unit="run"):
            if not store.has(spec):
                store.put(spec, compute(spec))
        return store.table(specs)
    ray = executor.connect()
    todo = [spec for spec in specs if not store.has(spec)]
    if todo:
        _pickle_module_by_value(compute, ray)
        box = [ray.put(compute)]
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_unit)
        root = str(store.root.resolve())
        pending = [remote.remote(box[0].hex(), box, root, dict(spec)) for spec in todo]
        with tqdm(total=len(specs), initial=len(specs) - len(todo), desc=f"{desc} (ray)", unit="run") as bar:
            try:
                while pending:
                    ready, pending = ray.wait(pending, num_returns=1)
                    ray.get(ready)  # re-raises a unit's error here
                    bar.update(len(ready))
            except BaseException:
                for ref in pending:
                    ray.cancel(ref)
                raise
    return store.table(specs)


def ci95(values: Iterable[float]) -> tuple[float, float]:
    """Mean and 95% normal-approximation half-width (inf for a single value)."""
    values = np.asarray(list(values), dtype=float)
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.inf
    return float(values.mean()), float(half)


def at_pass1(run: pd.DataFrame, target: float, metric: str) -> float:
    """``metric`` of one logged run (columns step, pass@1 and ``metric``) where its pass@1 first reaches ``target``:
    linear interpolation between the two logged steps around the first crossing; NaN where it never does, and NaN
    where the run starts at or above it (a reading at the start says nothing about what training did, and would
    make two methods equal there by construction). Reading each method there compares them at matched pass@1 (the entropy-vs-pass@1 or
    pass@k-vs-pass@1 frontier), which takes learning speed out of the comparison."""
    run = run.sort_values("step")
    p, m = run["pass@1"].to_numpy(dtype=float), run[metric].to_numpy(dtype=float)
    if not np.isfinite(target):
        raise ValueError(f"the matched pass@1 target must be a finite number; got {target!r}")
    hit = np.flatnonzero(p >= target)
    if hit.size == 0:
        return float("nan")
    i = int(hit[0])
    if i == 0:
        return float("nan")
    w = (target - p[i - 1]) / (p[i] - p[i - 1])  # p[i - 1] < target <= p[i]
    return float(m[i - 1] + w * (m[i] - m[i - 1]))


def paired_at_pass1(a: pd.DataFrame, b: pd.DataFrame, target: float, metric: str) -> tuple[list[float], int]:
    """(a minus b of ``metric`` at matched pass@1, one per seed where both runs reach ``target`` during training;
    how many seeds ``a`` has). ``a`` and ``b``: logged runs with columns seed, step, pass@1 and ``metric``, each
    seed's run read by ``at_pass1``."""
    read_a = {seed: at_pass1(run, target, metric) for seed, run in a.groupby("seed")}
    read_b = {seed: at_pass1(run, target, metric) for seed, run in b.groupby("seed")}
    pairs = [read_a[s] - read_b[s] for s in read_a if np.isfinite(read_a[s]) and np.isfinite(read_b.get(s, np.nan))]
    return pairs, len(read_a)


def split_seeds(seeds: Iterable[int], experiment: str = "this experiment") -> tuple[list[int], list[int]]:
    """(tuning seeds, held-out seeds): the first half of the distinct seeds picks a setting, the second half judges
    it, so a verdict is not decided by the same noise that chose the setting."""
    distinct = sorted({int(x) for x in seeds})
    if len(distinct) < 2:
        raise ValueError(f"{experiment} needs at least 2 seeds (half pick the settings, half judge them); "
                         f"got {distinct}")
    half = len(distinct) // 2
    return distinct[:half], distinct[half:]


#: where held-out seeds start when an experiment declares tuning and held-out seed counts separately
HELD_OUT_START = 1000


def seed_ranges(n_tune: int, n_held: int, experiment: str = "this experiment") -> tuple[list[int], list[int]]:
    """(tuning seeds, held-out seeds) for an experiment that sets the two counts separately: ``0 .. n_tune - 1``
    and ``HELD_OUT_START ..``, disjoint by construction (checked). ``split_seeds`` is the form for one seed list
    halved."""
    if n_tune < 1 or n_held < 1:
        raise ValueError(f"{experiment} needs at least one tuning and one held-out seed; got {n_tune}, {n_held}")
    if n_tune > HELD_OUT_START:
        raise ValueError(f"tune_seeds = {n_tune} would overlap the held-out seeds, which start at {HELD_OUT_START}")
    return list(range(n_tune)), list(range(HELD_OUT_START, HELD_OUT_START + n_held))


def verdict(ok: bool) -> str:
    return "CONFIRMED" if ok else "NOT CONFIRMED"
