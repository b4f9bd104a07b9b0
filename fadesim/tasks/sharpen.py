"""Shared-sharpening task: logits(n, a) = (1 + c s) l0(n, a) + d g r(n, a) + theta(n, a), one sharpness s (and,
where d > 0, one skill g) shared by every prompt.

``l0`` are a bandit's initial logits (so the initial policy is exactly ``make_bandit``'s, with the requested
difficulty distribution); ``theta`` (N, K) are per-prompt logits that start at 0 (``tabular=False`` freezes them);
``s`` is one scalar, the shared inverse-temperature knob, that starts at 0. ``c`` (``sharpen_scale``) sets how far
one unit of s sharpens, i.e. how fast the shared direction learns next to the per-prompt one under SGD (Adam's
per-entry step is scale-free, so under ``adam`` c is the ratio of the two speeds directly).

Why it can cross (derived in ``derivations/sharpen_crossing.py``, evaluated by ``fadesim.theory.crossing``,
checked in ``tests/test_sharpen.py``): d log pi(a | n) / ds = c (l0(n, a) - E_pi[l0(n, .)]), so
dp_n / ds = c p_n (1 - p_n) (E_pi[l0 | correct] - E_pi[l0 | wrong]), and the expected policy gradient on s is the
mean over prompts of omega(p_n) dp_n / ds, with omega = alpha for an advantage alpha r + beta per rollout (PSR and
NSR: 1; W-REINFORCE: 1 + lam) and GRPO's omega larger toward p = 0 and 1. On a prompt whose correct answers are
likelier than its wrong ones (an easy prompt) dp/ds is positive; on one whose correct answers sit in the tail (a
hard prompt) it is negative. When easy prompts dominate, s grows and every prompt sharpens toward its own mode:
the easy ones gain, the hard ones lose. That is the pass@k crossover (2504.13837, 2506.01347): pass@1 rises,
pass@k at large k falls below the base. The sign of the mass does not change this first-order drift; what can
separate the signs is the per-prompt theta (an all-wrong group gives it a zero update under GRPO and PSR and a
push away from the sampled wrong answers under NSR, which a per-entry normaliser turns into up to a full step
each step) and the second-order noise. How much that separates them on published settings is measured in
``paper_figures/README.md`` (little).

``prompts_per_step`` = B (0: every prompt, the default) trains on a mini-batch: each step draws B of the N prompts
without replacement (from one more column of uniforms, ``uniform_shape`` (N, G + 1)), and only their groups carry
advantage (the others are masked out of it, so a batch statistic sees the drawn groups alone) and gradient, each
weighted N / B so the update is the mean over the drawn groups. This is how an LLM trainer sees its data, and it is
what sets the per-step signal-to-noise ratio of the shared direction: with B G rollouts a step, the drift of s
per step over its noise is at most about sqrt(B G) times the per-rollout ratio, which differs between the signs
(less at small B, where which prompts are drawn adds noise of its own, the same for every sign; both measured in
``paper_figures/README.md``); under Adam that ratio, not the mean alone, sets how fast s moves when it is below 1.

``eval_prompts`` = M holds M of the N prompts out of training (``eval_split`` "random": a fixed random subset;
"stratified": every (N / M)-th prompt in order of initial pass rate, so the held-out prompts' base pass@k is the
curve the task was calibrated to, not one random half's): they are never drawn, their
logits move only through s, and every logged policy metric (pass@k, entropy, diversity) is the mean over them alone,
as a published run is evaluated on problems it never trained on (MATH's test split).

``skill_scale`` = d > 0 adds a second shared direction, a "skill" g (starting at 0) that adds d g to the logit of
every correct answer r(n, a) = 1 of every prompt: d log pi(a | n) / dg = d (r(n, a) - p_n), so dp_n / dg =
d p_n (1 - p_n) >= 0 on every prompt, hard ones included, and pass@k rises with g at every k. It idealises what the
real-model rung measured (``paper_figures/README.md``, SmolLM2 on two-digit sums: RL taught the sum, lifting
questions the base never answered) and what the published runs show on problems they never trained on (MATH's and
Omni-MATH's test splits gain pass@1), which sharpening alone cannot reach. Its expected gradient is
d mean_n omega(p_n) p_n (1 - p_n), the same prompt weight omega as the sharpness's drift, so the sign of the mass
again leaves the first-order *direction* in the (s, g) plane unchanged except through GRPO's omega; what differs
between the signs is each direction's noise (``fadesim.theory.crossing.direction_moments``, exact), which an
optimizer with a per-entry normaliser (``adam``: one for s, one for g) turns into different speeds along the two
directions when the per-step signal-to-noise ratio is near or below 1. d = 0 (the default) leaves the task exactly as
it was: no g parameter, the same numbers.

``answer_scale`` = e > 0 adds a third shared parameter, one bias per answer shared by every prompt, beta (K,),
starting at 0, added as e beta(a) to answer a's logit on every prompt. Answer a of one prompt and answer a of another
are then the same answer (a number is an answer to many sums, right for some and wrong for others: prompts draw
their correct sets independently), so a gradient that pushes down a sampled wrong answer on one prompt pushes it
down on every prompt, including those where it is right and the held-out ones, and a positive one raises it
everywhere: d log pi(a | n) / d beta(b) = e ([a = b] - pi(b | n)). Negative mass, spread over many wrong answers,
flattens the shared biases (and the held-out prompts with them); positive mass, on each prompt's few correct
answers, concentrates them. This is the cross-prompt interference of answers an LLM's shared output layer has and
the per-prompt logits do not (measured on SmolLM2: ``paper_figures/real_model/README.md``). e = 0 (the default)
leaves the task exactly as it was: no beta parameter, the same numbers.

``reach_samples`` = K_r > 0 limits the skill to the prompts inside the base model's reach: prompt n is reached when
one of K_r draws from its base policy would be correct, i.e. with probability 1 - (1 - p_n)^K_r (one uniform per
prompt, fixed by the task's seed, so the expected reached fraction is the calibrated base's pass@K_r exactly). The
skill raises the correct answers of reached prompts only; the others move through the sharpness and their own
logits alone. This is the reasoning boundary of arXiv 2504.13837 (RL-trained models solve, at large k, only
problems the base model already solves within k samples; its Table 2 reads pass@256, the largest k it reports)
written as a task: without it the skill is an oracle that lifts every prompt's correct answers by the same log-odds,
so a prompt the base never solves gains as much as one it solves half the time. 0 (the default): every prompt is
reached, the task exactly as it was.

``reach_draw`` = "uniform" draws the reached prompts independently of their pass rates, each with the same
probability, the calibrated base's pass@K_r (the same expected share as "base", the default). ``misfire`` = m > 0
makes the skill a shortcut: on every unreached prompt it raises the most likely wrong answer at the base policy by
m g (``shortcut``), so d log pi(a | n) / dg = m ([a = shortcut_n] - pi(shortcut_n | n)) there and dp_n / dg =
-m p_n pi(shortcut_n | n): the skill that lifts the reached prompts drives the others down, and an advantage that
weights the hard prompts more (whose pull on g is then negative) learns it more slowly. Both are what the SmolLM2
paper experiment's questions show by part (``paper_figures/real_model/README.md``, "Where the arms differ at large
k"): the two-digit part, half of whose questions the base never solved in 64 draws, is learned by every arm, while
the three-operand questions whose operands are all nonzero (base pass rate 0.061, the learned part's 0.046) are
not, and GRPO, which learns the two-operand sum fastest, drives them below the base (pass rate 0.015, solved within
64 draws 0.28 against the base's 0.78 at step 48) where focal gamma 3 keeps them above it (0.153, 0.92). Defaults
("base", 0): the task exactly as it was.

``shortcut_scale`` = f > 0 (with a reach) makes the shortcut a shared parameter of its own, h (starting at 0), learned
beside the skill instead of riding on it: f h is added to every correct answer of a reached prompt (where the
shortcut is right, as the two-operand sum is on the SmolLM2 task's zero-operand questions) and to each unreached
prompt's shortcut answer (where it is wrong), so d log pi(a | n) / dh = f ([a correct] - p_n) on a reached prompt and
f ([a = shortcut_n] - pi(shortcut_n | n)) on an unreached one: the rows of a skill with misfire 1
(``fadesim.theory.crossing.direction_moments``' "h"). Its expected gradient is the reached prompts' pull less the
unreached ones' push, each weighted by the advantage's prompt weight, and it has its own normaliser under per-entry
Adam, so it could turn once the reached prompts saturate and be unlearned, as the model partly unlearns its shortcut
after step 48. Prototyped on the 8x setting (``paper_figures/literature/README.md``, "A learned shortcut"): it does
not turn under GRPO, focal gamma 3 or b = -1 (read with the uniform reach, f = 1; likely because the prompts it
drives down stop drawing correct rollouts, and under a group-relative advantage an all-wrong group carries no push).
0 (the default): no h, the task exactly as it was.

``floor_sharpness`` = True keeps the sharpness 1 + c s at or above its start (s >= 0 after every update, a
projection: ``constrain``): RL may sharpen the base's answer distribution, never flatten it below the base's own
temperature. Without it, once the skill has lifted the correct answers, the hard prompts' pull on s (their correct
answers sit in the prior's tail) can drive the sharpness through 0, erasing the prior, after which every held-out
prompt has the same pass rate and a flat policy over n_answers answers solves every prompt within a few dozen
samples (measured on the SmolLM2 base curve: paper_figures/literature/README.md, "Reach and floor"). False (the
default): s is unconstrained, the task exactly as it was.

``transfer`` = tau > 0 carries what training taught a prompt to the held-out prompts like it (``eval_prompts`` > 0,
tabular logits): each held-out prompt has a twin, the training prompt at the same quantile of initial pass rate
(the j-th held-out prompt in that order takes the training prompt at rank floor((j + 1/2) N_train / M); the
stratified split's neighbour), and its correct answers are raised by tau times the log-odds its twin's own logits
have added, gain_n = logit p_n(shared + theta_n) - logit p_n(shared), shared the logits without theta. Raising every
correct answer of a prompt by one amount raises its log-odds by exactly that amount, so at tau = 1 a held-out
prompt's pass rate moves as its twin's does, its own per-prompt part included: where the held-out set is drawn from
the training distribution (SmolLM2's evaluation questions, a second split of the same generator), the per-prompt
learning the tabular part does on the training prompts is learning that reaches the held-out ones too, and it drives
each prompt to all right or all wrong (in the default family calibrated to the SmolLM2 paper experiment, GRPO at its
matched length leaves the training prompts' E[p (1 - p)] at 0.026-0.029 and the held-out ones' at 0.061-0.066; the
model's own evaluation questions are at 0.023: paper_figures/literature/README.md, "Transfer"). Where the
skill has a reach (``reach_samples``), only reached held-out prompts gain: what a twin learned transfers to a
problem the base can solve, not to one it cannot. The held-out prompts carry no gradient (they are never trained
on), so the update is the task's without transfer; at the initial policy every gain is exactly 0, so every
quantity read there (the clocks, the crossing theory, the first-order engine's path) is unchanged. 0 (the default):
the task exactly as it was.

``tail_entropy`` = H > 0 gives each prompt's answer set the tail an LLM's has: its least likely wrong answer under
the base policy stands for e^H wrong answers, each e^H times less likely than it, so the prompt's base policy is
unchanged (e^H answers at logit l0(t) - H carry e^l0(t) between them: the same mass) but the sharpness scales the
tail's per-answer logit l0(t) - H while its multiplicity H stays: logit(n, t) = (1 + c s)(l0(n, t) - H) + H, i.e.
the sharpened logits l0' (``sharpened``) are l0 with H taken off the tail answer, and H is added back unscaled. At
the base temperature (s = 0) nothing changes; flattening (1 + c s < 1) moves mass onto the tail, which is wrong on
every prompt, and at 1 + c s = 0 (no skill, per-prompt logits at 0) each prompt's policy is e^H : 1 : ... : 1 over
its tail and its K - 1 other answers (without it: uniform over K, every prompt solved at pass rate n_correct / K,
which is what lets a small answer set's pass@64 reach 1 once the sharpness falls through 0). In the drift of s,
dp_n/ds = c p_n (1 - p_n) (E_pi[l0' | correct] - E_pi[l0' | wrong]): the tail, low in l0', pulls E[l0' | wrong] down
by about H times its share of the wrong mass, a share that grows as the sharpness falls, so every prompt's pull
turns toward sharpening before the prior inverts (a restoring force with no floor: each advantage settles where its
own prompt weights balance it; a tail too small for an advantage's pull still lets it flatten into the tail, as
focal gamma 3 does at H = 6 on the SmolLM2 paper experiment's task). This is the temperature of an LLM, whose
flattened policy spreads over a vast set of wrong sequences rather than over a few listed answers (measured:
paper_figures/literature/README.md, "A tail of wrong answers"). 0 (the default): the task exactly as it was.

The exact metrics are the bandit's (pass rate, entropy, diversity from the logits); ``sharpness`` (1 + c s) is
logged as its geometry.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from fadesim.tasks.bandit import Bandit, make_bandit
from fadesim.tasks.pass_rates import DifficultyDistribution

#: how ``eval_prompts`` are chosen: "random" (a random subset) or "stratified" (every (N / M)-th prompt in order of
#: initial pass rate, from a random start, so the held-out prompts' initial pass rates follow the same calibrated
#: distribution as the whole set, and their base pass@k the curve the task was calibrated to)
EVAL_SPLITS = ("random", "stratified")
#: how ``reach_samples`` picks the reached prompts: "base" (prompt n with probability 1 - (1 - p_n)^K_r, its own base
#: pass rate's) or "uniform" (every prompt with the same probability, the calibrated base's pass@K_r: the same
#: expected share, drawn independently of each prompt's pass rate)
REACH_DRAWS = ("base", "uniform")


@dataclass(frozen=True, eq=False)
class Sharpen(Bandit):
    """Bandit data; parameters {'s': (), 'theta': (N, K)} (``tabular``) or {'s': ()}, plus {'g': ()} where
    ``skill_scale`` > 0, {'beta': (K,)} where ``answer_scale`` > 0 and {'h': ()} where ``shortcut_scale`` > 0."""

    sharpen_scale: float = 1.0
    skill_scale: float = 0.0  # d: how far one unit of the shared skill g raises every correct logit (0: no g)
    answer_scale: float = 0.0  # e: how far one unit of an answer's shared bias beta(a) moves it on every prompt
    tabular: bool = True
    prompts_per_step: int = 0  # B: prompts drawn per step (0: every training prompt)
    # (N,) bool, True for the evaluation prompts (never trained on; the logged metrics are theirs), or None
    evaluation: Any = None
    # the parameters training starts from ({"s", "g", "theta"} as arrays, e.g. a checkpoint: ``restarted``), or
    # None: all zeros, the initial policy equal to the bandit's
    start: Any = None
    # (N,) bool, True for the prompts the skill reaches (``reach_samples``), or None: every prompt
    reach: Any = None
    floor_sharpness: bool = False  # True: s >= 0 after every update (``constrain``)
    transfer: float = 0.0  # tau: the share of its twin's learned log-odds a held-out prompt gains (0: none)
    # (N,) int, each held-out prompt's twin training prompt (``transfer``; a training prompt: itself), or None
    twin: Any = None
    tail_entropy: float = 0.0  # H: the log multiplicity of each prompt's tail answer (``sharpened``; 0: none)
    # (N, K) bool, True on each prompt's tail answer (its least likely wrong answer at the base policy), or None
    tail: Any = None
    misfire: float = 0.0  # m: how far one unit of the skill raises an unreached prompt's shortcut answer (0: none)
    # (N, K) bool, True on each unreached prompt's shortcut (its most likely wrong answer at the base policy), or None
    shortcut: Any = None
    shortcut_scale: float = 0.0  # f: how far one unit of the learned shortcut h moves its answers (0: no h)
    name: str = "sharpen"

    def uniform_shape(self, G: int) -> tuple[int, ...]:
        return (self.n_prompts, G + 1) if self.prompts_per_step else (self.n_prompts, G)

    def rollout(self, params: dict[str, Any], u: Any, xp: Any) -> dict[str, Any]:
        if not self.prompts_per_step and self.evaluation is None:
            return super().rollout(params, u, xp)
        G = u.shape[-1] - 1 if self.prompts_per_step else u.shape[-1]
        out = super().rollout(params, u[:, :G], xp)
        one, zero = xp.asarray(1.0, dtype=u.dtype), xp.asarray(0.0, dtype=u.dtype)
        train = (xp.ones(u.shape[:1], dtype=bool) if self.evaluation is None
                 else ~xp.asarray(self.evaluation, dtype=bool))
        if self.prompts_per_step:
            # the B training prompts with the smallest draw uniforms (evaluation prompts are given 2, above any):
            # B of them without replacement, every subset equally likely
            rank = xp.argsort(xp.argsort(xp.where(train, u[:, G], 2.0 * one)))
            drawn, batch = rank < self.prompts_per_step, float(self.prompts_per_step)
        else:
            drawn, batch = train, xp.sum(xp.where(train, one, zero))
        out["group_weight"] = xp.where(drawn, self.n_prompts / batch * one, zero)
        return out

    def evaluated(self) -> Any:
        """The (N,) mask of the prompts the logged metrics average over (None: all of them)."""
        return self.evaluation

    def restarted(self, params: dict[str, Any]) -> "Sharpen":
        """The same task started from ``params`` (a checkpoint: every parameter of ``init_params``' keys), as the
        later phase of a run is; its optimizer state starts afresh."""
        want = dataclasses.replace(self, start=None).init_params(np, np.float64)
        if set(params) != set(want):
            raise ValueError(f"a sharpen checkpoint needs exactly the parameters {sorted(want)}; got {sorted(params)}")
        start = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
        for name, value in start.items():
            if value.shape != want[name].shape:
                raise ValueError(f"checkpoint {name} has shape {value.shape}; the task's is {want[name].shape}")
        if any(not np.all(np.isfinite(v)) for v in start.values()):
            raise ValueError("a sharpen checkpoint must be finite")
        return dataclasses.replace(self, start=start)

    def init_params(self, xp: Any, dtype: Any) -> dict[str, Any]:
        if self.start is not None:
            return {k: xp.asarray(v, dtype=dtype) for k, v in self.start.items()}
        params = {"s": xp.zeros((), dtype=dtype)}
        if self.skill_scale:
            params["g"] = xp.zeros((), dtype=dtype)
        if self.answer_scale:
            params["beta"] = xp.zeros(self.logits0.shape[-1:], dtype=dtype)
        if self.shortcut_scale:
            params["h"] = xp.zeros((), dtype=dtype)
        if self.tabular:
            params["theta"] = xp.zeros(self.logits0.shape, dtype=dtype)
        return params

    def logits(self, params: dict[str, Any], xp: Any) -> Any:
        s = params["s"]
        out = (1.0 + self.sharpen_scale * s) * self.sharpened(xp, s.dtype)
        if self.tail_entropy:
            out = out + self.tail_entropy * xp.asarray(self.tail, dtype=s.dtype)
        if self.skill_scale:
            out = out + self.skill_scale * params["g"] * self.skilled(xp, s.dtype)
        if self.answer_scale:
            out = out + self.answer_scale * params["beta"][None, :]
        if self.shortcut_scale:
            out = out + self.shortcut_scale * params["h"] * self.skilled(xp, s.dtype, 1.0)
        if not self.tabular:
            return out
        if not self.transfer:
            return out + params["theta"]
        full = out + params["theta"]
        gain = self.log_odds(full, xp) - self.log_odds(out, xp)  # (N,) what each prompt's own logits have added
        return full + self.transfer * xp.take(gain, xp.asarray(self.twin), axis=0)[:, None] * self.transferred(
            xp, s.dtype)

    def log_odds(self, logits: Any, xp: Any) -> Any:
        """(N,) log of each prompt's pass rate over its failure rate under ``logits``: logsumexp over its correct
        answers minus logsumexp over its wrong ones (every prompt has both)."""
        correct = xp.asarray(self.correct)
        out = []
        for mask in (correct, ~correct):
            masked = xp.where(mask, logits, xp.asarray(-1e30, dtype=logits.dtype))
            top = xp.max(masked, axis=-1, keepdims=True)
            out.append(top[:, 0] + xp.log(xp.sum(xp.exp(masked - top), axis=-1)))
        return out[0] - out[1]

    def transferred(self, xp: Any, dtype: Any) -> Any:
        """(N, K) 1.0 on the answers ``transfer`` raises (every correct answer of a held-out prompt, a reached one
        where the skill has a reach), else 0.0."""
        rows = xp.asarray(self.evaluation, dtype=dtype)
        if self.reach is not None:
            rows = rows * xp.asarray(self.reach, dtype=dtype)
        return xp.asarray(self.correct, dtype=dtype) * rows[:, None]

    def score(self, params: dict[str, Any], actions: Any, weights: Any, xp: Any) -> dict[str, Any]:
        dlogits = self.logit_gradient(params, actions, weights, xp)
        grads = {"s": self.sharpen_scale * xp.sum(dlogits * self.sharpened(xp, dlogits.dtype))}
        if self.skill_scale:
            grads["g"] = self.skill_scale * xp.sum(dlogits * self.skilled(xp, dlogits.dtype))
        if self.answer_scale:
            grads["beta"] = self.answer_scale * xp.sum(dlogits, axis=0)
        if self.shortcut_scale:
            grads["h"] = self.shortcut_scale * xp.sum(dlogits * self.skilled(xp, dlogits.dtype, 1.0))
        if self.tabular:
            grads["theta"] = dlogits
        return grads

    def sharpened(self, xp: Any, dtype: Any) -> Any:
        """(N, K) the logits the sharpness scales, l0': the base logits, less ``tail_entropy`` on each prompt's tail
        answer (which gets it back unscaled: at s = 0 the policy is the base's); d logits / ds = c l0'."""
        l0 = xp.asarray(self.logits0, dtype=dtype)
        return l0 - self.tail_entropy * xp.asarray(self.tail, dtype=dtype) if self.tail_entropy else l0

    def skilled(self, xp: Any, dtype: Any, misfire: float | None = None) -> Any:
        """(N, K) how far one unit of the skill raises each answer's logit: 1.0 on every correct answer of a reached
        prompt, ``misfire`` (default the task's) on each unreached prompt's shortcut where it is > 0, else 0.0. The
        learned shortcut h (``shortcut_scale``) moves the rows of a skill with misfire 1."""
        m = self.misfire if misfire is None else misfire
        mask = xp.asarray(self.correct, dtype=dtype)
        out = mask if self.reach is None else mask * xp.asarray(self.reach, dtype=dtype)[:, None]
        return out + m * xp.asarray(self.shortcut, dtype=dtype) if m else out

    def constrain(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        """The parameters after an update, projected onto the task's constraints: s >= 0 where ``floor_sharpness``
        (the simulator calls this after every optimizer step; the optimizer's moments are left as they are)."""
        if not self.floor_sharpness:
            return params
        return dict(params, s=xp.maximum(params["s"], xp.zeros((), dtype=params["s"].dtype)))

    def geometry(self, params: dict[str, Any], xp: Any) -> dict[str, Any]:
        out = {"sharpness": 1.0 + self.sharpen_scale * params["s"]}
        if self.skill_scale:
            out["skill"] = self.skill_scale * params["g"]
        if self.answer_scale:
            beta = self.answer_scale * params["beta"]
            out["answer_bias_spread"] = xp.sqrt(xp.mean((beta - xp.mean(beta)) ** 2))
        if self.shortcut_scale:
            out["shortcut"] = self.shortcut_scale * params["h"]
        return out


def _check_nonnegative(value: Any, name: str, zero: str = "") -> None:
    """Refuse ``value`` unless it is a finite real number >= 0 (not a bool), naming ``name`` and what 0 means."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0{f' (0: {zero})' if zero else ''}; got {value!r}")


def make_sharpen(
    n_prompts: int = 128,
    n_answers: int = 16,
    n_correct: int = 3,
    difficulty: DifficultyDistribution | str = "mixed",
    *,
    sharpen_scale: float = 1.0,
    skill_scale: float = 0.0,
    answer_scale: float = 0.0,
    tabular: bool = True,
    prompts_per_step: int = 0,
    eval_prompts: int = 0,
    eval_split: str = "random",
    spread: float | None = None,
    prior: str = "normal",
    zipf_exponent: float = 1.0,
    reach_samples: int = 0,
    floor_sharpness: bool = False,
    transfer: float = 0.0,
    tail_entropy: float = 0.0,
    reach_draw: str = "base",
    misfire: float = 0.0,
    shortcut_scale: float = 0.0,
    seed: int = 0,
) -> Sharpen:
    """A shared-sharpening task whose initial policy equals ``make_bandit``'s (same arguments and seed)."""
    _check_nonnegative(sharpen_scale, "sharpen_scale")
    _check_nonnegative(skill_scale, "skill_scale", "no skill direction")
    _check_nonnegative(answer_scale, "answer_scale", "no shared answer biases")
    if isinstance(reach_samples, bool) or int(reach_samples) != reach_samples or reach_samples < 0:
        raise ValueError(f"reach_samples must be an integer >= 0 (0: the skill reaches every prompt); "
                         f"got {reach_samples!r}")
    if reach_samples and not skill_scale:
        raise ValueError("reach_samples limits the skill to the prompts the base model reaches; it needs "
                         "skill_scale > 0")
    _check_nonnegative(transfer, "transfer", "no transfer to held-out prompts")
    if transfer and not (eval_prompts and tabular):
        raise ValueError("transfer carries the training prompts' own (tabular) learning to held-out prompts; it needs "
                         f"eval_prompts > 0 and tabular=True; got eval_prompts {eval_prompts!r}, tabular {tabular!r}")
    _check_nonnegative(tail_entropy, "tail_entropy", "no tail answer")
    if reach_draw not in REACH_DRAWS:
        raise ValueError(f"reach_draw must be one of {', '.join(REACH_DRAWS)}; got {reach_draw!r}")
    if reach_draw != "base" and not reach_samples:
        raise ValueError(f"reach_draw = {reach_draw!r} says how the reached prompts are drawn; it needs "
                         "reach_samples > 0")
    _check_nonnegative(misfire, "misfire", "the skill leaves unreached prompts alone")
    if misfire and not reach_samples:
        raise ValueError("misfire raises the shortcut answer of the prompts the skill does not reach; it needs "
                         "reach_samples > 0")
    _check_nonnegative(shortcut_scale, "shortcut_scale", "no learned shortcut")
    if shortcut_scale and not reach_samples:
        raise ValueError("shortcut_scale adds a shortcut that is right on the prompts the skill reaches and wrong on "
                         "the others; it needs reach_samples > 0")
    if not isinstance(floor_sharpness, (bool, np.bool_)):
        raise ValueError(f"floor_sharpness must be True or False; got {floor_sharpness!r}")
    if not isinstance(tabular, (bool, np.bool_)):
        raise ValueError(f"tabular must be True or False; got {tabular!r}")
    if isinstance(prompts_per_step, bool) or int(prompts_per_step) != prompts_per_step or not (
            0 <= prompts_per_step <= n_prompts):
        raise ValueError(f"prompts_per_step must be an integer in [0, n_prompts = {n_prompts}] (0: every prompt); "
                         f"got {prompts_per_step!r}")
    if isinstance(eval_prompts, bool) or int(eval_prompts) != eval_prompts or not 0 <= eval_prompts < n_prompts:
        raise ValueError(f"eval_prompts must be an integer in [0, n_prompts = {n_prompts}) (0: none held out); "
                         f"got {eval_prompts!r}")
    if prompts_per_step > n_prompts - eval_prompts:
        raise ValueError(f"prompts_per_step = {prompts_per_step} is more than the {n_prompts - eval_prompts} "
                         f"training prompts (n_prompts - eval_prompts)")
    base = make_bandit(n_prompts, n_answers, n_correct, difficulty, spread=spread, prior=prior,
                       zipf_exponent=zipf_exponent, seed=seed)
    if eval_split not in EVAL_SPLITS:
        raise ValueError(f"eval_split must be one of {', '.join(EVAL_SPLITS)}; got {eval_split!r}")
    evaluation = None
    if eval_prompts and eval_split == "random":  # a fixed random subset of the prompts, held out of training
        evaluation = np.zeros(n_prompts, dtype=bool)
        evaluation[np.random.default_rng([seed, 1]).choice(n_prompts, int(eval_prompts), replace=False)] = True
    # the initial pass rates written out, not Bandit.exact's: the two differ in the last bits, which reorders near-ties
    # and so would move the committed runs' held-out prompts
    logits = base.logits0 - base.logits0.max(axis=1, keepdims=True)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    initial = np.where(base.correct, probs, 0.0).sum(axis=1)
    if eval_prompts and eval_split == "stratified":  # every (N / M)-th prompt in order of initial pass rate
        order = np.argsort(initial, kind="stable")
        start = np.random.default_rng([seed, 1]).random()
        evaluation = np.zeros(n_prompts, dtype=bool)
        evaluation[order[np.floor((np.arange(eval_prompts) + start) * n_prompts / eval_prompts).astype(int)]] = True
    reach = None
    if reach_samples:  # reached with probability 1 - (1 - p_n)^K_r: a correct answer among K_r base draws
        covered = -np.expm1(reach_samples * np.log1p(-np.minimum(initial, 1.0)))
        if reach_draw == "uniform":  # the same expected share, independent of each prompt's own pass rate
            covered = np.full(n_prompts, covered.mean())
        reach = np.random.default_rng([seed, 2]).random(n_prompts) < covered
    shortcut = None
    if misfire or shortcut_scale:  # each unreached prompt's most likely wrong answer at the base policy (first on a tie)
        shortcut = np.zeros(base.correct.shape, dtype=bool)
        rows = np.flatnonzero(~reach)
        shortcut[rows, np.argmax(np.where(base.correct, -np.inf, logits), axis=1)[rows]] = True
    twin = None
    if transfer:  # the j-th held-out prompt in order of initial pass rate takes the training prompt at its quantile
        order = np.argsort(initial, kind="stable")
        held, train = order[evaluation[order]], order[~evaluation[order]]
        twin = np.arange(n_prompts)
        twin[held] = train[np.floor((np.arange(held.size) + 0.5) * train.size / held.size).astype(int)]
    tail = None
    if tail_entropy:  # each prompt's least likely wrong answer at the base policy (the first such, on a tie)
        tail = np.zeros(base.correct.shape, dtype=bool)
        tail[np.arange(n_prompts), np.argmin(np.where(base.correct, np.inf, logits), axis=1)] = True
    if not tabular and sharpen_scale == 0 and skill_scale == 0:
        raise ValueError("sharpen_scale = 0 and skill_scale = 0 with tabular=False leaves nothing to train")
    return Sharpen(logits0=base.logits0, correct=base.correct, sharpen_scale=float(sharpen_scale),
                   skill_scale=float(skill_scale), answer_scale=float(answer_scale),
                   tabular=bool(tabular), prompts_per_step=int(prompts_per_step), evaluation=evaluation,
                   reach=reach, floor_sharpness=bool(floor_sharpness), transfer=float(transfer), twin=twin,
                   tail_entropy=float(tail_entropy), tail=tail, misfire=float(misfire), shortcut=shortcut,
                   shortcut_scale=float(shortcut_scale))


__all__ = ["Sharpen", "make_sharpen"]
