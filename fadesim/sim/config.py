"""Simulation configuration: one frozen dataclass, validated on construction."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from fadesim.advantages.registry import info
from fadesim.sim.optim import OPTIMIZERS

#: hyper-parameters of the update (not of the advantage) that a sweep may vary under vmap
UPDATE_HYPER_PARAMETERS = ("lr", "kl_beta", "eps_low", "eps_high", "tie")


@dataclass(frozen=True)
class SimConfig:
    """One training run's settings (the task is passed separately)."""

    advantage: str = "grpo"
    advantage_params: Mapping[str, Any] = field(default_factory=dict)
    G: int = 16  # rollouts per prompt
    steps: int = 200
    log_every: int = 10
    optimizer: str = "adam"
    lr: float = 0.05
    ppo: bool = False  # clipped importance-ratio objective (eps_low / eps_high as in DAPO, 2503.14476)
    epochs: int = 1  # inner updates per batch of rollouts
    eps_low: float = 0.2
    eps_high: float = 0.2
    kl_beta: float = 0.0  # KL(pi || pi_0) penalty, score-function estimator
    # adam_tied only: the weight of the per-prompt logits' squared gradient norm in each shared parameter's second
    # moment (``fadesim.sim.optim.adam_tied_update``; 0 is adam)
    tie: float = 1.0
    entropy_decay: float = 0.9  # EMA smoothing of the entropy signal for schedule-driven advantages
    floor: float = 0.01  # probability above which a correct answer counts as "kept" (diversity)
    extra_pass_at_k: tuple[int, ...] = ()  # pass@k logged besides k = 1, 2, 4, ..., 1024 (e.g. a paper's k = 5, 100)

    def __post_init__(self) -> None:
        entry = info(self.advantage)  # KeyError naming the known advantages
        entry.bind(**dict(self.advantage_params))  # ValueError for unknown parameters
        if self.G < max(2, entry.min_group_size):
            raise ValueError(f"G = {self.G} is too small for '{self.advantage}' (needs G >= {max(2, entry.min_group_size)})")
        if self.steps < 1 or self.log_every < 1 or self.steps % self.log_every:
            raise ValueError(f"steps ({self.steps}) must be a positive multiple of log_every ({self.log_every})")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer '{self.optimizer}'; known: {', '.join(OPTIMIZERS)}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1; got {self.epochs}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive; got {self.lr}")
        if self.eps_low < 0 or self.eps_high < 0 or self.kl_beta < 0 or not 0 <= self.tie < float("inf"):
            raise ValueError("eps_low, eps_high, kl_beta and tie must be finite and >= 0")
        if any(isinstance(k, bool) or int(k) != k or k < 1 for k in self.extra_pass_at_k):
            raise ValueError(f"extra_pass_at_k must be positive integers; got {self.extra_pass_at_k!r}")
        if not 0.0 <= self.entropy_decay < 1.0:
            raise ValueError(f"entropy_decay must lie in [0, 1); got {self.entropy_decay}")

    def replace(self, **changes: Any) -> "SimConfig":
        return dataclasses.replace(self, **changes)

    def check_sweep(self, sweep: Mapping[str, Any]) -> None:
        """Sweepable names: update hyper-parameters and the advantage's numeric parameters."""
        adv_params = info(self.advantage).params
        for name in sweep:
            if name not in UPDATE_HYPER_PARAMETERS and name not in adv_params:
                raise ValueError(
                    f"cannot sweep '{name}': sweepable are {list(UPDATE_HYPER_PARAMETERS)} and the parameters "
                    f"of '{self.advantage}' ({sorted(adv_params)})")
            if name == "K":
                raise ValueError("K (pass@K order) fixes array sizes and cannot be swept under vmap; run one config per K")
        # the values are checked here, before jit traces them (inside the compiled sweep they cannot be read)
        entry = info(self.advantage)
        entry.check_params(**{k: v for k, v in sweep.items() if k in adv_params})
        for name in ("lr", "kl_beta", "eps_low", "eps_high", "tie"):
            values = [float(v) for v in sweep.get(name, ())]
            if any(not (v > 0 if name == "lr" else v >= 0) or v != v or v == float("inf") for v in values):
                raise ValueError(f"sweep: every {name} must be a finite number {'> 0' if name == 'lr' else '>= 0'}; "
                                 f"got {values}")
