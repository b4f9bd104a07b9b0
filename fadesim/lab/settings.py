"""An experiment's settings from the command line: --quick / --full / --preset and one flag per field, each checked
(a bad flag is one line and exit status 2), and the checks the experiments' Settings share."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, Callable, Mapping

from fadesim.lab.units import EXECUTORS


def check_axes(experiment: str, **axes: tuple[tuple[str, ...], Any]) -> None:
    """Each named axis (e.g. regimes=(values, known)) must be a non-empty subset of its known values."""
    for name, (values, known) in axes.items():
        if not values or any(v not in known for v in values):
            raise ValueError(f"{experiment}: {name} must be a non-empty subset of {list(known)}; got {list(values)}")


def check_tag(experiment: str, tag: str) -> None:
    """A tag names an experiment's files: empty, or letters, digits, '-' and '_' only."""
    if tag and not tag.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{experiment}: tag must be letters, digits, '-' or '_' (it names files); got {tag!r}")


def check_advantage_values(experiment: str, advantage: str, **values: tuple[str, Any]) -> None:
    """parameter=(setting, values): each setting's values (a comma string or a sequence) must parse as numbers in
    ``advantage``'s declared domain of that parameter (``fadesim.advantages.domains``), e.g.
    ``check_advantage_values("difficulty_axis", "focal", gamma=("gammas", "0,1,2"))``."""
    from fadesim.advantages.registry import info

    for param, (setting, given) in values.items():
        items = [x.strip() for x in given.split(",")] if isinstance(given, str) else list(given)
        try:
            parsed = [float(x) for x in items if x != ""]
        except ValueError:
            raise ValueError(f"{experiment}: {setting} must be comma-separated numbers; got {given!r}") from None
        if not parsed:
            raise ValueError(f"{experiment}: {setting} is empty; give at least one value")
        try:
            info(advantage).check_params(**{param: parsed})
        except ValueError as err:
            raise ValueError(f"{experiment}: {setting}: {err}") from None


def _comma_list(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected one or more comma-separated values")
    return items


def parse_settings(doc: str, quick: Any, full: Any, argv: list[str] | None, root: Path, name: str, *,
                   zero_allowed: tuple[str, ...] = (),
                   implied: Callable[[Any, Mapping[str, Any]], Mapping[str, Any]] | None = None,
                   presets: Mapping[str, Any] | None = None,
                   ) -> tuple[Any, str, argparse.Namespace]:
    """--quick (default) / --full plus an override flag for every int/float/str/tuple[str, ...] field of the
    settings (``--name VALUE``) and every bool field (``--name`` / ``--no-name``).

    ``zero_allowed``: int fields whose 0 means "off" although the presets set them above 0. ``implied(preset,
    overrides)``: further fields the user's flags imply, applied under the flags themselves (e.g. a flag that picks
    another task family resets the preset's settings that only the default family takes). ``presets``: further named
    Settings beside quick and full, chosen by ``--preset NAME`` (the mode returned is then NAME)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(doc.splitlines()[1:]))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sweep, about a minute on 2 cores (default)")
    mode.add_argument("--full", action="store_true", help="the published figure's sweep")
    presets = dict(presets or {})
    if presets:
        mode.add_argument("--preset", choices=sorted(presets), default=None,
                          help="a named setting beside --quick and --full (" + ", ".join(sorted(presets)) + ")")
    ap.add_argument("--out", default=str(root / "results" / name), help="result folder (resumable)")
    ap.add_argument("--figures", default=str(root / "paper_figures" / name),
                    help=f"figure folder (default paper_figures/{name})")
    ap.add_argument("--no-figures", action="store_true",
                    help="compute, store and print everything but draw no figure (a sweep on a headless node: "
                         "rerun without this flag to draw them from the stored results)")
    kinds = {"int": int, "float": float, "str": str, "tuple[str, ...]": _comma_list}
    for field in dataclasses.fields(quick):
        if field.type in kinds:
            flags = [f"--{field.name.replace('_', '-')}"]
            if field.type == "tuple[str, ...]" and field.name.endswith("s"):  # --regime llm, --optimizer adam,sgd
                singular = field.name[:-3] + "y" if field.name.endswith("ies") else field.name[:-1]
                flags.append(f"--{singular.replace('_', '-')}")
            ap.add_argument(*flags, dest=field.name, type=kinds[field.type], default=None,
                            help=f"override {field.name}{' (comma-separated)' if field.type.startswith('tuple') else ''}"
                                 f" (quick {getattr(quick, field.name)!r}, full {getattr(full, field.name)!r})")
        elif field.type == "bool":  # --flag / --no-flag
            ap.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=None,
                            action=argparse.BooleanOptionalAction,
                            help=f"override {field.name} (quick {getattr(quick, field.name)!r}, "
                                 f"full {getattr(full, field.name)!r})")
    ap.add_argument("--executor", choices=EXECUTORS, default="local",
                    help="where units run: 'local' (this process) or 'ray' (one Ray task per unit; pip install -e '.[ray]')")
    ap.add_argument("--ray-address", default=None,
                    help="a running Ray cluster ('auto', host:port or ray://host:port); default: start a local one")
    ap.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the local Ray cluster (default: all)")
    args = ap.parse_args(argv)
    chosen = getattr(args, "preset", None)
    settings = presets[chosen] if chosen else full if args.full else quick
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(settings)
                 if getattr(args, f.name, None) is not None}
    try:  # each Settings validates itself (__post_init__): a bad flag is one line and exit status 2, as in argparse
        for name, value in overrides.items():  # counts and sizes are >= 1 (>= 0 where the default is 0), rates finite
            if (isinstance(value, int) and not isinstance(value, bool) and value < min(1, getattr(quick, name))
                    and not (name in zero_allowed and value == 0)):
                raise ValueError(f"--{name.replace('_', '-')} must be >= {min(1, getattr(quick, name))}; got {value}")
            if isinstance(value, float) and (value != value or abs(value) == float("inf")
                                             or (name.endswith("lr") and value <= 0)):
                raise ValueError(f"--{name.replace('_', '-')} must be a finite number{' > 0' if name.endswith('lr') else ''}"
                                 f"; got {value}")
        settings = dataclasses.replace(settings, **{**(implied(settings, overrides) if implied else {}), **overrides})
    except (ValueError, TypeError, KeyError) as err:
        ap.exit(2, f"{ap.prog}: error: {err.args[0] if isinstance(err, KeyError) and err.args else err}\n")
    return settings, (chosen or ("full" if args.full else "quick")), args
