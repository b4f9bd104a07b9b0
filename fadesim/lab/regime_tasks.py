"""The regime experiments' task builders: each regime's task at the sizes an experiment's Settings declare (toy, llm) or
its preset exactly (math), and which tasks and prompt counts a regime has."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class LLMRegimeSettings:
    """The llm regime's task sizes, shared by the experiments' Settings (each may override the defaults)."""

    llm_n_prompts: int = 64
    llm_n_answers: int = 2048
    llm_n_correct: int = 32
    llm_width: int = 8  # linear_softmax's feature width


def llm_task(settings: Any, name: str, seed: int = 0) -> Any:
    """The llm regime's task ``name`` at an experiment's llm_n_prompts / llm_n_answers / llm_n_correct (and
    llm_width, for linear_softmax); the chain's llm preset has its own sequence space (T = 4, V = 8, 3 correct),
    so it takes only llm_n_prompts."""
    from fadesim.tasks import make_task

    if name == "chain":
        return make_task("chain", regime="llm", n_prompts=settings.llm_n_prompts, seed=seed)
    kw = dict(n_prompts=settings.llm_n_prompts, n_answers=settings.llm_n_answers, n_correct=settings.llm_n_correct)
    if name == "linear_softmax":
        kw["width"] = settings.llm_width
    return make_task(name, regime="llm", seed=seed, **kw)


def toy_task(settings: Any, name: str, *, difficulty: Any = None, seed: int = 0) -> Any:
    """The toy regime's task ``name`` (``make_task(name, regime="toy")``) at the sizes an experiment's Settings
    declare, each optional: ``n_prompts``, ``n_correct``, ``difficulty``; ``n_answers`` (bandit, linear_softmax),
    ``width`` (linear_softmax), ``chain_length`` and ``chain_vocab`` (chain: T and V). A size the Settings do not
    declare is the toy regime's. ``difficulty`` overrides the Settings' (an experiment that sweeps prompt sets)."""
    from fadesim.tasks import make_task

    def declared(*fields: str) -> dict[str, Any]:
        return {f: getattr(settings, f) for f in fields if hasattr(settings, f)}

    kw = declared("n_prompts", "n_correct", "difficulty")
    if name == "chain":
        kw.update({k: v for k, v in (("length", getattr(settings, "chain_length", None)),
                                     ("vocab", getattr(settings, "chain_vocab", None))) if v is not None})
    else:
        kw.update(declared("n_answers"))
    if name == "linear_softmax":
        kw.update(declared("width"))
    if difficulty is not None:
        kw["difficulty"] = difficulty
    return make_task(name, regime="toy", seed=seed, **kw)


def regime_task(settings: Any, name: str, regime: str, *, difficulty: Any = None, seed: int = 0) -> Any:
    """The one task builder of the regime experiments: ``llm_task`` in the llm regime (its calibrated difficulty;
    ``difficulty`` is ignored there), ``toy_task`` in the toy regime, and in the math regime its preset exactly
    (the literature protocol's chosen design and sizes, ``fadesim.tasks.regimes``: the settings' sizes and
    ``difficulty`` are ignored there)."""
    if regime == "llm":
        return llm_task(settings, name, seed=seed)
    if regime == "toy":
        return toy_task(settings, name, difficulty=difficulty, seed=seed)
    if regime == "math":
        from fadesim.tasks import make_task

        return make_task(name, regime="math", seed=seed)
    from fadesim.tasks import REGIMES

    raise ValueError(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")


#: the prompt set a calibrated regime runs on (its own difficulty; the toy regime's sets are named distributions)
CALIBRATED_SETS = {"llm": "calibrated", "math": "calibrated-math"}


def regime_task_names(settings: Any, regime: str) -> list[str]:
    """The tasks a regime experiment runs in ``regime``: its ``math_tasks`` in the math regime, its ``llm_tasks`` in
    the llm regime where it declares them, else its ``tasks`` (each a tuple or a comma-separated string)."""
    field = {"math": "math_tasks", "llm": "llm_tasks"}.get(regime)
    names = getattr(settings, field) if field is not None and hasattr(settings, field) else settings.tasks
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def regime_n_prompts(settings: Any, regime: str) -> int:
    """How many prompts a regime experiment's task has in ``regime``: the settings' ``llm_n_prompts`` (llm) or
    ``n_prompts`` (toy), the preset's in the math regime."""
    if regime == "math":
        from fadesim.tasks.regimes import MATH_SIZES

        return int(MATH_SIZES["n_prompts"])
    return int(settings.llm_n_prompts if regime == "llm" else settings.n_prompts)
