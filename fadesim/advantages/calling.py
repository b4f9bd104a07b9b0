"""How every trainer calls an advantage: one rule for the simulator, the bridge and the plug-ins.

A trainer, not the advantage, computes the training signals. ``AdvantageCall`` binds a registered advantage's
hyper-parameters and passes ``signals`` (FADE's entropy ratio) and ``logprobs`` (unlikeliness' ranks) only to the
advantages whose registry entry reads them, refusing a call that lacks one they need; ``smoothed_entropy`` is the
entropy signal's moving average (the first value starts it); ``mass_metrics`` is the row of the decomposition every
trainer logs under the same names (masses per group, as the simulator logs them). Array-API throughout, so the
simulator's jitted step uses the same code on jax arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from fadesim.advantages.registry import Advantage, info


@dataclass(frozen=True)
class AdvantageCall:
    """``name`` with ``params`` bound (each checked against its domain at construction); call it as
    ``call(rewards, signals=..., logprobs=..., mask=..., **overrides)``."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "_fn", self.entry.bind(**self.params))  # the registry's function, params bound

    @property
    def entry(self) -> Advantage:
        return info(self.name)

    def __call__(self, rewards: Any, *, signals: Mapping[str, Any] | None = None, logprobs: Any = None,
                 **kwargs: Any) -> Any:
        entry = self.entry
        if entry.needs_signals:
            if signals is None:
                raise ValueError(f"advantage '{self.name}' reads the training signals {entry.needs_signals}; the "
                                 "trainer passed none")
            kwargs["signals"] = signals
        if entry.needs_logprobs:
            if logprobs is None:
                raise ValueError(f"advantage '{self.name}' reads per-rollout log-probs; the trainer passed none")
            kwargs["logprobs"] = logprobs
        return self._fn(rewards, **kwargs)  # type: ignore[attr-defined]


def smoothed_entropy(previous: Any, entropy: Any, decay: float) -> Any:
    """The entropy signal's exponential moving average: ``entropy`` itself when there is no previous value, else
    decay * previous + (1 - decay) * entropy."""
    if previous is None:
        return entropy
    return decay * previous + (1.0 - decay) * entropy


def mass_metrics(decomposition: Any, n_groups: int) -> dict[str, Any]:
    """The decomposition's logged row: positive_mass and negative_mass (totals per group), sign_balance, hardness,
    ess; arrays stay arrays (the caller converts where it logs floats)."""
    d = decomposition
    return {"positive_mass": d.total_positive / n_groups, "negative_mass": d.total_negative / n_groups,
            "sign_balance": d.balance, "hardness": d.hardness, "ess": d.ess}
