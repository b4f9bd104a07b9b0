"""The linter configured in pyproject.toml ([tool.ruff]) passes on the whole repository: pyflakes, pycodestyle's
errors, blind excepts, and no `# noqa` that suppresses nothing (RUF100)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_passes_on_the_repository():
    pytest.importorskip("ruff", reason="the linter comes with the dev extra: pip install -e '.[dev]'")
    exe = shutil.which("ruff") or sys.executable
    cmd = [exe, "check", str(ROOT)] if exe != sys.executable else [exe, "-m", "ruff", "check", str(ROOT)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
