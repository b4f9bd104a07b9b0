"""Synthetic reasoning tasks with tunable difficulty distributions."""

from fadesim.tasks.bandit import Bandit, make_bandit
from fadesim.tasks.chain import Chain, make_chain
from fadesim.tasks.calibrate import Calibration, calibrate, load_pass_at_k, task_pass_at_k
from fadesim.tasks.pass_rates import (Beta, DifficultyDistribution, Empirical, LogUniform, Mixture, PointMass,
                                     Stratified, as_distribution, fit_beta)
from fadesim.tasks.linear_softmax import LinearSoftmax, make_linear_softmax
from fadesim.tasks.neural import Neural, make_neural
from fadesim.tasks.protocol import Task
from fadesim.tasks.sharpen import Sharpen, make_sharpen
from fadesim.tasks.regimes import REGIMES, regime_kwargs

TASKS = {"bandit": make_bandit, "linear_softmax": make_linear_softmax, "chain": make_chain, "neural": make_neural,
         "sharpen": make_sharpen}


def make_task(name: str, regime: str | None = None, **kwargs):
    """Build a task by name: 'bandit', 'linear_softmax', 'chain', 'neural' (the shared-weights rung) or 'sharpen'
    (shared sharpening: the rung whose pass@k can cross below the base); ``regime`` ('toy' or 'llm', see
    ``fadesim.tasks.regimes``) supplies the answer space, prior and difficulty, which ``kwargs`` override."""
    if name not in TASKS:
        raise ValueError(f"unknown task '{name}'; known tasks: {', '.join(TASKS)}")
    if regime is not None:
        kwargs = {**regime_kwargs(regime, name), **kwargs}
    return TASKS[name](**kwargs)


__all__ = ["Bandit", "Beta", "Calibration", "Chain", "DifficultyDistribution", "Empirical", "LinearSoftmax",
           "LogUniform", "Mixture", "Neural", "PointMass", "REGIMES", "Sharpen", "Stratified", "TASKS", "Task", "as_distribution", "calibrate",
           "fit_beta", "load_pass_at_k", "make_bandit", "make_chain", "make_linear_softmax", "make_neural", "make_sharpen", "make_task",
           "regime_kwargs", "task_pass_at_k"]
