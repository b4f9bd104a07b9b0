"""Published RL outcomes: reading and checking the curves and methods files the literature protocol runs on (the
shipped ones are the package data ``fadesim/data/literature/``; a user's own in the same schema)."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import pandas as pd

from fadesim.data import LITERATURE_CURVES, LITERATURE_METHODS, LITERATURE_TRAINING, data_file


CURVE_COLUMNS = ("setting", "source", "method", "k", "pass_at_k")


METHOD_COLUMNS = ("method", "advantage", "params", "steps_scale")


TRAINING_COLUMNS = ("setting", "prompts_per_step", "rollouts_per_prompt")


CURVES, METHODS = data_file(*LITERATURE_CURVES), data_file(*LITERATURE_METHODS)
TRAINING = data_file(*LITERATURE_TRAINING)


BASE = "base"


class LiteratureError(ValueError):
    """A problem in a curves or methods file, naming the file, the line and the value."""


# ----------------------------------------------------------------------------- reading
def _rows(path: str | Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    path = Path(path)
    if not path.is_file():
        raise LiteratureError(f"{path}: no such file")
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != columns:
            raise LiteratureError(f"{path}: the columns must be exactly {','.join(columns)}; got "
                                  f"{','.join(reader.fieldnames or ()) or 'none'}")
        rows = [(i + 2, row) for i, row in enumerate(reader)]  # line 1 is the header
    if not rows:
        raise LiteratureError(f"{path}: no rows")
    for line, row in rows:
        if None in row or any(v is None for v in row.values()):
            raise LiteratureError(f"{path}, line {line}: expected {len(columns)} fields ({','.join(columns)})")
    return rows


def _keyed_rows(path: str | Path, columns: tuple[str, ...], key: str) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(where, name, row) for each row of a file keyed by one column (``key``, stripped): a name empty or listed twice
    is refused, naming the file and line."""
    seen: set[str] = set()
    for line, row in _rows(path, columns):
        where = f"{path}, line {line}"
        name = row[key].strip()
        if not name:
            raise LiteratureError(f"{where}: {key} must not be empty")
        if name in seen:
            raise LiteratureError(f"{where}: {key} {name!r} is listed twice")
        seen.add(name)
        yield where, name, row


def load_curves(path: str | Path = CURVES) -> pd.DataFrame:
    """The published curves as a frame (setting, source, method, k, pass_at_k), validated: k a positive integer,
    pass_at_k a fraction in [0, 1], no duplicate (setting, method, k), each method's curve non-decreasing in k,
    and base rows at two k or more in every setting."""
    records = []
    seen: dict[tuple[str, str, int], int] = {}
    for line, row in _rows(path, CURVE_COLUMNS):
        where = f"{path}, line {line}"
        setting, method = row["setting"].strip(), row["method"].strip()
        if not setting or not method:
            raise LiteratureError(f"{where}: setting and method must not be empty")
        try:
            k = int(row["k"])
            if str(k) != row["k"].strip() or k < 1:
                raise ValueError
        except ValueError:
            raise LiteratureError(f"{where}: k must be a positive integer; got {row['k']!r}") from None
        try:
            value = float(row["pass_at_k"])
        except ValueError:
            raise LiteratureError(f"{where}: pass_at_k must be a number; got {row['pass_at_k']!r}") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise LiteratureError(f"{where}: pass_at_k = {row['pass_at_k']} is outside [0, 1] (a fraction, not a "
                                  "percentage)")
        key = (setting, method, k)
        if key in seen:
            raise LiteratureError(f"{where}: duplicate (setting, method, k) = ({setting!r}, {method!r}, {k}); "
                                  f"first at line {seen[key]}")
        seen[key] = line
        records.append({"setting": setting, "source": row["source"].strip(), "method": method, "k": k,
                        "pass_at_k": value, "line": line})
    df = pd.DataFrame(records)
    for (setting, method), part in df.groupby(["setting", "method"], sort=False):
        part = part.sort_values("k")
        drops = part[part.pass_at_k.diff() < 0]
        if len(drops):
            bad = drops.iloc[0]
            before = part[part.k < bad.k].iloc[-1]
            raise LiteratureError(f"{path}, line {int(bad.line)}: the curve of {method!r} in {setting!r} decreases in k: "
                                  f"pass@{int(before.k)} = {before.pass_at_k} > pass@{int(bad.k)} = {bad.pass_at_k}")
    for setting, part in df.groupby("setting", sort=False):
        n_base = int((part.method == BASE).sum())
        if n_base < 2:
            raise LiteratureError(f"{path}: setting {setting!r} has {n_base} '{BASE}' row(s); the protocol "
                                  f"calibrates to the base model's curve and needs at least two k")
    return df.drop(columns="line")


