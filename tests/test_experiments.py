"""Experiment scripts: verdict lines, figures, and kill-and-resume of a sweep."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

TINY = ["--n-balances", "5", "--seeds", "3", "--n-prompts", "16", "--n-answers", "8", "--steps", "40",
        "--log-every", "10", "--width", "4"]


def test_sign_axis_quick_core_prints_verdicts_and_figures(tmp_path, capsys):
    import sign_axis

    assert sign_axis.main(TINY + ["--out", str(tmp_path / "res"), "--figures", str(tmp_path / "fig")]) == 0
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if "CONFIRMED" in line]
    assert len(verdicts) == 2 * (2 + 5)  # 2 phases x (bandit: entropy, logit norm; linear: entropy + 4 geometry)
    assert all(("NOT CONFIRMED" in v) or (": CONFIRMED" in v) for v in verdicts)
    assert "E[M+]" in out and "ESS/group" in out
    for name in ("sign_axis_tradeoff_quick", "sign_axis_geometry_quick", "sign_axis_entropy_quick"):
        png = tmp_path / "fig" / f"{name}.png"
        assert png.stat().st_size > 10_000
        assert (tmp_path / "fig" / f"{name}.csv").exists()


def test_figure_renders_with_labelled_axes(tmp_path):
    import matplotlib.pyplot as plt
    import numpy as np

    from fadesim.plots import tradeoff_figure

    df = pd.DataFrame({"balance": np.repeat([-1.0, 0.0, 1.0], 3), "seed": np.tile([0, 1, 2], 3),
                       "entropy": np.linspace(1, 2, 9), "task": "bandit"})
    captured = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, *args, **kwargs):
        captured["labels"] = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
        return real_savefig(fig, *args, **kwargs)

    plt.Figure.savefig = spy
    try:
        path = tradeoff_figure(df, x="balance", x_label="sign balance b", hue="task",
                               panels=[("entropy", "entropy (nats)")], title="t", path=tmp_path / "f.png")
    finally:
        plt.Figure.savefig = real_savefig
    assert captured["labels"] == [("sign balance b", "entropy (nats)")]
    image = plt.imread(path)
    assert image.shape[0] > 100 and image.std() > 0.01  # rendered something, not a blank canvas


def _run(args, **kw):
    return subprocess.Popen([sys.executable, str(ROOT / "experiments" / "sign_axis.py"), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def test_killed_sweep_resumes_to_exactly_the_uninterrupted_rows(tmp_path):
    # units heavy enough (~0.3 s each once compiled) that the kill reliably lands mid-sweep
    args = TINY + ["--seeds", "6", "--n-prompts", "64", "--steps", "400", "--log-every", "100",
                   "--figures", str(tmp_path / "fig")]
    clean = tmp_path / "clean"
    assert _run(args + ["--out", str(clean)]).wait(timeout=600) == 0
    killed = tmp_path / "killed"
    proc = _run(args + ["--out", str(killed)])
    units = killed / "quick" / "units"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(units.glob("*.csv"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(list(units.glob("*.csv")))
    assert 2 <= done < 12, f"kill landed after {done} of 12 units"
    for f in units.glob("*.csv"):  # every unit on disk is complete and readable
        pd.read_csv(f)
    assert _run(args + ["--out", str(killed)]).wait(timeout=600) == 0
    a = pd.concat([pd.read_csv(f) for f in sorted((clean / "quick" / "units").glob("*.csv"))])
    b = pd.concat([pd.read_csv(f) for f in sorted(units.glob("*.csv"))])
    assert len(list(units.glob("*.tmp"))) == 0
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
