"""Declared domains of advantage hyper-parameters, and the one validation every caller shares.

Each registered advantage declares, per hyper-parameter, the set of values it is defined on (``register(...,
domains={...})``; a user's function through ``@fadesim.advantage(domains={...})``). ``check_params`` refuses a
value outside it with a ``ValueError`` naming the advantage, the parameter, the value and the domain. It runs on
every call of a registered advantage and of a decorated function, in ``Advantage.bind`` / ``fadesim.get(name,
**params)``, in ``SimConfig`` (its ``advantage_params`` and the values of a sweep), and so in ``fadesim card``,
``fadesim simulate``, the experiments and both plug-ins, which build their advantages through those.

Values that jax is tracing (a sweep's hyper-parameters inside ``jit`` / ``vmap``) cannot be inspected;
``simulate`` checks a sweep's values against the domains before it traces them.

``boundary_probes`` gives, per domain, values at each boundary (which must be accepted) and values just outside
it (which must be refused); the property ``parameter_domains`` of ``fadesim.apps.check`` calls the function with
them.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np


def _concrete(value: Any) -> list[Any] | None:
    """The values of a scalar or concrete array as Python scalars; None for a value jax is tracing."""
    if isinstance(value, (bool, np.bool_, str, numbers.Number)):
        return [value.item() if isinstance(value, np.generic) else value]
    try:
        import jax

        if isinstance(value, jax.core.Tracer):
            return None
    except ImportError:  # pragma: no cover - jax is a core dependency
        pass
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    except Exception:  # noqa: BLE001 - not an array: validated as the object it is
        return [value]
    return arr.reshape(-1).tolist() if arr.dtype != object else [value]


@dataclass(frozen=True)
class Interval:
    """A real interval (``integer=True``: integers in it); ends closed unless ``*_open``; always finite values."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    nonzero: bool = False  # 0 excluded (e.g. risk_sensitive's beta)

    def contains(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        v = float(value)
        if not math.isfinite(v):
            return False
        if self.integer and v != int(v):
            return False
        if self.nonzero and v == 0.0:
            return False
        above = v > self.low if self.low_open else v >= self.low
        below = v < self.high if self.high_open else v <= self.high
        return above and below

    def __str__(self) -> str:
        if self.integer:
            parts = []
            if self.low > -math.inf:
                parts.append(f">= {int(self.low) + int(self.low_open)}")
            if self.high < math.inf:
                parts.append(f"<= {int(self.high) - int(self.high_open)}")
            return "an integer " + " and ".join(parts) if parts else "an integer"
        if self.low == -math.inf and self.high == math.inf:
            return "a nonzero finite real" if self.nonzero else "a finite real"
        lo = "(" if self.low_open or self.low == -math.inf else "["
        hi = ")" if self.high_open or self.high == math.inf else "]"
        text = f"{lo}{_num(self.low)}, {_num(self.high)}{hi}"
        return text + " without 0" if self.nonzero else text

    def probes(self) -> tuple[list[Any], list[Any]]:
        """(inside values at the boundaries, values just outside them)."""
        inside: list[Any] = []
        outside: list[Any] = []
        step = 1 if self.integer else None
        for end, is_open, direction in ((self.low, self.low_open, -1.0), (self.high, self.high_open, 1.0)):
            if not math.isfinite(end):
                continue
            if step:
                first = int(end) - int(direction) if is_open else int(end)
                inside.append(first)
                outside.append(first + int(direction))
            elif is_open:
                outside.append(float(end))
                inside.append(float(end) - direction * max(1e-9, 1e-9 * abs(end)))
            else:
                inside.append(float(end))
                outside.append(float(np.nextafter(end, direction * math.inf)))
        if self.nonzero:
            outside.append(0.0)
            inside.extend([1e-6, -1e-6] if self.contains(-1e-6) else [1e-6])
        if self.integer:
            outside.append(float(inside[0]) + 0.5 if inside else 0.5)
        if not inside:
            inside.append(0.0 if self.contains(0.0) else 1.0)
        outside += [math.nan, math.inf, -math.inf]
        return [v for v in inside if self.contains(v)], outside


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of values (strings, or the bools True / False)."""

    options: tuple[Any, ...]

    def contains(self, value: Any) -> bool:
        if all(isinstance(o, bool) for o in self.options):
            return isinstance(value, (bool, np.bool_)) and bool(value) in self.options
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        if all(isinstance(o, bool) for o in self.options):
            return "a bool (True or False)"
        return "one of " + ", ".join(repr(o) for o in self.options)

    def probes(self) -> tuple[list[Any], list[Any]]:
        if all(isinstance(o, bool) for o in self.options):
            return list(self.options), ["yes", 2]
        return list(self.options), ["__not_an_option__", 1.0]


Domain = Interval | Choice

#: shorthands used by the registry's declarations
REAL = Interval()
POSITIVE = Interval(low=0.0, low_open=True)
NON_NEGATIVE = Interval(low=0.0)
UNIT = Interval(low=0.0, high=1.0)
SIGNED_UNIT = Interval(low=-1.0, high=1.0)
BOOL = Choice((True, False))


def _num(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"


def check_domains(name: str, params: Mapping[str, Any], domains: Mapping[str, Domain]) -> None:
    """A declaration names only parameters the function has, with an ``Interval`` or ``Choice`` each."""
    unknown = sorted(set(domains) - set(params))
    if unknown:
        raise ValueError(f"advantage '{name}': domains declared for unknown parameter(s) {unknown}; its parameters "
                         f"are {sorted(params) or 'none'}")
    for key, dom in domains.items():
        if not isinstance(dom, (Interval, Choice)):
            raise TypeError(f"advantage '{name}': the domain of '{key}' must be a fadesim Interval or Choice; got "
                            f"{type(dom).__name__}")


def check_params(name: str, domains: Mapping[str, Domain], values: Mapping[str, Any]) -> None:
    """Refuse any value outside its declared domain (traced jax values are skipped: not inspectable)."""
    for key, value in values.items():
        dom = domains.get(key)
        if dom is None:
            continue
        items = _concrete(value)
        if items is None:
            continue
        for item in items:
            if not dom.contains(item):
                raise ValueError(f"{name}: parameter {key} = {item!r} is outside its domain {dom}")


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    """``['gamma=2', 'scale=batch']`` -> ``{'gamma': 2, 'scale': 'batch'}``: each value a Python literal where it
    parses (numbers, booleans, None), else the string. A ValueError names an item without '='."""
    import ast

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"expects name=value, got '{item}'")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key.strip()] = value
    return out
