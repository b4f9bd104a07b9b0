"""Every task family satisfies fadesim.tasks.Task and returns what the protocol promises."""

import numpy as np
import pytest

from fadesim.tasks import Task, make_task
from fadesim.tasks.protocol import EXACT_KEYS, ROLLOUT_KEYS

FAMILIES = {"bandit": dict(n_prompts=6, n_answers=8, n_correct=2), "linear_softmax": dict(n_prompts=6, n_answers=8,
            n_correct=2, width=4), "chain": dict(n_prompts=6, length=2, vocab=3, n_correct=2),
            "neural": dict(n_prompts=6, length=2, vocab=3, width=8), "sharpen": dict(n_prompts=6, n_answers=8,
            n_correct=2)}


@pytest.mark.parametrize("name", FAMILIES)
def test_each_family_is_a_task_and_keeps_the_protocols_promises(name):
    task = make_task(name, seed=0, **FAMILIES[name])
    assert isinstance(task, Task)
    params = task.init_params(np, np.float64)
    G = 4
    u = np.random.default_rng(0).random(task.uniform_shape(G))
    ro = task.rollout(params, u, np)
    assert set(ROLLOUT_KEYS) <= set(ro)
    assert np.shape(ro["actions"])[:2] == (task.n_prompts, G)  # (N, G) answers or (N, G, T) token sequences
    for key in ("logprobs", "rewards"):
        assert np.shape(ro[key]) == (task.n_prompts, G), key
    assert set(np.unique(ro["rewards"])) <= {0.0, 1.0}
    np.testing.assert_allclose(task.logprob(params, ro["actions"], np), ro["logprobs"], rtol=1e-12)
    grads = task.score(params, ro["actions"], np.ones((task.n_prompts, G)), np)
    assert set(grads) == set(params) and all(np.shape(grads[k]) == np.shape(params[k]) for k in params)
    ex = task.exact(params, np)
    assert set(EXACT_KEYS) <= set(ex) and all(np.shape(ex[k]) == (task.n_prompts,) for k in EXACT_KEYS)
    assert np.all((ex["pass_rate"] >= 0) & (ex["pass_rate"] <= 1))
    assert isinstance(task.geometry(params, np), dict) and isinstance(task.name, str)


def test_an_object_missing_a_method_is_not_a_task():
    class Half:
        name = "half"
        n_prompts = 1

        def init_params(self, xp, dtype):
            return {}

    assert not isinstance(Half(), Task)
