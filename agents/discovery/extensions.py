"""Mounting extensions and plugins into an agent's surface.

``extensions/<ns>.py`` (or ``extensions/<ns>/extension.py``) names the source.
The source tree is discovered on its own, the mount folder's overrides and
``disable_*()`` are applied, and what remains joins the agent as ``<ns>__<name>``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents import sdk
from agents.discovery import diagnostics as codes
from agents.discovery.discover import Walk, _skills, is_skipped, walk_tree
from agents.discovery.markdown import FrontMatterError, split_front_matter
from agents.discovery.slots import DISABLE_KINDS, EXTENSIBLE, INFO_KEYS, REGISTRIES, Slot
from agents.discovery.surface import AgentSurface, Entry, ExtensionInfo, InstructionPart, SkillDoc

ENTRY_POINT_GROUP = "agent_platform.extensions"
PLUGIN_MANIFESTS = (".claude-plugin/plugin.json", ".cursor-plugin/plugin.json", "plugin.json")


@dataclass(frozen=True)
class InstalledExtension:
    """One entry point of ``agent_platform.extensions``: a package mounts can name."""

    name: str  # what mount("<name>") says
    module: str  # the entry point's target
    distribution: str | None  # the pip package that provides it
    version: str | None
    summary: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "summary": self.summary,
        }


def installed_extensions() -> list[InstalledExtension]:
    """The extension packages installed in this Python environment, by entry point name."""
    found = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry_point.dist
        found.append(
            InstalledExtension(
                entry_point.name,
                entry_point.value,
                dist.name if dist is not None else None,
                dist.version if dist is not None else None,
                dist.metadata["Summary"] if dist is not None and "Summary" in dist.metadata else None,
            )
        )
    return sorted(found, key=lambda item: item.name)


@dataclass(frozen=True)
class _Source:
    folder: Path
    package: dict[str, str] | None = None  # {"name", "version"} of the pip package, for an entry point


def _is_path(source: str) -> bool:
    return source.startswith((".", "/")) or "/" in source


def resolve_source(source: str, relative_to: Path) -> _Source | None:
    """The folder of a mount source: a path, an entry point, or an importable package."""
    if _is_path(source):
        folder = (relative_to / source).resolve()
        return _Source(folder) if folder.is_dir() else None
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=source):
        target = entry_point.load()
        location = getattr(target, "__path__", None) or [Path(getattr(target, "__file__", "")).parent]
        dist = entry_point.dist
        package = {"name": dist.name, "version": dist.version} if dist is not None else None
        return _Source(Path(next(iter(location))), package)
    try:
        spec = importlib.util.find_spec(source)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return _Source(Path(next(iter(spec.submodule_search_locations))))


def mount_extensions(tree: Path, walk: Walk, surface: AgentSurface) -> None:
    """Mount every ``extensions/<ns>`` of ``tree`` into ``surface``."""
    folder = tree / "extensions"
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if path.is_file() and path.suffix == ".py":
            namespace, mount_file, override_dir = path.stem, path, None
        elif path.is_dir():
            namespace, mount_file, override_dir = path.name, path / "extension.py", path
            if not mount_file.is_file():
                walk.report(codes.NO_DEFINITION, mount_file, f"mount folder {path.name!r} has no extension.py")
                continue
        else:
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a mount (.py file or folder)")
            continue
        if not walk.check_name(namespace, path, "extension namespace"):
            continue
        if namespace in surface.extensions:
            walk.report(codes.DUPLICATE_NAME, path, f"extension namespace {namespace!r} is mounted twice")
            continue
        spec = walk.load_one(mount_file, (sdk.Mount, sdk.PluginMount), "extensions/")
        if spec is None:
            continue
        mounted = _load_source(spec, namespace, mount_file, walk)
        if mounted is None:
            continue
        contribution, info = mounted
        if override_dir is not None:
            _apply_overrides(override_dir, contribution, info, walk)
        _apply_disables(spec.disable, contribution, info, walk, mount_file)
        _merge(contribution, namespace, surface, info)
        surface.extensions[namespace] = info


def _load_source(
    spec: sdk.Mount | sdk.PluginMount, namespace: str, mount_file: Path, walk: Walk
) -> tuple[AgentSurface, ExtensionInfo] | None:
    source = spec.source if isinstance(spec, sdk.Mount) else spec.path
    resolved = (
        resolve_source(source, mount_file.parent)
        if isinstance(spec, sdk.Mount)
        else _Source((mount_file.parent / source).resolve())
    )
    if resolved is None or not resolved.folder.is_dir():
        named = isinstance(spec, sdk.Mount) and not _is_path(source)
        # A package name: the usual cause is a package not installed in this environment.
        hint = " (no such package is installed: pip install it; `agent extensions` lists those that are)"
        walk.report(codes.MOUNT_NOT_FOUND, mount_file, f"cannot find extension {source!r}{hint if named else ''}")
        return None
    folder = resolved.folder
    kind = "extension" if isinstance(spec, sdk.Mount) else "plugin"
    info = ExtensionInfo(namespace, kind, source, folder, package=resolved.package)
    contribution = AgentSurface(slug=namespace, path=folder)
    ext_walk = replace(walk, loader=walk.loader.child(folder), extension=namespace)
    if isinstance(spec, sdk.PluginMount):
        return (contribution, info) if _load_plugin(folder, ext_walk, contribution, mount_file) else None
    config = _validated_config(folder, spec, ext_walk, mount_file, info)
    if config is None:
        return None
    info.config = config
    walk_tree(folder, ext_walk, contribution, "extension")
    return contribution, info


def _validated_config(
    folder: Path, spec: sdk.Mount, walk: Walk, mount_file: Path, info: ExtensionInfo
) -> dict[str, Any] | None:
    """The mount's config as the extension's model validated it (defaults filled in), or
    None after reporting why it is refused. ``info`` takes the extension's description."""
    declared = (
        walk.load_one(folder / "extension.py", sdk.ExtensionSpec, "extension.py")
        if (folder / "extension.py").is_file()
        else None
    )
    if declared is not None:
        info.description = declared.description
    schema = declared.config if declared is not None else None
    if schema is None:
        if spec.config:
            walk.report(codes.INVALID_EXTENSION_CONFIG, mount_file, f"extension {spec.source!r} takes no config")
            return None
        return {}
    try:
        validated = schema.model_validate(dict(spec.config))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in error.errors())
        walk.report(codes.INVALID_EXTENSION_CONFIG, mount_file, f"config for {spec.source!r}: {problems}")
        return None
    return validated.model_dump()


