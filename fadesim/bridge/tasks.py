"""Procedurally generated tasks with verifiable answers (nothing is downloaded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: str


@runtime_checkable
class ProblemSource(Protocol):
    """What the bridge trains on: ``sample(rng, n)`` gives n problems (prompt and verifiable answer) drawn with the
    given generator (every task here; a user's own dataset wrapped the same way)."""

    def sample(self, rng: np.random.Generator, n: int) -> list[Problem]: ...


@dataclass(frozen=True)
class CopyTask:
    """Prompt 'x=' with x a symbol; the answer is x. A one-token task a tiny random model can learn by RL
    (a 2-layer GPT-2 of width 32 goes from 0.22 to 0.95 mean reward in 80 GRPO steps on CPU)."""

    symbols: str = "abcd"
    alphabet: str = "abcd="

    def sample(self, rng: np.random.Generator, n: int) -> list[Problem]:
        return [Problem(f"{c}=", c) for c in rng.choice(list(self.symbols), size=n)]


@dataclass(frozen=True)
class ArithmeticTask:
    """Prompt 'a+b=' with a, b in [0, max_operand]; the answer is the decimal sum."""

    max_operand: int = 9
    alphabet: str = "0123456789+="

    def sample(self, rng: np.random.Generator, n: int) -> list[Problem]:
        a, b = rng.integers(0, self.max_operand + 1, size=(2, n))
        return [Problem(f"{x}+{y}=", str(x + y)) for x, y in zip(a, b)]


def _carries(operands: tuple[int, ...]) -> int:
    """Number of column carries when the non-negative operands are added digit by digit."""
    count, carry, column = 0, 0, 0
    while any(x // 10**column for x in operands) or carry:
        total = sum((x // 10**column) % 10 for x in operands) + carry
        carry = total // 10
        count += carry > 0
        column += 1
    return count


def question_key(operands: tuple[int, ...], operators: tuple[str, ...]) -> str:
    return " ".join(str(x) for pair in zip(operands, (*operators, "")) for x in pair).strip()


def in_eval_split(key: str, eval_fraction: float) -> bool:
    """A fixed partition of all problems by a hash of the question (so training never sees an evaluation item)."""
    import hashlib

    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8 < eval_fraction


NAMES = ("Sam", "Ada", "Lee", "Mia", "Ravi", "Noor", "Tom", "Iris")
ITEMS = ("apples", "coins", "stamps", "marbles", "books", "shells")


@dataclass(frozen=True)
class ChatArithmetic:
    """Procedural arithmetic for a chat model, with difficulty knobs; the answer is the integer result.

    ``digits``: digits per operand (1 to 6); ``ops``: number of operations (1 to 4: ops + 1 operands);
    ``operators``: drawn from these ("+", "-"; a subtraction never goes below 0); ``carries``: None (any), True (at
    least one column carry) or False (none), for additions of two operands only; ``style``: "symbolic" ("What is
    23 + 48? Answer with a number only.") or "word" (a one-sentence story of a person and items); ``split``:
    "train" or "eval", a fixed partition of all questions by a hash (``eval_fraction`` of them are evaluation
    items), so the two never share a question; ``template``: question -> prompt (e.g. ``chat_template``; default:
    the question itself). Rewarded by ``fadesim.bridge.rewards.last_integer`` (the last integer of the completion;
    never evaluated as code)."""

    digits: int = 2
    ops: int = 1
    operators: str = "+"
    carries: bool | None = None
    style: str = "symbolic"
    split: str = "train"
    eval_fraction: float = 0.2
    template: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.digits, bool) or int(self.digits) != self.digits or not 1 <= self.digits <= 6:
            raise ValueError(f"digits must be an integer in [1, 6]; got {self.digits!r}")
        if isinstance(self.ops, bool) or int(self.ops) != self.ops or not 1 <= self.ops <= 4:
            raise ValueError(f"ops must be an integer in [1, 4]; got {self.ops!r}")
        if not self.operators or set(self.operators) - {"+", "-"}:
            raise ValueError(f"operators must be made of '+' and '-'; got {self.operators!r}")
        if self.carries is not None and (self.ops != 1 or self.operators != "+"):
            raise ValueError("carries applies to one addition (ops=1, operators='+') only")
        if self.style not in ("symbolic", "word"):
            raise ValueError(f"style must be 'symbolic' or 'word'; got {self.style!r}")
        if self.style == "word" and self.ops != 1:
            raise ValueError("word problems have one operation (ops=1)")
        if self.split not in ("train", "eval"):
            raise ValueError(f"split must be 'train' or 'eval'; got {self.split!r}")
        if not 0.0 < self.eval_fraction < 1.0:
            raise ValueError(f"eval_fraction must lie in (0, 1); got {self.eval_fraction}")

    def question(self, operands: tuple[int, ...], operators: tuple[str, ...], rng: np.random.Generator) -> str:
        if self.style == "word":
            name, item = NAMES[int(rng.integers(len(NAMES)))], ITEMS[int(rng.integers(len(ITEMS)))]
            verb = "buys" if operators[0] == "+" else "gives away"
            return (f"{name} has {operands[0]} {item} and {verb} {operands[1]}. How many {item} does {name} have "
                    "now? Answer with a number only.")
        return f"What is {question_key(operands, operators)}? Answer with a number only."

    def _draw(self, rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[str, ...], int]:
        low, high = (0 if self.digits == 1 else 10 ** (self.digits - 1)), 10**self.digits
        for _ in range(10_000):
            operands = tuple(int(x) for x in rng.integers(low, high, size=self.ops + 1))
            operators = tuple(str(c) for c in rng.choice(list(self.operators), size=self.ops))
            value = operands[0]
            ok = True
            for op, x in zip(operators, operands[1:]):
                value = value + x if op == "+" else value - x
                ok &= value >= 0
            if not ok:
                continue
            if self.carries is not None and (_carries(operands) > 0) != self.carries:
                continue
            if in_eval_split(question_key(operands, operators), self.eval_fraction) != (self.split == "eval"):
                continue
            return operands, operators, value
        raise ValueError(f"no {self.split} problem with digits={self.digits}, carries={self.carries} found")

    def sample(self, rng: np.random.Generator, n: int) -> list[Problem]:
        out = []
        for _ in range(n):
            operands, operators, value = self._draw(rng)
            q = self.question(operands, operators, rng)
            out.append(Problem(self.template(q) if self.template else q, str(value)))
        return out


@dataclass(frozen=True)
class TaskMixture:
    """Each problem drawn from one of ``parts`` (tasks with ``sample(rng, n)``), chosen uniformly at random; e.g.
    one- and two-digit sums in one training stream."""

    parts: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.parts or not all(isinstance(t, ProblemSource) for t in self.parts):
            raise ValueError("TaskMixture needs one or more tasks, each with sample(rng, n)")

    def sample(self, rng: np.random.Generator, n: int) -> list[Problem]:
        which = rng.integers(len(self.parts), size=n)
        return [problem for i in which for problem in self.parts[int(i)].sample(rng, 1)]


def distinct_problems(task: ProblemSource, n: int, seed: int, max_draws: int = 100_000) -> list[Problem]:
    """``n`` problems of ``task`` with distinct prompts, in a fixed order for a seed (an evaluation set); a
    ValueError where the task has fewer than ``n`` distinct prompts."""
    rng = np.random.default_rng(seed)
    seen: dict[str, Problem] = {}
    for _ in range(max_draws):
        problem = task.sample(rng, 1)[0]
        seen.setdefault(problem.prompt, problem)
        if len(seen) == n:
            return list(seen.values())
    raise ValueError(f"found only {len(seen)} distinct prompts in {max_draws} draws; asked for {n}")


def chat_template(tokenizer: Any, system: str | None = None, prefill: str = "") -> Any:
    """question -> the tokenizer's chat prompt for one user turn, ready for the assistant's answer; ``system``: a
    system turn's text ("" an empty one; None: none given, so the template's default, if it has one); ``prefill``:
    the start of the assistant's answer, written into the prompt (e.g. "The answer is"), so the model continues
    it and the completion, which alone is rewarded, is the rest."""
    turns = [] if system is None else [{"role": "system", "content": system}]
    if not isinstance(prefill, str):
        raise ValueError(f"prefill must be a string; got {prefill!r}")

    def render(question: str) -> str:
        return tokenizer.apply_chat_template([*turns, {"role": "user", "content": question}],
                                             add_generation_prompt=True, tokenize=False) + prefill

    return render
