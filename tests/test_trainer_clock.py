"""experiments/trainer_clock.py: the cross-term factor on hand-made Gram matrices, and the distinct rollouts' scores
against each rollout's own gradient on the tiny GPT-2."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))


def test_the_cross_term_factor_on_hand_made_gram_matrices():
    import trainer_clock as tc

    rewards = np.array([1, 1, 0, 0, 1, 0, 0, 0], dtype=float)  # two groups of 4: 2 and 1 correct
    orthogonal = tc.batch_rows(0, rewards, np.eye(8), np.arange(8), 4)
    assert all(r["cross_term_factor"] == pytest.approx(1.0) for r in orthogonal)  # orthogonal scores: the power
    # the two correct rollouts of group 0 are one completion (one distinct score): PSR's power doubles there
    index = np.array([0, 0, 1, 2, 3, 4, 5, 6])
    rows = {r["advantage"]: r for r in tc.batch_rows(0, rewards, np.eye(7), index, 4)}
    assert rows["psr"]["measured"] == pytest.approx(2 ** 2 + 1) and rows["psr"]["power"] == pytest.approx(3)
    assert rows["nsr"]["cross_term_factor"] == pytest.approx(1.0)
    assert rows["psr"]["Q"] == pytest.approx(3 / 8) and rows["nsr"]["Q"] == pytest.approx(5 / 8)
    table = tc.with_ratios(__import__("pandas").DataFrame(list(rows.values())))
    assert table.set_index("advantage").rule_vs_grpo["grpo"] == pytest.approx(1.0)
    uniform = tc.with_ratios(__import__("pandas").DataFrame(tc.batch_rows(0, np.zeros(8), np.eye(8), np.arange(8), 4)))
    assert uniform.measured_vs_grpo.isna().all()  # all groups uniform: GRPO moves nothing, no ratio


@pytest.mark.integration
def test_the_distinct_scores_are_each_rollouts_own_gradient():
    torch = pytest.importorskip("torch")
    import real_model as rm
    import trainer_clock as tc
    from fadesim.bridge.backends import HFBackend

    s = rm.PAPER_QUICK
    torch.manual_seed(0)
    model, tok, template = rm.load_model(s)
    model.eval()
    train, _ = rm.tasks(s, template)
    params = tc.block(model, 1)
    problems = train.sample(np.random.default_rng(0), 2)
    ro = HFBackend(model, tok, max_new_tokens=s.max_new_tokens, shared_prefix=True, sampler=s.sampler).generate(
        [p.prompt for p in problems], n=4, seed=0)
    S, index = tc.scores(model, ro, params)
    assert S.shape[0] == len(set((i // 4, c) for i, c in enumerate(ro.completions))) and index.shape == (8,)
    from fadesim.bridge.trainer import token_logprobs_and_entropy

    # each rollout's own gradient, from one full forward pass over every sequence (no shared prompt, no dedupe)
    logp, _ = token_logprobs_and_entropy(model, ro, shared_prefix=False, entropy_grad=False)
    total = (logp * ro.response_mask.float()).sum(dim=1)
    for i in range(8):
        own = torch.cat([g.reshape(-1) for g in torch.autograd.grad(total[i], params, retain_graph=True)]).double()
        np.testing.assert_allclose(S[index[i]].numpy(), own.numpy(), rtol=1e-4, atol=1e-6)
    assert ro.min_new_tokens >= 0 and S.abs().sum() > 0
