"""Scale-out: a sweep sharded over jax devices equals the one-device sweep bit for bit (simulate computes runs in
fixed chunks, so a run's arithmetic does not depend on its neighbours or the device count); Ray runs an experiment's units
as Ray tasks with the same table as the local executor, and a killed Ray driver resumes without duplicate
or missing rows."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fadesim.lab.units import Executor, run_units
from fadesim.lab.results import ResultStore
from fadesim.sim import SimConfig, simulate
from fadesim.tasks import make_task

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

SHARDED = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from fadesim.sim import SimConfig, simulate
    from fadesim.tasks import make_task
    assert jax.device_count() == 2, jax.devices()
    out = {}
    for name, kw in [("bandit", {"n_answers": 8}), ("linear_softmax", {"n_answers": 8, "width": 4}),
                     ("chain", {"length": 3, "vocab": 4})]:
        task = make_task(name, n_prompts=12, n_correct=2, difficulty="mixed", seed=0, **kw)
        cfg = SimConfig(advantage="sign_balanced", G=4, steps=12, log_every=4, optimizer="adam", lr=0.05)
        sweep = {"balance": [-1.0, 0.0, 1.0]}  # 3 configurations x 3 seeds = 9 runs: not a multiple of 2
        one = simulate(task, cfg, seeds=[0, 1, 2], sweep=sweep, devices=1)
        two = simulate(task, cfg, seeds=[0, 1, 2], sweep=sweep)  # default: every device
        same = sorted(one.metrics) == sorted(two.metrics) and all(
            np.array_equal(one.metrics[k], two.metrics[k], equal_nan=True) for k in one.metrics)
        close = all(np.allclose(one.metrics[k], two.metrics[k], rtol=1e-6, atol=1e-6, equal_nan=True)
                    for k in one.metrics)
        frames = one.to_frame().equals(two.to_frame())
        # 3 runs on 2 devices: one chunk of 2 per device (a block of exactly one chunk once fused differently);
        # without a sweep, and with a sweep of one seed (linear_softmax's last bits differed there)
        no_sweep, no_sweep_one = simulate(task, cfg, seeds=[3, 4, 5]), simulate(task, cfg, seeds=[3, 4, 5], devices=1)
        one_seed = simulate(task, cfg, seeds=[1], sweep=sweep)
        same_no_sweep = all(np.array_equal(no_sweep_one.metrics[k], no_sweep.metrics[k], equal_nan=True) and
                            np.array_equal(one.metrics[k][:, 1:2], one_seed.metrics[k], equal_nan=True)
                            for k in one.metrics)
        out[name] = {"same": same, "close": close, "frames": frames, "same_no_sweep": same_no_sweep, "one": list(one.devices),
                     "two": list(two.devices), "shape": list(two.metrics["entropy"].shape)}
    try:
        simulate(task, cfg, seeds=[0], devices=3)
        out["too_many"] = "no error"
    except ValueError as err:
        out["too_many"] = str(err)
    print(json.dumps(out))
""")


@pytest.mark.heavy
def test_sharded_sweep_equals_the_one_device_sweep_on_two_virtual_devices():
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("bandit", "linear_softmax", "chain"):
        got = out[name]
        # every task, bit for bit: the same per-chunk program runs on each device (simulate's docstring)
        assert got["same"] and got["frames"] and got["same_no_sweep"], (name, got)
        assert got["one"] == ["TFRT_CPU_0"] or len(got["one"]) == 1, got
        assert len(got["two"]) == 2, f"the sharded run was placed on {got['two']}, not on both devices"
        assert got["shape"] == [3, 3, 4], got  # padding (one run) dropped; steps 0, 4, 8, 12
    assert "devices=3" in out["too_many"] and "2 device" in out["too_many"], out["too_many"]


@pytest.mark.parametrize("name, kw", [("bandit", {"n_answers": 8}), ("linear_softmax", {"n_answers": 8, "width": 4}),
                                      ("chain", {"length": 3, "vocab": 4})])
