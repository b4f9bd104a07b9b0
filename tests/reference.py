"""Slow, obviously-correct per-group references written from each paper's formula.

Each takes one group's valid rewards as a Python list (plus log-probs / signals where needed)
and returns a list of advantages. No vectorisation, no shared code with the library.
"""

from __future__ import annotations

import itertools
import math
import statistics

TH = 0.5


def _mean(xs):
    return sum(xs) / len(xs)


def _std(xs, ddof=1):
    # statistics computes exactly (via fractions), so the reference has no under/overflow of its own
    return statistics.stdev(xs) if ddof == 1 else statistics.pstdev(xs)


def _all_equal(xs):
    return max(xs) == min(xs)


def grpo(r, eps=1e-6, unbiased_std=True):
    if _all_equal(r):
        return [0.0] * len(r)
    m, s = _mean(r), _std(r, 1 if unbiased_std else 0)
    return [(x - m) / (s + eps) for x in r]


def dr_grpo(r):
    if _all_equal(r):
        return [0.0] * len(r)
    m = _mean(r)
    return [x - m for x in r]


def rloo(r):
    if _all_equal(r):
        return [0.0] * len(r)
    n = len(r)
    return [r[i] - sum(r[j] for j in range(n) if j != i) / (n - 1) for i in range(n)]


def reinforce(r, convention="01"):
    return [x if convention == "01" else 2 * x - 1 for x in r]


def psr(r):
    return [1.0 if x > TH else 0.0 for x in r]


def nsr(r):
    return [0.0 if x > TH else -1.0 for x in r]


def w_reinforce(r, lam=0.1):
    return [lam if x > TH else -1.0 for x in r]


def asymmetric(r, delta=0.1):
    return [d + delta for d in dr_grpo(r)]


def median(r, eps=1e-6):
    if _all_equal(r):
        return [0.0] * len(r)
    med, s = statistics.median(r), _std(r)
    return [(x - med) / (s + eps) for x in r]


def focal(r, gamma=1.0, eps=1e-6):
    p = sum(1 for x in r if x > TH) / len(r)
    return [(1 - p) ** gamma * a for a in grpo(r, eps)]


def risk_sensitive(r, beta=2.0):
    if _all_equal(r):
        return [0.0] * len(r)
    e = [math.exp(beta * x) for x in r]
    m = _mean(e)
    return [(x / m - 1.0) / beta for x in e]


def pass_at_k(r, K=4):
    """Group-normalised K-subset pass@K reward, averaged over the subsets containing each rollout."""
    n = len(r)
    good = [x > TH for x in r]
    subsets = list(itertools.combinations(range(n), K))
    f = {S: float(any(good[i] for i in S)) for S in subsets}
    R = _mean(list(f.values()))
    sigma = math.sqrt(R * (1 - R))
    if sigma == 0:
        return [0.0] * n
    return [_mean([(f[S] - R) / sigma for S in subsets if i in S]) for i in range(n)]


def pkpo(r, K=4):
    """K * (mean over K-subsets containing i of max reward - mean over K-subsets of the others)."""
    n = len(r)
    good = [x > TH for x in r]
    out = []
    for i in range(n):
        with_i = [S for S in itertools.combinations(range(n), K) if i in S]
        weight = _mean([float(any(good[j] for j in S)) for S in with_i])
        others = [j for j in range(n) if j != i]
        base = _mean([float(any(good[j] for j in T)) for T in itertools.combinations(others, K)])
        out.append(K * (weight - base))
    return out


def unlikeliness(r, logprobs, beta_rank=0.25, eps=1e-6):
    n = len(r)
    rank = [sum(1 for j in range(n) if logprobs[j] > logprobs[i]) for i in range(n)]
    shaped = [r[i] * (1 - beta_rank * (n - rank[i]) / n) for i in range(n)]
    return grpo(shaped, eps)


def fade(r, signals, gamma_explore=0.0, gamma_exploit=0.0, lam_neg_explore=0.25, lam_neg_exploit=0.75, eps=1e-6):
    h, h0 = signals["entropy"], signals["initial_entropy"]
    eta = min(max(h / h0, 0.0), 1.0) if h0 > 0 else 1.0
    gamma = gamma_exploit + (gamma_explore - gamma_exploit) * eta
    lam_neg = lam_neg_exploit + (lam_neg_explore - lam_neg_exploit) * eta
    p = sum(1 for x in r if x > TH) / len(r)
    w = (1 - p) ** gamma
    return [w * (a if a > 0 else lam_neg * a) for a in grpo(r, eps)]


REFERENCES = {
    "grpo": grpo, "dr_grpo": dr_grpo, "rloo": rloo, "reinforce": reinforce, "psr": psr, "nsr": nsr,
    "w_reinforce": w_reinforce, "asymmetric": asymmetric, "median": median, "focal": focal,
    "risk_sensitive": risk_sensitive, "pass_at_k": pass_at_k, "pkpo": pkpo, "unlikeliness": unlikeliness,
    "fade": fade,
}


def sign_balanced(r, balance=0.0):
    return [1.0 + balance if x > TH else -(1.0 - balance) for x in r]


REFERENCES["sign_balanced"] = sign_balanced


def sign_scaled(r, balance=0.0, base="grpo", eps=1e-6):
    a = grpo(r, eps) if base == "grpo" else dr_grpo(r)
    return [(1.0 + balance) * x if x > 0 else (1.0 - balance) * x for x in a]


REFERENCES["sign_scaled"] = sign_scaled
