"""What every experiment script shares: settings from the command line, resumable unit loops, CIs, verdicts."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd
from tqdm import tqdm

from fadesim.results import ResultStore


def parse_settings(doc: str, quick: Any, full: Any, argv: list[str] | None, root: Path, name: str
                   ) -> tuple[Any, str, argparse.Namespace]:
    """--quick (default) / --full plus an override flag for every int/float/str field of the settings."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(doc.splitlines()[1:]))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sweep, about a minute on 2 cores (default)")
    mode.add_argument("--full", action="store_true", help="the published figure's sweep")
    ap.add_argument("--out", default=str(root / "results" / name), help="result folder (resumable)")
    ap.add_argument("--figures", default=str(root / "paper_figures"), help="figure folder")
    kinds = {"int": int, "float": float, "str": str}
    for field in dataclasses.fields(quick):
        if field.type in kinds:
            ap.add_argument(f"--{field.name.replace('_', '-')}", type=kinds[field.type], default=None,
                            help=f"override {field.name} (quick {getattr(quick, field.name)!r}, "
                                 f"full {getattr(full, field.name)!r})")
    args = ap.parse_args(argv)
    settings = full if args.full else quick
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(settings)
                 if getattr(args, f.name, None) is not None}
    return dataclasses.replace(settings, **overrides), ("full" if args.full else "quick"), args


def run_units(specs: list[Mapping[str, Any]], compute: Callable[[Mapping[str, Any]], pd.DataFrame],
              store: ResultStore, desc: str) -> pd.DataFrame:
    """Compute every unit not yet on disk (with a progress bar), then return exactly the units' rows."""
    for spec in tqdm(specs, desc=desc, unit="run"):
        if not store.has(spec):
            store.put(spec, compute(spec))
    return store.table(specs)


def ci95(values: Iterable[float]) -> tuple[float, float]:
    """Mean and 95% normal-approximation half-width (inf for a single value)."""
    values = np.asarray(list(values), dtype=float)
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.inf
    return float(values.mean()), float(half)


def verdict(ok: bool) -> str:
    return "CONFIRMED" if ok else "NOT CONFIRMED"
