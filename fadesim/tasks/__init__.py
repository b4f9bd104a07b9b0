"""Synthetic reasoning tasks with tunable difficulty distributions."""

from fadesim.tasks.bandit import Bandit, make_bandit
from fadesim.tasks.chain import Chain, make_chain
from fadesim.tasks.difficulty import (Beta, DifficultyDistribution, Empirical, Mixture, PointMass, as_distribution,
                                     fit_beta)
from fadesim.tasks.linear_softmax import LinearSoftmax, make_linear_softmax

TASKS = {"bandit": make_bandit, "linear_softmax": make_linear_softmax, "chain": make_chain}


def make_task(name: str, **kwargs):
    """Build a task by name: 'bandit', 'linear_softmax' or 'chain'."""
    if name not in TASKS:
        raise ValueError(f"unknown task '{name}'; known tasks: {', '.join(TASKS)}")
    return TASKS[name](**kwargs)


__all__ = ["Bandit", "Beta", "Chain", "DifficultyDistribution", "Empirical", "LinearSoftmax", "Mixture",
           "PointMass", "TASKS", "as_distribution", "fit_beta", "make_bandit", "make_chain", "make_linear_softmax", "make_task"]