def test_a_run_gives_the_same_bits_alone_as_in_any_sweep_around_it(name, kw):
    # before runs were chunked, one vmap over all runs made a run's last float32 bit depend on how many shared it
    # (chain from 8 runs up, linear_softmax under sharding on an AVX2 CPU); now a run is computed by the same
    # chunk program (RUN_CHUNK runs) whether it is alone (padded), the 2nd of 9 or the 2nd of 60
    task = make_task(name, n_prompts=12, n_correct=2, difficulty="mixed", seed=0, **kw)
    cfg = SimConfig(advantage="sign_balanced", G=4, steps=12, log_every=4, optimizer="adam", lr=0.05)
    alone = simulate(task, cfg, seeds=[1], sweep={"balance": [0.5]}, devices=1)
    nine = simulate(task, cfg, seeds=[0, 1, 2], sweep={"balance": [-1.0, 0.5, 1.0]}, devices=1)
    sixty = simulate(task, cfg, seeds=list(range(20)), sweep={"balance": [-1.0, 0.5, 1.0]}, devices=1)
    for k in alone.metrics:
        np.testing.assert_array_equal(nine.metrics[k][1:2, 1:2], alone.metrics[k], err_msg=k)
        np.testing.assert_array_equal(sixty.metrics[k][:, :3], nine.metrics[k], err_msg=k)


