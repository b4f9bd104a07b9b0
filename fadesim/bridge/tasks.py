"""Procedurally generated tasks with verifiable answers (nothing is downloaded)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: str


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
