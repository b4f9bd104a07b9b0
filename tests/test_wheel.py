"""The package stands on its own: a wheel built from the project's files, installed into a fresh virtual environment
outside the checkout, carries its data (``fadesim.data``, declared as package data), so it builds the llm and math
regimes' tasks on their published base curves and runs ``fadesim predict`` with its defaults (the shipped curves and
methods, the chosen family) through its declared console entry point."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.heavy  # a wheel build (about 10 s) and a short simulation in another interpreter

CHECK = r"""
import json, sys
from importlib.metadata import entry_points
import fadesim
from fadesim.tasks import make_task, task_pass_at_k
from fadesim.tasks.regimes import math_calibration, llm_calibration
out = {"file": fadesim.__file__}
llm = make_task("bandit", regime="llm", n_prompts=64, n_answers=256, n_correct=8)
out["llm_pass@1"] = task_pass_at_k(llm, [1])[1]
out["llm_target@1"] = llm_calibration().target[1]
math = make_task("sharpen", regime="math")
out["math_pass@1"] = task_pass_at_k(math, [1])[1]
out["math_target@1"] = math_calibration().target[1]
main = entry_points(group="console_scripts")["fadesim"].load()
out["predict"] = main(["predict", "--setting", "Qwen2.5-Math-7B / MATH", "--advantages", "grpo,nsr", "--steps", "20",
                       "--seeds", "2", "--log-every", "10", "--out", "predict.png"])
print("RESULT " + json.dumps(out))
"""


def test_the_wheel_carries_its_data_and_runs_outside_the_checkout(tmp_path):
    source = tmp_path / "source"  # only what the wheel is built from: no checkout files can leak into it
    shutil.copytree(ROOT / "fadesim", source / "fadesim", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                    str(source)], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = wheels.glob("fadesim-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    # the dependencies (numpy, jax, torch, ...) from this interpreter's site-packages, behind the installed wheel: a
    # plain path line, so the checkout's editable-install hook there is not run
    deps = [p for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]} if p != str(site)]
    (site / "fadesim_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    # the suite's XLA compile flags and jax cache (speed only, tests/conftest.py) travel; nothing of the checkout does
    speed = {k: os.environ[k] for k in ("XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                                         "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES") if k in os.environ}
    done = subprocess.run([str(python), "-c", CHECK], cwd=run, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(run), "JAX_PLATFORMS": "cpu",
                               "MPLBACKEND": "Agg", **speed})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert Path(result["file"]).resolve().is_relative_to(site.resolve())  # the wheel's copy, not the checkout's
    assert result["predict"] == 0 and (run / "predict.png").is_file() and (run / "predict.csv").is_file()
    assert abs(result["llm_pass@1"] - result["llm_target@1"]) < 0.02
    assert abs(result["math_pass@1"] - result["math_target@1"]) < 0.02
    names = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel)], capture_output=True, text=True).stdout
    assert "fadesim/data/literature/curves.csv" in names and "fadesim/data/pass_at_k_codex_apps.csv" in names