@dataclass(frozen=True)
class Method:
    """A published method's fadesim equivalent."""

    name: str
    advantage: str
    params: Mapping[str, Any] = field(default_factory=dict)
    steps_scale: float = 1.0


def load_methods(path: str | Path = METHODS) -> dict[str, Method]:
    """method name -> Method, validated: a registered advantage, params a JSON object of its parameters inside
    their declared domains, steps_scale a positive finite number, no name twice."""
    from fadesim.advantages.registry import info

    out: dict[str, Method] = {}
    for where, name, row in _keyed_rows(path, METHOD_COLUMNS, "method"):
        if name == BASE:
            raise LiteratureError(f"{where}: '{BASE}' is the model before RL, not a method to simulate")
        try:
            entry = info(row["advantage"].strip())
        except KeyError as err:
            raise LiteratureError(f"{where}: {err.args[0]}") from None
        try:
            params = json.loads(row["params"]) if row["params"].strip() else {}
        except json.JSONDecodeError as err:
            raise LiteratureError(f"{where}: params is not valid JSON ({err.msg}); got {row['params']!r}") from None
        if not isinstance(params, dict):
            raise LiteratureError(f"{where}: params must be a JSON object such as {{\"lam\": 0.1}}; got "
                                  f"{row['params']!r}")
        try:
            entry.check_params(**params)
        except ValueError as err:
            raise LiteratureError(f"{where}: {err}") from None
        try:
            scale = float(row["steps_scale"])
        except ValueError:
            raise LiteratureError(f"{where}: steps_scale must be a number; got {row['steps_scale']!r}") from None
        if not (math.isfinite(scale) and scale > 0):
            raise LiteratureError(f"{where}: steps_scale must be a positive number; got {row['steps_scale']!r}")
        out[name] = Method(name=name, advantage=entry.name, params=params, steps_scale=scale)
    return out


def load_training(path: str | Path = TRAINING) -> dict[str, int]:
    """setting -> rollouts a step (prompts_per_step x rollouts_per_prompt) of its published run, the batch the
    noise-scale clock reads (``fadesim.theory.step_size.noise_clock``), validated: both positive integers, no setting
    twice. A setting of a curves file with no row here has no known batch."""
    out: dict[str, int] = {}
    for where, setting, row in _keyed_rows(path, TRAINING_COLUMNS, "setting"):
        sizes = []
        for column in TRAINING_COLUMNS[1:]:
            text = row[column].strip()
            if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
                raise LiteratureError(f"{where}: {column} must be a positive integer; got {row[column]!r}")
            sizes.append(int(text))
        out[setting] = sizes[0] * sizes[1]
    return out


def reference_method(setting: str, curves: pd.DataFrame, methods: Mapping[str, Method]) -> Method:
    """The setting's one published method mapped to grpo with steps_scale 1 (the length is matched on it)."""
    published = set(curves[curves.setting == setting].method)
    refs = [m for name, m in methods.items() if name in published and m.advantage == "grpo" and m.steps_scale == 1
            and not m.params]
    if len(refs) != 1:
        names = ", ".join(m.name for m in refs) or "none"
        raise LiteratureError(f"setting {setting!r}: needs exactly one published method mapped to grpo with default "
                              f"parameters and steps_scale 1 (the reference whose pass@1 fixes the training length); "
                              f"found {names}")
    if not ((curves.setting == setting) & (curves.method == refs[0].name) & (curves.k == 1)).any():
        raise LiteratureError(f"setting {setting!r}: the reference {refs[0].name!r} has no published pass@1")
    return refs[0]
