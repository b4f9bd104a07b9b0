"""Tidy, atomic, resumable result storage: one row per run x logged step.

A sweep is split into *units* (e.g. one task x seed). Each finished unit is written to its own CSV
file through a temporary file and ``os.replace`` (atomic on POSIX), so a killed sweep loses at most
the unit in flight and never leaves a half-written file; rerunning skips the units already on disk.
``table(specs)`` returns exactly the rows of the requested units, in the requested order.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Mapping

import pandas as pd


def unit_key(spec: Mapping[str, Any]) -> str:
    """A stable file-name-safe key for a unit's full specification."""
    text = json.dumps(spec, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _umask() -> int:
    """The process's umask: from /proc (Linux), else by setting it and putting it back (os has no getter; that
    briefly changes it for every thread of the process)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file_atomic(path: str | Path, write: Callable[[IO[Any]], None], *, binary: bool = False) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path`` and move it into place: ``path`` is either absent, the
    old file, or the complete new file (a crash or an error leaves no partial file and removes the temporary)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"newline": ""})) as fh:
            write(fh)
            fh.flush()
            # mkstemp makes the file private (0600); give it the mode open() would have (0666 less the umask),
            # so that a result is as readable as any other file its writer makes
            os.chmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` as CSV so that ``path`` is either absent, the old file, or the complete new file."""
    write_file_atomic(path, lambda fh: frame.to_csv(fh, index=False))


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (a Markdown table, a report) so that ``path`` is absent, the old file or the new one."""
    write_file_atomic(path, lambda fh: fh.write(text))


class ResultStore:
    """A folder of completed units: ``<root>/units/<key>.csv``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        (self.root / "units").mkdir(parents=True, exist_ok=True)

    def _path(self, spec: Mapping[str, Any]) -> Path:
        return self.root / "units" / f"{unit_key(spec)}.csv"

    def has(self, spec: Mapping[str, Any]) -> bool:
        return self._path(spec).exists()

    def put(self, spec: Mapping[str, Any], frame: pd.DataFrame) -> None:
        frame = frame.copy()
        frame["unit"] = unit_key(spec)
        write_atomic(self._path(spec), frame)

    def table(self, specs: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
        """The rows of the given units, in the given order (units not on disk are an error)."""
        frames = []
        for spec in specs:
            path = self._path(spec)
            if not path.exists():
                raise FileNotFoundError(f"unit {unit_key(spec)} ({dict(spec)}) has not been run")
            frames.append(pd.read_csv(path))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