def test_chunk_must_be_a_positive_integer():
    task = make_task("bandit", n_prompts=4, n_answers=8, n_correct=2, seed=0)
    cfg = SimConfig(advantage="grpo", G=4, steps=2, log_every=1)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="chunk must be an integer >= 1"):
            simulate(task, cfg, chunk=bad)
    # a different chunk is a different program: equal in distribution, so only float32-close here
    a, b = simulate(task, cfg, seeds=[0, 1, 2], chunk=1), simulate(task, cfg, seeds=[0, 1, 2], chunk=None)
    for k in a.metrics:
        np.testing.assert_allclose(a.metrics[k], b.metrics[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_device_requests_that_cannot_be_met_are_clear_errors():
    import jax

    task = make_task("bandit", n_prompts=4, n_answers=8, n_correct=2, seed=0)
    cfg = SimConfig(advantage="grpo", G=4, steps=2, log_every=1)
    n = jax.device_count()
    with pytest.raises(ValueError, match=f"devices={n + 1} but jax sees {n} device"):
        simulate(task, cfg, devices=n + 1)
    with pytest.raises(ValueError, match="devices=0"):
        simulate(task, cfg, devices=0)
    with pytest.raises(ValueError, match="empty"):
        simulate(task, cfg, devices=[])
    with pytest.raises(TypeError, match="devices must be"):
        simulate(task, cfg, devices=True)
    with pytest.raises(TypeError, match="devices must be"):
        simulate(task, cfg, devices=1.5)
    res = simulate(task, cfg, devices=jax.devices()[:1])
    assert len(res.devices) == 1


def test_unknown_executor_and_local_ray_settings_are_errors(tmp_path):
    import sign_axis

    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        Executor("dask")
    with pytest.raises(ValueError, match="Ray settings"):
        Executor("local", address="auto")
    with pytest.raises(ValueError, match="num_cpus"):
        Executor("ray", num_cpus=0)
    with pytest.raises(ValueError, match="unknown executor"):
        run_units([{"u": 1}], lambda spec: pd.DataFrame({"x": [1]}), ResultStore(tmp_path / "r"), "d", "dask")
    assert not list((tmp_path / "r" / "units").iterdir())
    with pytest.raises(SystemExit):
        sign_axis.main(["--executor", "dask", "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_ray_missing_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ImportError, match=r"\.\[ray\]"):
        run_units([{"u": 1}], lambda spec: pd.DataFrame({"x": [1]}), ResultStore(tmp_path), "d", "ray")
    assert not list((tmp_path / "units").iterdir())


def test_a_ray_address_that_does_not_answer_is_an_error_before_anything_is_written(tmp_path):
    pytest.importorskip("ray")
    import sign_axis

    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}' does not answer"):
        sign_axis.main(["--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"),
                        "--figures", str(tmp_path / "fig")])
    assert not (tmp_path / "out").exists() and not (tmp_path / "fig").exists()
    with pytest.raises(ValueError, match="is not 'auto'"):
        Executor("ray", address="nonsense").connect()


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    import warnings

    with warnings.catch_warnings():  # Ray starts its processes with fork + exec, which is safe
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _where(spec):
    import ray

    ctx = ray.get_runtime_context()
    return pd.DataFrame({"u": [spec["u"]], "pid": [os.getpid()], "task": [ctx.get_task_id()]})


def _never(spec):
    raise AssertionError(f"unit {spec} ran again although it is on disk")


@pytest.mark.integration
@pytest.mark.xdist_group("ray")
def test_ray_units_run_as_ray_tasks_each_in_a_worker(ray_cluster, tmp_path):
    specs = [{"u": i} for i in range(4)]
    store = ResultStore(tmp_path / "where")
    where = run_units(specs, _where, store, "where", Executor("ray"))
    assert list(where["u"]) == [0, 1, 2, 3]
    assert where["task"].notna().all() and where["task"].nunique() == 4  # one Ray task per unit
    assert os.getpid() not in set(where["pid"])  # computed in Ray workers, not in the driver
    again = run_units(specs, _never, store, "where", Executor("ray"))  # all on disk: nothing runs
    pd.testing.assert_frame_equal(where, again, check_exact=True)


@pytest.mark.slow  # in the default run: the test above (units dispatched as Ray tasks, the table in the specs'
# order, nothing rerun) and test_a_run_gives_the_same_bits_alone_as_in_any_sweep_around_it (a run's bits do not
# depend on the sweep around it), which together give this equality; jax in fresh Ray workers costs about a minute
@pytest.mark.integration
@pytest.mark.xdist_group("ray")
def test_an_experiment_table_through_ray_equals_the_local_one(ray_cluster, tmp_path):
    import sign_axis

    s = sign_axis.Settings(n_balances=3, seeds=2, regimes=("toy",), tasks=("bandit",), n_prompts=8, n_answers=8,
                           steps=8, log_every=4)
    local = sign_axis.run_sweep(s, ResultStore(tmp_path / "local"))
    remote = sign_axis.run_sweep(s, ResultStore(tmp_path / "ray"), Executor("ray"))
    pd.testing.assert_frame_equal(local, remote, check_exact=True)  # bit for bit: the same chunk programs
    again = sign_axis.run_sweep(s, ResultStore(tmp_path / "ray"), Executor("ray"))  # all on disk: nothing runs
    pd.testing.assert_frame_equal(local, again, check_exact=True)


DRIVER = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from fadesim.lab.units import Executor, run_units
    from fadesim.lab.results import ResultStore

    def compute(spec):
        time.sleep(0.4)
        return pd.DataFrame({"u": [spec["u"]] * 3, "step": [0, 1, 2], "value": [spec["u"] * 10 + i for i in range(3)]})

    specs = [{"u": i} for i in range(16)]
    ray = Executor("ray", address=sys.argv[3])  # join the running cluster at that address
    table = run_units(specs, compute, ResultStore(sys.argv[1]), "units", ray)
    table.to_csv(sys.argv[2], index=False)
""")


@pytest.mark.integration
@pytest.mark.xdist_group("ray")
def test_a_killed_ray_driver_resumes_without_duplicate_or_missing_rows(ray_cluster, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    store, table = tmp_path / "store", tmp_path / "table.csv"
    units = store / "units"
    # a driver on the module's cluster, in its own session: the kill takes the driver, and with it its job's tasks
    # (a cluster of its own would cost a cluster start, about 20 s on 2 cores)
    address = ray_cluster.get_runtime_context().gcs_address
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(table), address], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and len(list(units.glob("*.csv"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(units.glob("*.csv")))
    assert 3 <= done < 16, f"the kill landed after {done} of 16 units"
    for f in units.glob("*.csv"):
        assert len(pd.read_csv(f)) == 3  # every unit on disk is complete
    # the rerun: a new driver on the surviving cluster
    rerun = subprocess.run([sys.executable, str(script), str(store), str(table), address], capture_output=True,
                           text=True, timeout=240)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    got = pd.read_csv(table)
    assert len(got) == 48 and not got.duplicated(["u", "step"]).any()
    assert sorted(got.u.unique()) == list(range(16))
    np.testing.assert_array_equal(got.value, [u * 10 + i for u in range(16) for i in range(3)])
