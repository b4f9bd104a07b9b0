"""The JAX simulator: a run is one ``lax.scan``; a sweep (configurations x seeds) one ``vmap`` under one ``jit``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fadesim.sim.config import SimConfig
from fadesim.sim.result import SimResult
from fadesim.sim.step import BATCH_METRICS, initial_hard_prompts, initial_state, policy_metrics, train_step

if TYPE_CHECKING:  # the task interface (docs/DESIGN.md section 6)
    from fadesim.tasks.protocol import Task


def step_uniforms(key: Any, t: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Step t's random draws: uniform(fold_in(key, t)); the numpy reference can be fed the same."""
    return jax.random.uniform(jax.random.fold_in(key, t), shape, dtype=dtype)


def task_data(task: Task) -> dict[str, Any]:
    """What a compiled run takes as arguments: the task's numpy arrays and its initially-hard-prompt mask.

    Passing them (instead of closing over them) keeps them out of the compiled program: XLA would otherwise
    bake a (512, 4096) task in as constants and spend seconds constant-folding reductions over it, and every
    task of the same shapes shares one compiled program.
    """
    arrays = {f.name: getattr(task, f.name) for f in dataclasses.fields(task)
              if isinstance(getattr(task, f.name), np.ndarray)}
    return {"arrays": arrays, "hard": initial_hard_prompts(task)}


def _signature(task: Task) -> tuple[Any, ...]:
    """The task's static part: its type, non-array fields, and its arrays' shapes and dtypes."""
    out: list[Any] = [type(task).__module__, type(task).__qualname__]
    for f in dataclasses.fields(task):
        v = getattr(task, f.name)
        out.append((f.name, v.shape, v.dtype.str) if isinstance(v, np.ndarray) else (f.name, repr(v)))
    return tuple(out)


