"""Name -> advantage registry, with the metadata the checker, theory and trainers read.

Registered advantages follow the contract of DESIGN.md section 2::

    fn(rewards, *, mask=None, signals=None, logprobs=None, **hyper_parameters) -> advantages

``fadesim.get(name)`` returns the registered function object itself, so a trainer, the
simulator and the LLM bridge all run literally the same code; ``fadesim.get(name, **params)``
returns a ``functools.partial`` over that object with validated hyper-parameters.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from fadesim.advantages.domains import Domain, check_domains, check_params

AdvantageFn = Callable[..., Any]

_CONTRACT_KEYWORDS = ("mask", "signals", "logprobs")


@dataclass(frozen=True)
class Advantage:
    """One registered advantage: the function plus what is known about it."""

    name: str
    fn: AdvantageFn
    paper: str  # arXiv id, e.g. "2402.03300"
    title: str  # short citation
    params: Mapping[str, Any] = field(default_factory=dict)  # hyper-parameter defaults
    mean_centred: bool = False  # advantages sum to 0 in every group (so M+ = M-)
    scale_invariant: bool = False  # unchanged under r -> a*r + b, a > 0
    needs_logprobs: bool = False
    needs_signals: tuple[str, ...] = ()
    min_group_size: int = 1
    binary_only: bool = False  # defined for 0/1 rewards; other rewards are thresholded
    summary: str = ""
    domains: Mapping[str, Domain] = field(default_factory=dict)  # hyper-parameter -> the values it may take
    # whether the advantages are divided by each group's reward std (TRL's scale_rewards="group", verl's
    # norm_adv_by_std_in_grpo): a bool, or a function of the bound hyper-parameters where one of them decides
    group_std: bool | Callable[[Mapping[str, Any]], bool] = False

    def divides_by_group_std(self, **params: Any) -> bool:
        """Whether the advantage, with these hyper-parameters (defaults for the rest), divides each group's
        advantages by the group's reward std: what a trainer plug-in reads to map its host's reward scaling."""
        if callable(self.group_std):
            self.check_params(**params)
            return bool(self.group_std({**dict(self.params), **params}))
        return bool(self.group_std)

    def check_params(self, **params: Any) -> None:
        """``ValueError`` for an unknown parameter or a value outside its declared domain."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ValueError(
                f"advantage '{self.name}' has no parameter(s) {unknown}; "
                f"its parameters are {sorted(self.params) or 'none'}"
            )
        check_params(self.name, self.domains, params)

    def bind(self, **params: Any) -> AdvantageFn:
        """The function with hyper-parameters fixed (the function itself when none are given), each checked
        against its declared domain."""
        self.check_params(**params)
        if not params:
            return self.fn
        return functools.partial(self.fn, **params)


_REGISTRY: dict[str, Advantage] = {}


def register(
    name: str,
    fn: AdvantageFn | None = None,
    *,
    paper: str,
    title: str = "",
    mean_centred: bool = False,
    scale_invariant: bool = False,
    needs_logprobs: bool = False,
    needs_signals: tuple[str, ...] = (),
    min_group_size: int = 1,
    binary_only: bool = False,
    summary: str = "",
    domains: Mapping[str, Domain] | None = None,
    group_std: bool | Callable[[Mapping[str, Any]], bool] = False,
    replace: bool = False,
) -> Any:
    """Register an advantage under ``name``; usable as a decorator or a plain call.

    Hyper-parameters and their defaults are read from the function's keyword-only
    arguments (other than mask/signals/logprobs). Registering a taken name raises
    ``ValueError`` unless ``replace=True``.

    ``group_std``: whether the advantage divides each group's advantages by the group's reward std (True, False,
    or a function of the bound hyper-parameters, e.g. ``lambda p: p["scale"] == "group"``); the trainer
    plug-ins map their host's reward-scaling setting by it (``Advantage.divides_by_group_std``).

    ``domains`` maps hyper-parameters to the values they may take (``fadesim.advantages.domains``: ``Interval``,
    ``Choice``; a function decorated with ``@fadesim.advantage(domains=...)`` brings its own). The registered
    function refuses, on every call, a value outside its domain (``ValueError`` naming the advantage, parameter,
    value and domain); ``fadesim.get(name)`` and the decorator's return value are that checking function.
    """

    def decorator(f: AdvantageFn) -> AdvantageFn:
        if not callable(f):
            raise TypeError(f"register('{name}'): expected a function, got {type(f).__name__}")
        existing = _REGISTRY[name].fn if name in _REGISTRY else None
        if existing is not None and not replace and f is not existing and f is not getattr(existing, "__wrapped__", None):
            raise ValueError(f"advantage '{name}' is already registered (pass replace=True to override)")
        params = _hyper_parameters(f)
        declared = {**dict((getattr(f, "__fadesim__", None) or {}).get("domains", {}) or {}), **dict(domains or {})}
        check_domains(name, params, declared)
        checked = _checking(f, name, declared)
        _REGISTRY[name] = Advantage(
            name=name,
            fn=checked,
            paper=paper,
            title=title,
            params=params,
            mean_centred=mean_centred,
            scale_invariant=scale_invariant,
            needs_logprobs=needs_logprobs,
            needs_signals=tuple(needs_signals),
            min_group_size=min_group_size,
            binary_only=binary_only,
            summary=summary or _first_line(f),
            domains=declared,
            group_std=group_std,
        )
        return checked

    return decorator(fn) if fn is not None else decorator


def unregister(name: str) -> None:
    """Remove a user-registered advantage (KeyError if unknown)."""
    info(name)
    del _REGISTRY[name]


def info(name: str) -> Advantage:
    """Metadata of a registered advantage; ``KeyError`` naming the known ones if unknown."""
    if not isinstance(name, str):
        raise TypeError(f"advantage name must be a string; got {type(name).__name__}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown advantage '{name}'; known advantages: {', '.join(names())}") from None


def get(name: str, **params: Any) -> AdvantageFn:
    """The advantage function registered as ``name``, with ``params`` bound if given."""
    return info(name).bind(**params)


def names() -> list[str]:
    """Registered advantage names, sorted."""
    return sorted(_REGISTRY)


def entries() -> list[Advantage]:
    return [_REGISTRY[n] for n in names()]


def _hyper_parameters(f: AdvantageFn) -> dict[str, Any]:
    params = {}
    for p in inspect.signature(f).parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in _CONTRACT_KEYWORDS:
            params[p.name] = p.default
    return params


def _checking(f: AdvantageFn, name: str, domains: Mapping[str, Domain]) -> AdvantageFn:
    """``f`` behind the domain check of its keyword hyper-parameters (``f`` itself's signature, via __wrapped__);
    ``f`` itself where it declares no domain (so ``fadesim.get(name) is f`` for a plain registration)."""
    if not domains or getattr(f, "__fadesim_checked__", None) == (name, tuple(sorted(domains.items(),
                                                                                          key=lambda kv: kv[0]))):
        return f

    @functools.wraps(f)
    def checked(rewards: Any, **kwargs: Any) -> Any:
        if domains:
            check_params(name, domains, {k: v for k, v in kwargs.items() if k in domains})
        return f(rewards, **kwargs)

    checked.__fadesim_checked__ = (name, tuple(sorted(domains.items(), key=lambda kv: kv[0])))
    checked.__fadesim__ = {**dict(getattr(f, "__fadesim__", None) or {}), "domains": dict(domains)}
    return checked


def _first_line(f: AdvantageFn) -> str:
    doc = inspect.getdoc(f) or ""
    return doc.splitlines()[0] if doc else ""