def _apply_overrides(override_dir: Path, contribution: AgentSurface, info: ExtensionInfo, walk: Walk) -> None:
    overrides = AgentSurface(slug=contribution.slug, path=override_dir)
    walk_tree(override_dir, replace(walk, extension=contribution.slug), overrides, "extension")
    # Only named contributions can be overridden; anything else here would silently do nothing.
    for entry in overrides.instructions:
        walk.report(
            codes.IGNORED_FILE, entry.path, "instructions in a mount folder are ignored; use disable_instructions()"
        )
    if overrides.artifacts is not None or overrides.seeds:
        walk.report(codes.IGNORED_FILE, override_dir, "artifacts and sandbox seeds in a mount folder are ignored")
    for slot in REGISTRIES:
        for name, value in getattr(overrides, slot.field).items():
            existing: dict[str, Any] = getattr(contribution, slot.field)
            if name not in existing:
                path = value.path if isinstance(value, (Entry, AgentSurface)) else override_dir
                walk.report(codes.UNKNOWN_OVERRIDE, path, f"the extension has no {slot.disable} {name!r} to override")
                continue
            existing[name] = value
            info.overridden.append(f"{slot.disable}:{name}")


def _apply_disables(
    disables: tuple[sdk.Disable, ...], contribution: AgentSurface, info: ExtensionInfo, walk: Walk, mount_file: Path
) -> None:
    for item in disables:
        removed = False
        for slot in DISABLE_KINDS.get(item.kind, ()):
            removed = _remove(contribution, slot, item.name) or removed
        if removed:
            info.disabled.append(f"{item.kind}:{item.name}")
        else:
            walk.report(codes.UNKNOWN_DISABLE, mount_file, f"the extension has no {item.kind} {item.name!r} to disable")


