"""Where an experiment's units run (this process or Ray tasks) and the resumable loop over them: every unit not yet in
the ``ResultStore`` is computed and written atomically, so a killed sweep resumes where it stopped."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Mapping

import pandas as pd
from tqdm import tqdm

from fadesim.lab.results import ResultStore, unit_key


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
