"""The task interface the simulator calls (docs/DESIGN.md section 6): what a new rung implements.

bandit, linear_softmax, chain, neural and sharpen satisfy it (``tests/test_task_protocol.py`` checks the methods
exist and return what is promised). Every method takes the array namespace ``xp`` (numpy or jax.numpy), so one
implementation serves the numpy reference and the jax simulator; a task's own arrays are numpy constants, passed to
the compiled program as arguments (``fadesim.sim.vectorized.task_data``).

Optional beyond the protocol: ``constrain(params, xp) -> params``, the parameters projected onto the task's
constraints, which ``fadesim.sim.step.train_step`` applies after every optimizer step where a task defines it (sharpen
with ``floor_sharpness``: s >= 0); the optimizer's moments are not touched.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

#: the per-prompt exact quantities ``Task.exact`` returns, each of shape (n_prompts,)
EXACT_KEYS = ("pass_rate", "entropy", "distinct_correct", "correct_entropy", "logit_norm")
#: what ``Task.rollout`` returns; optionally also ``token_entropy`` (per sampled token, sequence tasks) and
#: ``group_weight`` ((N,): N / B on the B groups a prompt mini-batch drew, 0 elsewhere; tasks with ``prompts_per_step``)
ROLLOUT_KEYS = ("actions", "logprobs", "rewards")
OPTIONAL_ROLLOUT_KEYS = ("token_entropy", "group_weight")


@runtime_checkable
class Task(Protocol):
    """A simulated prompt set with a policy over answers (or token sequences) and binary rewards."""

    name: str
    #: prompts one step draws and trains on (0: every training prompt; a mini-batch task returns ``group_weight``)
    prompts_per_step: int

    @property
    def n_prompts(self) -> int: ...

    def evaluated(self) -> Any:
        """The (N,) bool mask of the prompts held out of training, on which every logged metric is measured; None
        where the task trains and measures on every prompt."""

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        """The trainable parameters at the start (the calibrated initial policy)."""

    def uniform_shape(self, G: int) -> tuple[int, ...]:
        """Shape of one step's uniforms for G rollouts per prompt (sampling is by inverse CDF from them)."""

    def rollout(self, params: dict[str, Any], u: Any, xp: Any) -> dict[str, Any]:
        """G rollouts per prompt from uniforms ``u``: ``actions`` (N, G) answers or (N, G, T) token sequences,
        ``logprobs`` and ``rewards`` (N, G), and ``token_entropy`` for sequence tasks."""

    def logprob(self, params: dict[str, Any], actions: Any, xp: Any) -> Any:
        """log pi(actions) under ``params``, (N, G)."""

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        """The gradient of (1/(G N)) sum w log pi(a) with respect to each parameter (analytic)."""

    def exact(self, params: dict[str, Any], xp: Any, floor: float = 0.01) -> dict[str, Any]:
        """Per-prompt exact quantities (``EXACT_KEYS``), each (N,)."""

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        """Scalars describing the parameters (weight norm, effective rank, sharpness; ``{}`` where none)."""


@runtime_checkable
class AnswerSpaceTask(Task, Protocol):
    """A task whose policy is a softmax over a fixed answer set per prompt (bandit, linear_softmax, sharpen): its
    logits are what the exact entropy signal and the crossing theory read."""

    def logits(self, params: dict[str, Any], xp: Any) -> Any:
        """(N, K) logits of the current policy."""


def evaluated(task: Task) -> Any:
    """The (N,) mask of the prompts a task holds out of training and measures on (``task.evaluated()``, e.g.
    ``make_sharpen(eval_prompts=M)``), or None where it trains and measures on every prompt."""
    return task.evaluated()


def groups_per_step(task: Task) -> int:
    """How many groups one training step's batch holds: the task's prompt mini-batch where it draws one
    (``make_sharpen(prompts_per_step=B)``), else every prompt it trains on (all but ``evaluated``'s)."""
    held = task.evaluated()
    return int(task.prompts_per_step or task.n_prompts - (0 if held is None else int(np.sum(held))))