def _remove(contribution: AgentSurface, slot: Slot, name: str) -> bool:
    """Remove ``name`` from the slot (all of it unless the slot is a named registry);
    whether there was anything to remove."""
    value = getattr(contribution, slot.field)
    if slot.shape == "named":
        return value.pop(name, None) is not None
    had = bool(value) if slot.shape in ("list", "files") else value is not None
    if slot.shape == "one":
        setattr(contribution, slot.field, None)
    else:
        value.clear()
    return had


def _merge(contribution: AgentSurface, namespace: str, surface: AgentSurface, info: ExtensionInfo) -> None:
    """Add what the extension contributes to ``surface``: named entries as ``<ns>__<name>``."""
    for slot in EXTENSIBLE:
        if slot.shape != "named":
            _MERGE_WHOLE[slot.field](contribution, namespace, surface, info)
            continue
        source: dict[str, Any] = getattr(contribution, slot.field)
        target: dict[str, Any] = getattr(surface, slot.field)
        for name, value in source.items():
            if isinstance(value, Entry) and isinstance(value.value, sdk.Tool):
                value = Entry(value.value.renamed(_prefixed(namespace, name)), value.path, namespace)
            target[_prefixed(namespace, name)] = value
            info.contributed.setdefault(INFO_KEYS[slot.field], []).append(_prefixed(namespace, name))


def _prefixed(namespace: str, name: str) -> str:
    return f"{namespace}__{name}"


def _merge_instructions(contribution: AgentSurface, namespace: str, surface: AgentSurface, info: ExtensionInfo) -> None:
    if contribution.instructions:
        surface.instructions.extend(contribution.instructions)
        info.contributed["instructions"] = [entry.path.name for entry in contribution.instructions]


def _merge_artifacts(contribution: AgentSurface, namespace: str, surface: AgentSurface, info: ExtensionInfo) -> None:
    if contribution.artifacts is not None:
        kinds = {_prefixed(namespace, kind): text for kind, text in contribution.artifacts.kinds.items()}
        base = surface.artifacts or sdk.ArtifactsConfig(kinds={})
        retention = base.retention
        if contribution.artifacts.retention is not None:  # each kind keeps what its own artifacts.py said
            own = contribution.artifacts
            per_kind = {kind: base.retention_of(kind) for kind in base.kinds}
            per_kind |= {_prefixed(namespace, kind): own.retention_of(kind) for kind in own.kinds}
            retention = {kind: value for kind, value in per_kind.items() if value is not None}
        surface.artifacts = sdk.ArtifactsConfig({**base.kinds, **kinds}, base.tag_artifact, retention)
        info.contributed["artifactKinds"] = list(kinds)


def _merge_seeds(contribution: AgentSurface, namespace: str, surface: AgentSurface, info: ExtensionInfo) -> None:
    for relative, path in contribution.seeds.items():
        surface.seeds.setdefault(relative, path)  # the agent's own seed wins
    if contribution.seeds:
        info.contributed["seeds"] = sorted(contribution.seeds)


# How the extensible slots that are not named registries join the agent (a guard test
# keeps this in step with slots.EXTENSIBLE).
_MERGE_WHOLE: dict[str, Callable[[AgentSurface, str, AgentSurface, ExtensionInfo], None]] = {
    "instructions": _merge_instructions,
    "artifacts": _merge_artifacts,
    "seeds": _merge_seeds,
}


# --- plugin folders ---------------------------------------------------------------------------


