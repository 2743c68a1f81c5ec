"""The import structure the architecture promises: ``agents/`` (the authoring SDK,
discovery, the runtime, the event vocabulary) imports nothing from ``sessions_app``,
and no module of the service imports one that imports it back, lazy imports (inside
functions) included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agents", "sessions_app")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).parts
            if "tests" in relative or "migrations" in relative:
                continue
            found[_module_name(path)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports anywhere in its body (``from x import y``
    counts as importing ``x.y`` when that is a module, else ``x``)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in modules else node.module)
    return {name for name in names if name in modules}


def _graph() -> dict[str, set[str]]:
    modules = _project_modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_agents_imports_nothing_from_sessions_app():
    graph = _graph()
    offenders = {
        module: sorted(target for target in targets if target.startswith("sessions_app"))
        for module, targets in graph.items()
        if module.startswith("agents")
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_no_module_imports_one_that_imports_it_back():
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []
