"""Verifiable rewards: exact match for synthetic tasks, math-verify for math answers (never eval)."""

from __future__ import annotations

from typing import Callable, Sequence

RewardFn = Callable[[str, str], float]


def exact_match(completion: str, answer: str) -> float:
    """1.0 iff the completion, stripped, equals the answer."""
    return float(completion.strip() == answer.strip())


_INTEGER = __import__("re").compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?!\.?\d)")


def last_integer(completion: str, answer: str) -> float:
    """1.0 iff the last integer written in the completion (digits, an optional minus sign, optional thousands
    commas; a decimal such as 7.5 is not an integer) equals the integer answer. Parsed with a regular expression,
    never evaluated. A completion with no integer scores 0."""
    found = _INTEGER.findall(completion)
    if not found:
        return 0.0
    return float(int(found[-1].replace(",", "")) == int(answer.strip()))


def first_integer(completion: str, answer: str) -> float:
    """1.0 iff the first integer written in the completion (parsed as ``last_integer`` parses) equals the integer
    answer: the reward for a prompt that ends with the start of the answer ("The answer is"), where the first number
    the model writes is its answer and what follows it is not scored. Never evaluated; no integer scores 0."""
    found = _INTEGER.search(completion)
    if found is None:
        return 0.0
    return float(int(found.group().replace(",", "")) == int(answer.strip()))


def math_verify_reward(completion: str, answer: str) -> float:
    """1.0 iff math-verify judges the completion equal to the answer (parsed, never evaluated as code)."""
    try:
        from math_verify import parse, verify
    except ImportError as err:  # pragma: no cover - optional dependency
        raise ImportError("math_verify_reward needs the math-verify package: pip install math-verify") from err
    return float(verify(parse(answer), parse(completion)))


REWARDS = ("auto", "math", "exact")


def reward_by_name(name: str) -> tuple[RewardFn, str]:
    """(reward function, description) by name: "exact" (``exact_match``), "math" (math-verify; an ImportError
    naming the install where it is missing) or "auto" (math-verify where installed, else exact match, said so in
    the description)."""
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r}; known: {', '.join(REWARDS)}")
    if name == "exact":
        return exact_match, "exact match"
    try:
        import math_verify  # noqa: F401 - only whether it is installed
    except ImportError:
        if name == "math":
            raise ImportError("the math reward needs math-verify: pip install -e '.[bridge]'") from None
        return exact_match, "exact match (math-verify is not installed)"
    return math_verify_reward, "math-verify"


def score(completions: Sequence[str], answers: Sequence[str], reward_fn: RewardFn) -> list[float]:
    """Rewards for aligned completions and answers; a failing reward function names the rollout."""
    if len(completions) != len(answers):
        raise ValueError(f"{len(completions)} completions for {len(answers)} answers")
    out = []
    for i, (c, a) in enumerate(zip(completions, answers)):
        try:
            r = float(reward_fn(c, a))
        except Exception as err:
            raise RuntimeError(f"reward function failed on rollout {i} (completion {c!r}): "
                               f"{type(err).__name__}: {err}") from err
        if r != r or r in (float("inf"), float("-inf")):
            raise ValueError(f"reward function returned {r} for rollout {i}")
        out.append(r)
    return out