def _load_plugin(folder: Path, walk: Walk, contribution: AgentSurface, mount_file: Path) -> bool:
    manifest = next((folder / name for name in PLUGIN_MANIFESTS if (folder / name).is_file()), None)
    if manifest is None:
        walk.report(codes.INVALID_PLUGIN, mount_file, f"{folder.name!r} has no plugin.json")
        return False
    try:
        data = json.loads(manifest.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        walk.report(codes.INVALID_PLUGIN, manifest, f"plugin.json is not valid JSON: {error}")
        return False
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        walk.report(codes.INVALID_PLUGIN, manifest, "plugin.json must be an object with a 'name'")
        return False
    _skills(folder, walk, contribution)
    _markdown_folder(
        folder / "commands", walk, lambda name, front, body, path: _command(name, front, body, path, contribution, walk)
    )
    _markdown_folder(
        folder / "agents",
        walk,
        lambda name, front, body, path: _plugin_agent(name, front, body, path, contribution, walk),
    )
    _mcp_json(folder, walk, contribution)
    return True


def _markdown_folder(folder: Path, walk: Walk, add: Callable[[str, dict[str, Any], str, Path], None]) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path) or path.suffix != ".md":
            continue
        try:
            front, body = split_front_matter(path.read_text())
        except FrontMatterError as error:
            walk.report(codes.INVALID_PLUGIN, path, str(error))
            continue
        if walk.check_name(path.stem, path, folder.name.rstrip("s")):
            add(path.stem, front, body, path)


def _command(name: str, front: dict[str, Any], body: str, path: Path, contribution: AgentSurface, walk: Walk) -> None:
    if not body:
        walk.report(codes.INVALID_PLUGIN, path, f"command {name!r} is empty")
        return
    description = str(front.get("description") or body.splitlines()[0]).strip()
    contribution.skills[name] = Entry(SkillDoc(description, body, source="command"), path, walk.extension)


def _plugin_agent(
    name: str, front: dict[str, Any], body: str, path: Path, contribution: AgentSurface, walk: Walk
) -> None:
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        walk.report(codes.NO_DESCRIPTION, path, f"plugin agent {name!r} has no description")
        return
    model = front.get("model")
    child = AgentSurface(
        slug=name,
        path=path,
        config=sdk.AgentConfig(
            model=model if isinstance(model, str) and ":" in model else None, description=description
        ),
    )
    if body:
        child.instructions.append(Entry(InstructionPart(body), path, walk.extension))
    contribution.subagents[name] = child


def _mcp_json(folder: Path, walk: Walk, contribution: AgentSurface) -> None:
    file = next((folder / name for name in ("mcp.json", ".mcp.json") if (folder / name).is_file()), None)
    if file is None:
        return
    try:
        servers = json.loads(file.read_text()).get("mcpServers", {})
    except (json.JSONDecodeError, AttributeError, UnicodeDecodeError) as error:
        walk.report(codes.INVALID_PLUGIN, file, f"mcp.json is not a JSON object with mcpServers: {error}")
        return
    if not isinstance(servers, dict):
        walk.report(codes.INVALID_PLUGIN, file, f"mcpServers must be an object, not {type(servers).__name__}")
        return
    for name, server in sorted(servers.items()):
        if not walk.check_name(name, file, "connection"):
            continue
        try:
            server = _plugin_root(server, folder)
            connection = sdk.define_mcp_connection(
                command=server.get("command"),
                args=server.get("args", ()),
                env=server.get("env"),
                url=server.get("url"),
                headers=server.get("headers"),
            )
        except (sdk.DefinitionError, AttributeError, TypeError) as error:
            walk.report(codes.INVALID_PLUGIN, file, f"mcp server {name!r}: {error}")
            continue
        contribution.mcp_connections[name] = Entry(connection, file, walk.extension)


def _plugin_root(server: Any, folder: Path) -> Any:
    """``${CLAUDE_PLUGIN_ROOT}`` in a server's strings is the plugin folder, as plugin
    hosts fill it in (other ``${NAME}`` stay: they name secrets)."""

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("${CLAUDE_PLUGIN_ROOT}", str(folder))
        if isinstance(value, list):
            return [fill(item) for item in value]
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return value

    return fill(server)
