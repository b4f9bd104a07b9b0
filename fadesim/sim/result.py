"""Simulation results: metric arrays (configs x seeds x logged steps) and their tidy-table form."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fadesim.sim.config import SimConfig
from fadesim.sim.step import BATCH_METRICS


@dataclass(frozen=True)
class SimResult:
    task: str
    config: SimConfig
    seeds: tuple[int, ...]
    sweep: Mapping[str, tuple[float, ...]]  # name -> one value per configuration (zipped)
    steps: np.ndarray  # (n_logs,) update counts: 0, log_every, ..., steps
    metrics: Mapping[str, np.ndarray]  # name -> (n_configs, n_seeds, n_logs)
    devices: tuple[str, ...] = ()  # the jax devices the runs were computed on (simulate); () for the reference

    @property
    def n_configs(self) -> int:
        return len(next(iter(self.sweep.values()))) if self.sweep else 1

    def metric(self, name: str) -> np.ndarray:
        if name not in self.metrics:
            raise KeyError(f"no metric '{name}'; logged metrics: {', '.join(sorted(self.metrics))}")
        return self.metrics[name]

    def to_frame(self, extra: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """One row per (configuration, seed, logged step), with the run's full config as columns."""
        cfg = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in dataclasses.asdict(self.config).items()}
        cfg["advantage_params"] = repr(sorted(cfg["advantage_params"].items()))
        cfg["extra_pass_at_k"] = ",".join(str(k) for k in cfg["extra_pass_at_k"])  # one cell, not a column of k
        n_cfg, n_seed, n_log = next(iter(self.metrics.values())).shape
        idx_cfg, idx_seed, idx_log = np.meshgrid(np.arange(n_cfg), np.arange(n_seed), np.arange(n_log), indexing="ij")
        data: dict[str, Any] = {"task": self.task, **cfg, **(extra or {})}
        data["config_index"] = idx_cfg.ravel()
        data["seed"] = np.asarray(self.seeds)[idx_seed.ravel()]
        data["step"] = self.steps[idx_log.ravel()]
        for name, values in self.sweep.items():
            data[name] = np.asarray(values)[idx_cfg.ravel()]
        clash = sorted(set(self.metrics) & set(data))
        if clash:
            raise ValueError(f"metric name(s) {clash} collide with config or sweep columns")
        for name, values in self.metrics.items():
            data[name] = np.asarray(values, dtype=np.float64).ravel()
        return pd.DataFrame(data)


def stack_logs(first: Mapping[str, Any], later: list[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Rows [step 0, log 1, ...] -> name -> (n_logs,), batch metrics NaN at step 0."""
    names = list(later[0]) if later else list(first)
    out = {}
    for name in names:
        head = np.nan if name in BATCH_METRICS else np.asarray(first[name], dtype=np.float64)
        out[name] = np.array([head] + [np.asarray(row[name], dtype=np.float64) for row in later])
    return out
