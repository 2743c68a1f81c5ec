"""Importing authored Python files, each as a module of its own agent tree.

Every load of a tree gets a fresh package root (``_agent_tree_<n>``) whose path
is the tree's folder, so files can import shared code with relative imports
(``from ..lib.util import helper``) and two agents never share modules. A
reload drops the previous root's modules first.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import sdk
from agents.discovery.slots import SLOTS
from agents.sdk import DefinitionError

# Every type a discovered file may define (each slot's, and an extension's own
# extension.py); anything else in a module is ignored.
DEFINITION_TYPES: tuple[type, ...] = (
    *dict.fromkeys(
        kind
        for slot in SLOTS
        for kind in (slot.definition if isinstance(slot.definition, tuple) else (slot.definition,))
        if kind is not None
    ),
    sdk.ExtensionSpec,
)

_roots = itertools.count(1)


@dataclass(frozen=True)
class LoadFailure:
    """Why a file could not be imported: a helper refused its arguments, or the import raised."""

    kind: str  # "definition" | "import"
    message: str


class TreeLoader:
    """Imports the files of one tree under one package root."""

    def __init__(self, root_dir: Path) -> None:
        self.root_dir = root_dir
        self.package = f"_agent_tree_{next(_roots)}"
        self.children: list[TreeLoader] = []
        self._ensure_package(self.package, root_dir)

    def child(self, root_dir: Path) -> TreeLoader:
        """A loader for another tree (a mounted extension) unloaded together with this one."""
        loader = TreeLoader(root_dir)
        self.children.append(loader)
        return loader

    def _ensure_package(self, name: str, path: Path) -> None:
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            package.__package__ = name
            sys.modules[name] = package

    def module_name(self, file: Path) -> str:
        relative = file.relative_to(self.root_dir).with_suffix("")
        parts = [part.replace("-", "_").replace(".", "_") for part in relative.parts]
        # Intermediate folders become packages so relative imports resolve.
        name = self.package
        folder = self.root_dir
        for part, real in zip(parts[:-1], relative.parts[:-1], strict=True):
            name = f"{name}.{part}"
            folder = folder / real
            self._ensure_package(name, folder)
        return f"{name}.{parts[-1]}"

    def load(self, file: Path) -> types.ModuleType | LoadFailure:
        """Import ``file``; a failure is returned, never raised."""
        name = self.module_name(file)
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            return LoadFailure("import", f"cannot import {file.name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except DefinitionError as error:
            sys.modules.pop(name, None)
            return LoadFailure("definition", str(error))
        except (Exception, SystemExit) as error:  # noqa: BLE001  an author's bug becomes a diagnostic
            sys.modules.pop(name, None)
            return LoadFailure("import", _describe_exception(error, file, self.root_dir))
        return module

    def unload(self) -> None:
        """Forget every module imported under this root."""
        for name in [name for name in sys.modules if name == self.package or name.startswith(self.package + ".")]:
            del sys.modules[name]
        for child in self.children:
            child.unload()


def _describe_exception(error: BaseException, file: Path, root: Path) -> str:
    """The exception and the last traceback frame inside the authored tree, e.g.
    ``ValueError: bad (lib/util.py line 3: raise ValueError("bad"))``."""
    if isinstance(error, SyntaxError):
        return f"{type(error).__name__}: {error}"  # its text already names the file and line
    frames = traceback.extract_tb(error.__traceback__)
    authored = [frame for frame in frames if Path(frame.filename).is_relative_to(root)] or frames[-1:]
    where = ""
    if authored:
        frame = authored[-1]
        shown = Path(frame.filename)
        shown_name = shown.relative_to(root).as_posix() if shown.is_relative_to(root) else shown.name
        code = frame.line.strip() if frame.line else frame.name
        where = f" ({shown_name} line {frame.lineno}: {code})"
    return f"{type(error).__name__}: {error}{where}"


def definitions_in(module: types.ModuleType) -> list[Any]:
    """The definitions a module holds at top level, each once, in order of appearance."""
    found: list[Any] = []
    for value in vars(module).values():
        if isinstance(value, DEFINITION_TYPES) and not any(value is seen for seen in found):
            found.append(value)
    return found


def tree_fingerprint(folder: Path) -> tuple[int, int, int]:
    """Changes whenever a file under ``folder`` is added, removed or modified."""
    count = newest = total = 0
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = [name for name in subdirs if name != "__pycache__"]
        for name in files:
            stat = os.stat(os.path.join(directory, name))
            count, newest, total = count + 1, max(newest, stat.st_mtime_ns), total + stat.st_size
    return count, newest, total
