"""The neural rung (fadesim.tasks.neural): shared weights over token sequences, exact metrics, the hand-written
score against jax autodiff and finite differences, numpy = jax, and bad input."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fadesim.sim import SimConfig, simulate
from fadesim.tasks import make_task
from fadesim.tasks.neural import answer
from tests.simulators import assert_jax_equals_numpy

SMALL = dict(n_prompts=6, length=3, vocab=4, width=5, hidden=7, init_scale=2.0, seed=1)


def _rollout_and_weights(task, G=5, seed=0):
    rng = np.random.default_rng(seed)
    params = task.init_params(np, np.float64)
    ro = task.rollout(params, rng.random(task.uniform_shape(G)), np)
    return params, ro, rng.standard_normal((task.n_prompts, G))


def test_rules_give_the_stated_answers():
    prompts = np.array([[1, 2, 3], [3, 3, 0]])
    np.testing.assert_array_equal(answer(prompts, "modsum", 4), [[1, 3, 2], [3, 2, 2]])
    np.testing.assert_array_equal(answer(prompts, "copy", 4), prompts)
    np.testing.assert_array_equal(answer(prompts, "reverse", 4), [[3, 2, 1], [0, 3, 3]])
    task = make_task("neural", **SMALL)
    np.testing.assert_array_equal(task.targets[:, 0], answer(task.prompts, "modsum", 4))


def test_score_equals_jax_autodiff_of_the_sampled_surrogate_and_a_finite_difference():
    task = make_task("neural", **SMALL)
    params, ro, w = _rollout_and_weights(task)
    score = task.score(params, ro["actions"], w, np)
    with jax.enable_x64(True):
        def surrogate(p):
            return jnp.mean(jnp.mean(jnp.asarray(w) * task.logprob(p, jnp.asarray(ro["actions"]), jnp), axis=1))

        auto = jax.grad(surrogate)({k: jnp.asarray(v) for k, v in params.items()})
    assert set(score) == set(params)
    for k in params:
        np.testing.assert_allclose(score[k], np.asarray(auto[k]), rtol=1e-10, atol=1e-12, err_msg=k)

    def surrogate_np(p):
        return np.mean(np.mean(w * task.logprob(p, ro["actions"], np), axis=1))

    h = 1e-6
    rng = np.random.default_rng(3)
    for k in params:  # two random coordinates of every parameter, central differences
        for _ in range(2):
            idx = tuple(rng.integers(0, s) for s in params[k].shape)
            up, down = ({**params, k: params[k].copy()} for _ in range(2))
            up[k][idx] += h
            down[k][idx] -= h
            fd = (surrogate_np(up) - surrogate_np(down)) / (2 * h)
            assert abs(fd - score[k][idx]) < 1e-7, (k, idx, fd, score[k][idx])


def test_exact_metrics_equal_enumeration_of_every_sequence():
    task = make_task("neural", **SMALL)
    params = task.init_params(np, np.float64)
    ex = task.exact(params, np)
    N, T, V = task.n_prompts, task.length, task.vocab
    seqs = np.array(list(itertools.product(range(V), repeat=T)))  # all V^T outputs
    acts = np.broadcast_to(seqs[None], (N, len(seqs), T))
    prob = np.exp(task.logprob(params, acts, np))  # (N, V^T)
    np.testing.assert_allclose(prob.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(ex["pass_rate"], (prob * task.reward(acts, np)).sum(1), rtol=1e-12)
    # expected token entropy along the policy's trajectories: sum_s P(s) (1/T) sum_t H(pi(. | n, t, s_{t-1}))
    logits = task.logits_table(params, np)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    H = -(np.exp(logp) * logp).sum(-1)  # (N, T, V_prev)
    prev = np.concatenate([np.zeros((len(seqs), 1), dtype=int), seqs[:, :-1]], axis=1)  # (V^T, T)
    per_seq = H[:, np.arange(T)[None, :], prev].mean(-1)  # (N, V^T)
    np.testing.assert_allclose(ex["entropy"], (prob * per_seq).sum(1), rtol=1e-12)
    centred = logits - logits.mean(-1, keepdims=True)
    np.testing.assert_allclose(ex["logit_norm"], np.sqrt((centred**2).sum(axis=(1, 2, 3))), rtol=1e-12)
    # the network computes the table: prompt n's row at (t, prev) is its MLP on the summed embeddings
    n, t, v = 2, 1, 3
    x = sum(params["enc"][j, task.prompts[n, j]] for j in range(T)) + params["pos"][t] + params["prev"][v]
    np.testing.assert_allclose(logits[n, t, v], np.tanh(x @ params["W1"] + params["b1"]) @ params["U"] + params["c"],
                               rtol=1e-12)


def test_a_step_on_one_prompt_moves_every_prompt():
    """Shared weights: an update from prompt 0's rollouts alone changes the other prompts' distributions
    (a tabular task would leave them exactly unchanged)."""
    task = make_task("neural", **SMALL)
    params, ro, w = _rollout_and_weights(task)
    w[1:] = 0.0  # only prompt 0 carries advantage
    grads = task.score(params, ro["actions"], w, np)
    moved = {k: params[k] + 0.5 * grads[k] for k in params}
    before, after = task.exact(params, np)["pass_rate"], task.exact(moved, np)["pass_rate"]
    assert np.all(np.abs(after[1:] - before[1:]) > 1e-9), after - before
    chain = make_task("chain", n_prompts=6, length=3, vocab=4, n_correct=1, seed=1)
    cp = chain.init_params(np, np.float64)
    c_ro = chain.rollout(cp, np.random.default_rng(0).random(chain.uniform_shape(5)), np)
    cg = chain.score(cp, c_ro["actions"], w, np)
    c_moved = {"table": cp["table"] + 0.5 * cg["table"]}
    np.testing.assert_array_equal(chain.exact(c_moved, np)["pass_rate"][1:], chain.exact(cp, np)["pass_rate"][1:])


@pytest.mark.parametrize("optimizer", ["adam_shared", "adam"])
def test_numpy_reference_equals_jax_given_the_same_uniforms(optimizer):
    task = make_task("neural", n_prompts=8, length=2, vocab=4, width=6, seed=2)
    cfg = SimConfig(advantage="grpo", G=4, steps=6, log_every=3, optimizer=optimizer, lr=0.05)
    assert_jax_equals_numpy(task, cfg, 5, rtol=1e-9, atol=1e-10)


def test_grpo_with_adam_on_the_shared_weights_learns_the_copy_rule():
    task = make_task("neural", n_prompts=64, length=2, vocab=4, width=16, rule="copy", seed=0)
    cfg = SimConfig(advantage="grpo", G=8, steps=150, log_every=50, optimizer="adam", lr=0.02)
    res = simulate(task, cfg, seeds=[0, 1])
    p1 = res.metrics["pass@1"][0]  # (seeds, logs)
    assert np.all(p1[:, 0] < 0.15) and np.all(p1[:, -1] > p1[:, 0] + 0.3), p1
    assert {"weight_norm", "effective_rank", "entropy", "correct_entropy", "logit_norm"} <= set(res.metrics)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="vocab"):
        make_task("neural", vocab=1)
    with pytest.raises(ValueError, match="at most 1024"):
        make_task("neural", vocab=2048)
    with pytest.raises(ValueError, match="length"):
        make_task("neural", length=0)
    with pytest.raises(ValueError, match="at most 32"):
        make_task("neural", length=40)
    with pytest.raises(ValueError, match="unknown rule 'sort'"):
        make_task("neural", rule="sort")
    with pytest.raises(ValueError, match="width"):
        make_task("neural", width=0)
    with pytest.raises(ValueError, match="init_scale"):
        make_task("neural", init_scale=0.0)
    with pytest.raises(ValueError, match="no regime presets"):
        make_task("neural", regime="llm")
