"""The layers of docs/DESIGN.md section 1 are a checked contract: ``lint-imports`` (import-linter, configured in
pyproject.toml's [tool.importlinter]) holds on the package, it breaks when a core module imports the lab, and the
module import graph has no cycle."""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def _lint(cwd: Path, package_root: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_root), "HOME": str(cwd)}
    return subprocess.run([*LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_layering_contract_holds_on_the_package(tmp_path):
    done = _lint(tmp_path, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_the_contract_breaks_when_a_core_module_imports_the_lab(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "fadesim", copy / "fadesim", ignore=shutil.ignore_patterns("__pycache__", "*.csv"))
    bandit = copy / "fadesim" / "tasks" / "bandit.py"
    bandit.write_text(bandit.read_text() + "\nfrom fadesim.lab.stats import ci95  # an upward import\n")
    done = _lint(tmp_path, copy)
    assert done.returncode != 0 and "0 kept, 1 broken" in done.stdout
    assert "fadesim.tasks.bandit -> fadesim.lab.stats" in done.stdout


def test_the_module_import_graph_has_no_cycle():
    graph = grimp.build_graph("fadesim", include_external_packages=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert len(graph.modules) > 50 and cycles == []