def build_run(task: Task, cfg: SimConfig, dtype: Any) -> Any:
    """run(key, hp, data) -> (metrics at step 0, metrics at each log point), pure and jittable; ``data`` is
    ``task_data(task)`` (or that of any task with the same signature)."""
    shape = task.uniform_shape(cfg.G)
    n_logs = cfg.steps // cfg.log_every

    def run(key: Any, hp: Mapping[str, Any], data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        traced = dataclasses.replace(task, **data["arrays"])
        return _run(traced, key, hp, data["hard"])

    def _run(task: Task, key: Any, hp: Mapping[str, Any], hard: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        state = initial_state(task, cfg, jnp, dtype)
        first = policy_metrics(task, cfg, state["params"], jnp, hard)

        def quiet_step(state: dict[str, Any], t: Any) -> tuple[dict[str, Any], None]:
            return train_step(task, cfg, state, step_uniforms(key, t, shape, dtype), hp, jnp, metrics=False)[0], None

        def one_log(state: dict[str, Any], chunk: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            # log_every - 1 steps without batch metrics, then the logged step with them (the update is the same)
            first_t = chunk * cfg.log_every
            state, _ = jax.lax.scan(quiet_step, state, first_t + jnp.arange(cfg.log_every - 1))
            t = first_t + cfg.log_every - 1
            state, last = train_step(task, cfg, state, step_uniforms(key, t, shape, dtype), hp, jnp)
            return state, {**last, **policy_metrics(task, cfg, state["params"], jnp, hard)}

        _, logs = jax.lax.scan(one_log, state, jnp.arange(n_logs))
        return first, logs

    return run


#: on the CPU, runs are computed RUN_CHUNK at a time: one ``vmap`` over exactly this many runs, in a loop over
#: as many chunks as a device holds (``_chunked``), so a run's numbers come from the same compiled chunk
#: whatever the sweep's size, the device count or the run's neighbours (see ``simulate``). Measured on 2 cores,
#: 100 steps of the full sign-axis sweep's shapes (168 runs, K = 32), twice each: chunks of 1 11.5-12.0 s, of 2
#: 8.7-9.0 s, of 4 9.1-9.2 s, of 8 8.7-9.0 s, one vmap of all 168 8.4-8.5 s; at the llm regime's K = 2048 (24 runs)
#: 1: 3.1 s, 2: 2.9 s, 8: 2.7 s. 2 costs a lone run (padded to 2) least of those within 5% of one vmap.
RUN_CHUNK = 2


def default_chunk(devices: list[Any]) -> int | None:
    """RUN_CHUNK where the devices are CPUs; None (one vmap over a device's runs) on accelerators, where a loop over
    small chunks would serialise what the device runs in parallel."""
    return RUN_CHUNK if all(d.platform == "cpu" for d in devices) else None


_COMPILED: dict[tuple[Any, ...], Any] = {}  # (task signature, config, dtype, devices, chunk) -> jitted sweep


def _chunked(run: Any, chunk: int) -> Any:
    """(keys, hp, data, n_chunks) over r = n_chunks x chunk runs -> stacked outputs: vmap over ``chunk`` runs, in a
    loop over the r / chunk chunks whose trip count is a traced value, so XLA can neither unroll it nor remove a
    one-trip loop: the chunk's code is the same compiled loop body for every r (a static one-trip ``lax.map`` was
    inlined and fused differently, and gave other last bits than the same chunk inside a longer loop)."""
    # jitted so that it is traced once: eval_shape's trace below is cached and the loop body reuses it (the second
    # trace was about a third of a small sweep's first call); XLA inlines the inner call, the bits are the same
    batched = jax.jit(jax.vmap(run, in_axes=(0, 0, None)))

    def local(keys: Any, hp: Any, data: Any, n_chunks: Any) -> Any:
        r = keys.shape[0]  # n_chunks = r / chunk, passed in as an argument: a value XLA cannot fold
        take = lambda x, i: jax.lax.dynamic_slice_in_dim(x, i * chunk, chunk)  # noqa: E731 - a one-line local helper
        shapes = jax.eval_shape(batched, take(keys, 0), jax.tree.map(lambda x: take(x, 0), hp), data)
        out = jax.tree.map(lambda a: jnp.zeros((r, *a.shape[1:]), a.dtype), shapes)

        def body(i: Any, out: Any) -> Any:
            got = batched(take(keys, i), jax.tree.map(lambda x: take(x, i), hp), data)
            return jax.tree.map(lambda o, g: jax.lax.dynamic_update_slice_in_dim(o, g, i * chunk, 0), out, got)

        return jax.lax.fori_loop(0, n_chunks, body, out)

    return local


def _compiled_sweep(task: Task, cfg: SimConfig, dtype: Any, devices: list[Any], chunk: int) -> Any:
    """The jitted sweep over a flat runs axis (one run per (configuration, seed)), cached by the task's
    signature (shapes, not values), so repeated calls, and other tasks of the same shapes, do not recompile.

    On one device: ``_chunked(run)``. On several: the same function under ``shard_map``, each device running
    its own block of runs, so every device executes the same per-chunk code as the one-device program.
    """
    key = (_signature(task), repr(cfg), jnp.dtype(dtype).name, tuple(str(d) for d in devices), chunk)
    if key not in _COMPILED:
        local = _chunked(build_run(task, cfg, dtype), chunk)
        if len(devices) > 1:
            mesh = Mesh(np.asarray(devices), ("runs",))
            local = jax.shard_map(local, mesh=mesh, in_specs=(PartitionSpec("runs"), PartitionSpec("runs"),
                                                              PartitionSpec(), PartitionSpec()),
                                  out_specs=PartitionSpec("runs"), check_vma=False)
        _COMPILED.clear() if len(_COMPILED) > 32 else None
        _COMPILED[key] = jax.jit(local)
    return _COMPILED[key]


def resolve_devices(devices: int | Sequence[Any] | None) -> list[Any]:
    """``None``: every device of jax's default backend; an int n: the first n; or an explicit device list."""
    available = jax.devices()
    if devices is None:
        return list(available)
    if isinstance(devices, (bool, np.bool_)) or not isinstance(devices, (int, np.integer, Sequence)):
        raise TypeError(f"devices must be None, a device count or a sequence of jax devices; got {devices!r}")
    if isinstance(devices, (int, np.integer)):
        n = int(devices)
        if not 1 <= n <= len(available):
            raise ValueError(f"devices={n} but jax sees {len(available)} device(s) ({available[0].platform}); "
                             f"ask for 1 to {len(available)}, or None for all of them")
        return list(available[:n])
    chosen = list(devices)
    if not chosen:
        raise ValueError("devices is an empty sequence; pass None for all devices or a count")
    unknown = [d for d in chosen if d not in available]
    if unknown:
        raise ValueError(f"devices {unknown} are not among jax.devices() = {available}")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"devices lists a device twice: {chosen}")
    return chosen


def _place(tree: Any, devices: list[Any], n_runs: int, chunk: int) -> tuple[Any, int]:
    """Lay the runs out over the devices: pad to a multiple of chunk x devices (repeating the last run), split into
    one block per device, append to each block one spare chunk that is never computed, and shard. Returns (tree,
    chunks computed per device); ``_unplace`` undoes the layout.

    The spare chunk keeps every device's block longer than one chunk, so the loop's slice of a chunk is a real
    dynamic slice: a block of exactly one chunk let XLA drop the slice and fuse that program differently (last bits
    of linear_softmax differed between one and two devices)."""
    devs = len(devices)
    computed = n_runs + (-n_runs) % (chunk * devs)
    per_device = computed // devs

    def layout(x: Any) -> Any:
        x = jnp.concatenate([x, jnp.repeat(x[-1:], computed - n_runs, axis=0)])
        blocks = x.reshape(devs, per_device, *x.shape[1:])
        spare = jnp.broadcast_to(x[-1], (devs, chunk, *x.shape[1:]))
        return jnp.concatenate([blocks, spare], axis=1).reshape(devs * (per_device + chunk), *x.shape[1:])

    tree = jax.tree.map(layout, tree)
    if devs == 1:
        return jax.device_put(tree, devices[0]), per_device // chunk
    sharding = NamedSharding(Mesh(np.asarray(devices), ("runs",)), PartitionSpec("runs"))
    return jax.device_put(tree, sharding), per_device // chunk


def _unplace(x: np.ndarray, devs: int, chunks_per_device: int, chunk: int, n_runs: int) -> np.ndarray:
    """The runs, in order, from ``_place``'s layout (spare chunks and padding dropped)."""
    per_device = chunks_per_device * chunk
    blocks = x.reshape(devs, per_device + chunk, *x.shape[1:])[:, :per_device]
    return blocks.reshape(devs * per_device, *x.shape[1:])[:n_runs]


def simulate(
    task: Task,
    cfg: SimConfig,
    *,
    seeds: Sequence[int] = (0,),
    sweep: Mapping[str, Sequence[float]] | None = None,
    dtype: Any = jnp.float32,
    devices: int | Sequence[Any] | None = None,
    chunk: int | None = -1,
) -> SimResult:
    """Run ``len(sweep values) x len(seeds)`` simulations in one jitted call (vmapped in chunks of runs).

    ``sweep`` maps sweepable hyper-parameter names (lr, kl_beta, eps_low, eps_high, or the advantage's
    numeric parameters such as lam or gamma) to one value per configuration; lists are zipped, so build
    products with ``itertools.product`` first.

    ``devices``: the flat (configurations x seeds) runs axis is sharded over these jax devices (None: all of
    ``jax.devices()``; an int n: the first n; or a list of devices) with ``shard_map`` on a one-axis mesh. The
    devices the result was computed on are in ``SimResult.devices``.

    ``chunk``: every device computes its runs ``chunk`` at a time (one vmap over exactly ``chunk`` runs, in a
    loop over the chunks whose trip count is an argument); the runs axis is padded to a multiple of chunk x
    devices by repeating the last run, each device's block gets one spare chunk that is never computed (``_place``),
    and both are dropped from the result. The default (-1) is ``default_chunk``: RUN_CHUNK (2) on CPUs,
    None on accelerators; None is one vmap over each device's runs (padded to a multiple of the device count).

    What is exact, and why: a run's numbers are a function of its own key, hyper-parameters and task, computed
    by the one compiled per-chunk loop body (the same HLO on every device, for every sweep size: neither the loop's
    trip count nor the block's length is something XLA can specialise on); vmap lanes are
    independent (no reduction runs across runs), so neither the run's neighbours in its chunk nor the number of
    chunks or devices enters its arithmetic. Hence, **on one machine, for a fixed ``chunk`` and dtype**, a run's
    numbers are bit-identical whatever the sweep around it, the device count, the padding or the executor
    (local or Ray) that made the call; the tests check this on bandit, linear_softmax and chain. With
    ``chunk=None`` (the default on accelerators) the vmap's width is the number of runs per device, so a run's
    last bits may depend on the sweep's size (on the CPU they did: chain from 8 runs up, linear_softmax when
    sharded); pass an integer chunk where that matters. What is *not* claimed: bit-identity across machines or CPU instruction sets (XLA compiles for the host's vector
    width, and a different width changes the order of float32 sums and the transcendental kernels), nor across
    ``chunk`` values (a different vmap width is a different program). Inverse-CDF sampling turns a last-bit
    difference into a different draw once a uniform falls within rounding of a cdf boundary, so across machines
    runs agree in distribution, not number for number; figures are regenerated on the machine that commits them.
    """
    sweep = {k: tuple(float(x) for x in v) for k, v in (sweep or {}).items()}
    cfg.check_sweep(sweep)
    lengths = {len(v) for v in sweep.values()}
    if len(lengths) > 1:
        raise ValueError(f"sweep values must all have the same length; got lengths {sorted(lengths)}")
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("simulate needs at least one seed")
    chosen = resolve_devices(devices)
    if isinstance(chunk, (int, np.integer)) and not isinstance(chunk, bool) and chunk == -1:
        chunk = default_chunk(chosen)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1):
        raise ValueError(f"chunk must be an integer >= 1 (runs per vmap) or None (one vmap per device); got {chunk!r}")
    n_cfg, n_seed = (lengths.pop() if lengths else 1), len(seeds)
    if n_cfg == 0:
        raise ValueError("sweep values are empty: give at least one configuration")
    # run r = (configuration r // n_seed, seed r % n_seed)
    hp = {k: jnp.repeat(jnp.asarray(v, dtype=dtype), n_seed) for k, v in sweep.items()}
    keys = jnp.tile(jnp.stack([jax.random.PRNGKey(s) for s in seeds]), (n_cfg, 1))
    n_runs = n_cfg * n_seed
    width = int(chunk) if chunk is not None else -(-n_runs // len(chosen))  # runs per vmap
    (keys, hp), chunks_per_device = _place((keys, hp), chosen, n_runs, width)
    first, logs = _compiled_sweep(task, cfg, dtype, chosen, width)(keys, hp, task_data(task),
                                                                    np.int32(chunks_per_device))
    used = tuple(sorted(str(d) for d in next(iter(logs.values())).sharding.device_set))
    first, logs = jax.device_get((first, logs))
    metrics = {}
    runs = lambda x: _unplace(np.asarray(x, dtype=np.float64), len(chosen), chunks_per_device, width, n_runs)  # noqa: E731 - a one-line local helper
    for name, values in logs.items():
        values = runs(values)
        values = values.reshape(n_cfg, n_seed, *values.shape[1:])  # (n_cfg, n_seeds, n_logs)
        head = np.full(values.shape[:2] + (1,), np.nan) if name in BATCH_METRICS else \
            runs(first[name]).reshape(n_cfg, n_seed, 1)
        metrics[name] = np.concatenate([head, values], axis=-1)
    return SimResult(task=task.name, config=cfg, seeds=seeds, sweep=sweep,
                     steps=np.arange(0, cfg.steps + 1, cfg.log_every), metrics=metrics, devices=used)
