"""Discovery: from an agent folder to its surface and diagnostics.

``AGENTS_DIR/<slug>/agent/`` is walked slot by slot, in the order of ``slots.SLOTS``. Each Python
file is imported on its own and must hold exactly one definition of its slot's
type; Markdown slots are parsed. Nothing is swallowed: a file that is there and
broken is an error naming the path, an odd one is a warning.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from croniter import croniter

from agents import sdk
from agents.channels import PLATFORM_CHANNELS
from agents.discovery import diagnostics as codes
from agents.discovery.diagnostics import Code, Diagnostic
from agents.discovery.loader import LoadFailure, TreeLoader, definitions_in
from agents.discovery.markdown import FrontMatterError, split_front_matter
from agents.discovery.slots import (
    AGENT_ONLY,
    EXTENSION_SPEC_FILE,
    IN_TREE,
    KNOWN_ENTRIES,
    ROOT_ONLY,
    SLOTS,
    Slot,
)
from agents.discovery.surface import FILE_TOOLS, AgentSurface, Entry, InstructionPart, SkillDoc
from agents.runtime.fs.tools import FILE_TOOL_NAMES, WRITE_FILE_TOOLS, is_read_only
from agents.runtime.outbound import OutboundPolicy, OutboundRefused
from agents.sdk.memory import MEMORY_DIR

T = TypeVar("T")

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def is_skipped(path: Path | str) -> bool:
    """Files discovery never looks at: tests, caches, hidden files (a path or a bare name)."""
    name = path if isinstance(path, str) else path.name
    return (
        name.startswith((".", "__pycache__"))
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "__init__.py"
    )


@dataclass
class Walk:
    """Where a walk stands: the loader, the folder diagnostic paths are relative to,
    the list diagnostics go to, the extension namespace (None for the agent's own), and
    the event types hooks may subscribe to."""

    loader: TreeLoader
    base: Path
    diagnostics: list[Diagnostic]
    extension: str | None = None
    known_events: frozenset[str] = frozenset()

    def report(self, code: Code, path: Path, message: str) -> None:
        try:
            shown = path.relative_to(self.base).as_posix()
        except ValueError:
            shown = path.as_posix()
        self.diagnostics.append(Diagnostic(code, shown, message))

    def load_one(self, file: Path, expected: type[T] | tuple[type, ...], slot: str) -> T | None:
        """The file's single definition of the expected type, or None after reporting why not."""
        module = self.loader.load(file)
        if isinstance(module, LoadFailure):
            code = codes.INVALID_DEFINITION if module.kind == "definition" else codes.IMPORT_FAILED
            self.report(code, file, module.message)
            return None
        found = definitions_in(module)
        if not found:
            self.report(codes.NO_DEFINITION, file, f"{file.name!r} defines nothing for {slot}")
            return None
        if len(found) > 1:
            kinds = ", ".join(type(value).__name__ for value in found)
            self.report(codes.SEVERAL_DEFINITIONS, file, f"{file.name!r} holds {len(found)} definitions ({kinds})")
            return None
        [value] = found
        if not isinstance(value, expected):
            wanted = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
            helper = _HELPERS.get(expected)
            made_by = f" (made by {helper})" if helper else ""
            self.report(
                codes.WRONG_HELPER,
                file,
                f"{slot} expects a {wanted}{made_by}, but {file.name!r} defines a {type(value).__name__}",
            )
            return None
        return value  # type: ignore[return-value]

    def check_name(self, name: str, path: Path, kind: str) -> bool:
        """Report an authored name that cannot be used; True when it is fine."""
        if not NAME_PATTERN.fullmatch(name):
            self.report(codes.INVALID_NAME, path, f"{kind} name {name!r} is not usable")
            return False
        if "__" in name and self.extension is None:
            self.report(codes.DOUBLE_UNDERSCORE, path, f"{kind} name {name!r} contains '__'")
            return False
        return True


def _python_files(folder: Path, walk: Walk) -> list[Path]:
    """The slot folder's ``.py`` files; anything else in it is reported as stray."""
    files = []
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if path.is_file() and path.suffix == ".py":
            files.append(path)
        else:
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a .py file of {folder.name}/")
    return files


def _named(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    """A folder of ``<name>.py`` files, one definition each, by file name."""
    [path] = slot.paths
    folder = tree / path
    if not folder.is_dir():
        return
    target: dict[str, Entry[Any]] = getattr(surface, slot.field)
    for file in _python_files(folder, walk):
        if not walk.check_name(file.stem, file, slot.disable or path):
            continue
        if slot.field == "channels" and file.stem in PLATFORM_CHANNELS and walk.extension is None:
            walk.report(codes.RESERVED_CHANNEL, file, f"channel name {file.stem!r} is the platform's own")
            continue
        value = walk.load_one(file, slot.definition or (), f"{path}/")
        if value is not None:
            target[file.stem] = Entry(value, file, walk.extension)


def _single(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    """One file holding one definition (``agent.py``, ``result.py``, ...)."""
    [name] = slot.paths
    file = tree / name
    if file.is_file():
        value = walk.load_one(file, slot.definition or (), name)
        if value is not None:
            setattr(surface, slot.field, value)


# --- slots ------------------------------------------------------------------------------------


def _tools(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    folder = tree / "tools"
    if not folder.is_dir():
        return
    for file in _python_files(folder, walk):
        name = file.stem
        if not walk.check_name(name, file, "tool"):
            continue
        if name in FILE_TOOLS:
            walk.report(codes.SHADOWS_FILE_TOOL, file, f"tool {name!r} has the name of a synthesized file tool")
            continue
        value = walk.load_one(file, sdk.Tool, "tools/")
        if value is not None:
            surface.tools[name] = Entry(value.renamed(name), file, walk.extension)


def _skill_from_markdown(file: Path, walk: Walk) -> SkillDoc | None:
    try:
        front, body = split_front_matter(file.read_text())
    except (FrontMatterError, UnicodeDecodeError) as error:
        walk.report(codes.INVALID_SKILL, file, str(error))
        return None
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        walk.report(codes.INVALID_SKILL, file, "the skill has no description in its front matter")
        return None
    if not body:
        walk.report(codes.INVALID_SKILL, file, "the skill has no body")
        return None
    return SkillDoc(description.strip(), body)


def _skills(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot | None = None) -> None:
    folder = tree / "skills"
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if path.is_dir():
            name, file = path.name, path / "SKILL.md"
            if not file.is_file():
                walk.report(codes.STRAY_FILE, path, f"skill folder {path.name!r} has no SKILL.md")
                continue
        elif path.suffix in {".md", ".py"}:
            name, file = path.stem, path
        else:
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a skill (.md, <name>/SKILL.md or .py)")
            continue
        if not walk.check_name(name, file, "skill"):
            continue
        if file.suffix == ".py":
            skill = walk.load_one(file, sdk.Skill, "skills/")
            doc = SkillDoc(skill.description, skill.instructions) if skill else None
        else:
            doc = _skill_from_markdown(file, walk)
        if doc is None:
            continue
        if name in surface.skills:
            walk.report(codes.DUPLICATE_NAME, file, f"skill {name!r} is defined twice")
            continue
        surface.skills[name] = Entry(doc, file, walk.extension)


def _instructions(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    markdown = [tree / "instructions.md"] if (tree / "instructions.md").is_file() else []
    python = [tree / "instructions.py"] if (tree / "instructions.py").is_file() else []
    folder = tree / "instructions"
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if is_skipped(path):
                continue
            if path.suffix == ".md" and path.is_file():
                markdown.append(path)
            elif path.suffix == ".py" and path.is_file():
                python.append(path)
            else:
                walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not .md or .py")
    for file in sorted(markdown + python, key=lambda p: (p.parent != tree, p.name)):
        if file.suffix == ".md":
            text = file.read_text().strip()
            if text:
                surface.instructions.append(Entry(InstructionPart(text), file, walk.extension))
        else:
            value = walk.load_one(file, sdk.Instructions, "instructions")
            if value is not None:
                surface.instructions.append(Entry(InstructionPart(value.text, value.render), file, walk.extension))


def _valid_cron(expression: str) -> bool:
    return len(expression.split()) == 5 and croniter.is_valid(expression)


def _schedules(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    folder = tree / "schedules"
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if not path.is_file() or path.suffix not in {".md", ".py"}:
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a schedule (.md or .py)")
            continue
        if not walk.check_name(path.stem, path, "schedule"):
            continue
        schedule: sdk.Schedule | None
        if path.suffix == ".py":
            schedule = walk.load_one(path, sdk.Schedule, "schedules/")
        else:
            try:
                front, body = split_front_matter(path.read_text())
            except FrontMatterError as error:
                walk.report(codes.INVALID_CRON, path, str(error))
                continue
            cron = str(front.get("cron", "")).strip()
            if not body:
                walk.report(codes.INVALID_DEFINITION, path, "the schedule has no prompt (the Markdown body)")
                continue
            description, title = front.get("description"), front.get("title")
            schedule = sdk.Schedule(
                cron=cron,
                prompt=body,
                description=str(description) if description else None,
                title=str(title) if title else None,
            )
        if schedule is None:
            continue
        if not _valid_cron(schedule.cron):
            walk.report(codes.INVALID_CRON, path, f"cron {schedule.cron!r} is not a valid 5-field expression")
            continue
        if path.stem in surface.schedules:
            walk.report(codes.DUPLICATE_NAME, path, f"schedule {path.stem!r} is defined twice")
            continue
        surface.schedules[path.stem] = Entry(schedule, path, walk.extension)


def _hooks(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    folder = tree / "hooks"
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        if any(is_skipped(part) for part in path.relative_to(folder).parts) or path.is_dir():
            continue
        relative = path.relative_to(folder)
        if path.suffix != ".py":
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a .py hook")
            continue
        name = relative.with_suffix("").as_posix()
        if not all(walk.check_name(part, path, "hook") for part in name.split("/")):
            continue
        hook = walk.load_one(path, sdk.Hook, "hooks/")
        if hook is None:
            continue
        if not hook.events:
            walk.report(codes.EMPTY_HOOK, path, f"hook {name!r} subscribes to no event; it is skipped")
            continue
        for event_type in hook.events:
            if event_type != "*" and event_type not in walk.known_events:
                walk.report(codes.UNKNOWN_EVENT, path, f"hook {name!r} subscribes to unknown event {event_type!r}")
        surface.hooks[name] = Entry(hook, path, walk.extension)


def _experiments(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    files: list[tuple[str, Path]] = []
    if (tree / "ab.py").is_file():
        files.append(("ab", tree / "ab.py"))  # the experiment of ab.py is named ab (DESIGN.md §9.12)
    if (tree / "ab").is_dir():
        files += [(file.stem, file) for file in _python_files(tree / "ab", walk)]
    for default_name, file in files:
        experiment = walk.load_one(file, sdk.Experiment, "ab")
        if experiment is None:
            continue
        name = experiment.name or default_name
        if not walk.check_name(name, file, "experiment"):
            continue
        if name in surface.experiments:
            walk.report(codes.DUPLICATE_NAME, file, f"experiment {name!r} is defined twice")
            continue
        surface.experiments[name] = Entry(experiment, file, walk.extension)


def _seeds(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    sandbox = tree / "sandbox"
    if sandbox.is_dir():
        for path in sorted(sandbox.iterdir()):
            if path.name != "workspace" and not is_skipped(path):
                walk.report(codes.STRAY_FILE, path, f"only sandbox/workspace/ is used; {path.name!r} is ignored")
    workspace = sandbox / "workspace"
    if not workspace.is_dir():
        return
    inside = tree.resolve()
    for path in sorted(workspace.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        # A symlink that leads out of the tree would copy a server file into every workspace.
        if not path.resolve().is_relative_to(inside):
            walk.report(codes.IGNORED_FILE, path, "a seed that links outside the agent folder is not copied")
            continue
        relative = path.relative_to(workspace).as_posix()
        if relative.split("/")[0].casefold() == MEMORY_DIR:
            walk.report(codes.IGNORED_FILE, path, "memory/ holds the agent's notes from earlier sessions; not copied")
            continue
        surface.seeds.setdefault(relative, path)


def _subagents(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    folder = tree / "subagents"
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if not path.is_dir():
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a subagent folder")
            continue
        if not walk.check_name(path.name, path, "subagent"):
            continue
        child = AgentSurface(slug=f"{surface.slug}/{path.name}", path=path)
        walk_tree(path, replace(walk), child, "subagent")
        if not child.config.description:
            walk.report(codes.NO_DESCRIPTION, path / "agent.py", f"subagent {path.name!r} has no description")
        surface.subagents[path.name] = child


def walk_tree(tree: Path, walk: Walk, surface: AgentSurface, kind: str) -> None:
    """Fill ``surface`` from one tree, slot by slot in the order of ``SLOTS``.
    ``kind`` is ``root``, ``subagent`` or ``extension``."""
    for path in sorted(tree.iterdir()):
        if is_skipped(path):
            continue
        if path.name == "evals" and path.is_dir():
            walk.report(codes.EVALS_INSIDE_AGENT, path, "evals/ inside agent/ is ignored; evals live beside agent/")
        elif kind == "extension" and path.name in AGENT_ONLY:
            walk.report(codes.AGENT_ONLY_PATH, path, f"an extension cannot carry {path.name!r}; it is ignored")
        elif kind == "subagent" and path.name in ROOT_ONLY:
            walk.report(codes.IGNORED_FILE, path, f"{path.name!r} is ignored in a subagent; only the root agent has it")
        elif path.name not in KNOWN_ENTRIES and not (kind == "extension" and path.name == EXTENSION_SPEC_FILE):
            walk.report(codes.IGNORED_FILE, path, f"{path.name!r} is not part of the agent layout")

    for slot in IN_TREE:
        # Extensions are mounted by discover_agent once the agent's own tree is walked.
        if slot.walk != "extensions" and slot.applies_to(kind):
            WALKERS[slot.walk](tree, walk, surface, slot)
    for name, child in surface.subagents.items():
        if name in surface.tools:
            walk.report(codes.DUPLICATE_NAME, child.path, f"subagent {name!r} has the name of a tool")


def _playground(tree: Path, walk: Walk, surface: AgentSurface, slot: Slot) -> None:
    folder = tree / "playground" / "tools"
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if is_skipped(path):
            continue
        if path.suffix == ".html" and path.is_file():
            surface.playground_tools[path.stem] = path
        else:
            walk.report(codes.STRAY_FILE, path, f"{path.name!r} is not a <tool>.html renderer")


Walker = Callable[[Path, Walk, AgentSurface, Slot], None]
# How each kind of slot is walked (slots.WalkKind); "extensions" and "evals" are walked by discover_agent.
WALKERS: dict[str, Walker] = {
    "single": _single,
    "named": _named,
    "instructions": _instructions,
    "tools": _tools,
    "skills": _skills,
    "hooks": _hooks,
    "schedules": _schedules,
    "experiments": _experiments,
    "playground": _playground,
    "seeds": _seeds,
    "subagents": _subagents,
}
# The helper that makes each definition type, to name it when a file holds the wrong one.
_HELPERS: dict[type | tuple[type, ...], str] = {
    slot.definition: slot.helper for slot in SLOTS if slot.definition is not None and slot.helper is not None
}


def _evals(folder: Path, walk: Walk, surface: AgentSurface) -> None:
    evals = folder / "evals"
    if not evals.is_dir():
        return
    for file in sorted(evals.rglob("*.eval.py")):
        if any(is_skipped(part) for part in file.relative_to(evals).parts):
            continue
        case_id = file.relative_to(evals).as_posix().removesuffix(".eval.py")
        case = walk.load_one(file, sdk.EvalCase, "evals/")
        if case is not None:
            surface.evals[case_id] = Entry(case, file)
    config_file = evals / "evals.config.py"
    if config_file.is_file():
        surface.evals_config = walk.load_one(config_file, sdk.EvalsConfig, "evals/evals.config.py")
    elif surface.evals:
        walk.report(
            codes.EVALS_WITHOUT_CONFIG, config_file, f"{len(surface.evals)} eval case(s) but no evals.config.py"
        )


def discover_agent(
    folder: Path,
    slug: str,
    *,
    known_events: frozenset[str],
    mount_extensions: Callable[[Path, Walk, AgentSurface], None] | None = None,
    outbound: OutboundPolicy | None = None,
) -> tuple[AgentSurface, TreeLoader]:
    """Discover ``folder`` (holding ``agent/`` and maybe ``evals/``). MCP connection URLs
    are checked against ``outbound`` (default: public https only).

    Returns the surface and the loader whose modules back it (unload it when the
    surface is replaced).
    """
    folder = folder.resolve()  # extension sources resolve too; keep diagnostic paths relative
    loader = TreeLoader(folder)
    surface = AgentSurface(slug=slug, path=folder)
    walk = Walk(loader, folder, surface.diagnostics, known_events=known_events)
    tree = folder / "agent"
    if not tree.is_dir():
        walk.report(codes.NO_AGENT_TREE, tree, f"{folder} holds no agent/ folder")
        return surface, loader
    walk_tree(tree, walk, surface, "root")
    if mount_extensions is not None:
        mount_extensions(tree, walk, surface)
    if not any(entry.extension is None for entry in surface.instructions) and not _has_python_instructions(tree):
        walk.report(
            codes.NO_INSTRUCTIONS, tree / "instructions.md", "the agent has no instructions (or they are empty)"
        )
    _check_handlers(walk, surface)
    _check_packs(walk, surface)
    _check_file_tools(tree, walk, surface)
    _check_playground(walk, surface)
    _check_connections(walk, surface, outbound or OutboundPolicy())
    _check_webhooks(tree / "agent.py", walk, surface, outbound or OutboundPolicy())
    _check_otel(tree / "otel.py", walk, surface, outbound or OutboundPolicy())
    _evals(folder, walk, surface)
    return surface, loader


def _check_webhooks(agent_file: Path, walk: Walk, surface: AgentSurface, policy: OutboundPolicy) -> None:
    """Refuse webhook URLs the policy refuses now, rather than when an event is first sent."""
    for position, webhook in enumerate(surface.config.webhooks):
        try:
            policy.check_url(webhook.url)
        except OutboundRefused as refused:
            walk.report(codes.INVALID_DEFINITION, agent_file, f"webhooks[{position}] is refused: {refused}")
        for event_type in webhook.events:
            if event_type != "*" and event_type not in walk.known_events:
                walk.report(codes.UNKNOWN_EVENT, agent_file, f"webhooks[{position}] names unknown event {event_type!r}")


def _check_otel(otel_file: Path, walk: Walk, surface: AgentSurface, policy: OutboundPolicy) -> None:
    """An ``otel.py`` endpoint is fetched like a webhook: refused now if the policy refuses it."""
    if surface.otel is None or not surface.otel.endpoint:
        return
    try:
        policy.check_url(surface.otel.endpoint)
    except OutboundRefused as refused:
        walk.report(codes.INVALID_DEFINITION, otel_file, f"the OpenTelemetry endpoint is refused: {refused}")


def _check_connections(walk: Walk, surface: AgentSurface, policy: OutboundPolicy) -> None:
    """Refuse MCP URLs the platform must not fetch (loopback, private, metadata, plain http)
    now, rather than when a turn first connects."""
    for connections in (surface.mcp_connections, surface.host_connections):
        for name, entry in connections.items():
            if entry.value.url is None:
                continue
            try:
                policy.check_url(entry.value.url)
            except OutboundRefused as refused:
                walk.report(codes.INVALID_DEFINITION, entry.path, f"connection {name!r} is refused: {refused}")
    for child in surface.subagents.values():
        _check_connections(walk, child, policy)


def _has_python_instructions(tree: Path) -> bool:
    """Python instructions that failed to load are already an error of their own."""
    folder = tree / "instructions"
    return (tree / "instructions.py").exists() or (folder.is_dir() and any(folder.glob("*.py")))


def _check_file_tools(tree: Path, walk: Walk, surface: AgentSurface) -> None:
    """Refuse the combinations of ``root`` and ``tools=[...]`` that cannot work (fail closed)."""
    allow, root = surface.config.tools, surface.config.root
    if allow is None:
        return
    unknown = sorted(set(allow) - set(FILE_TOOL_NAMES))
    if unknown:
        walk.report(codes.UNKNOWN_FILE_TOOL, tree / "agent.py", f"tools= names unknown file tools {unknown!r}")
    if root is None:
        walk.report(codes.FILE_TOOLS_WITHOUT_ROOT, tree / "agent.py", "tools= filters file tools, but there is no root")
    elif is_read_only(root) and set(allow) & WRITE_FILE_TOOLS:
        writes = sorted(set(allow) & WRITE_FILE_TOOLS)
        walk.report(
            codes.WRITE_TOOLS_ON_READ_ONLY_ROOT, tree / "agent.py", f"{writes!r} cannot write to a read-only root"
        )


# Names an author gives the context parameter; a handler taking one of them first was
# written for the old (ctx, event) order.
CONTEXT_PARAMETERS = frozenset({"ctx", "context", "context_"})


def _check_handlers(walk: Walk, surface: AgentSurface) -> None:
    """Refuse hook and channel ``events`` handlers that cannot be called event first,
    now rather than at every event (where a raise is only logged)."""
    subscribers: list[tuple[str, str, Entry[sdk.Hook] | Entry[sdk.Channel], tuple[str, ...]]] = [
        ("hook", name, entry, ("event", "ctx")) for name, entry in surface.hooks.items()
    ]
    subscribers += [("channel", name, entry, ("event", "channel", "ctx")) for name, entry in surface.channels.items()]
    for kind, name, entry, order in subscribers:
        for event_type, handler in entry.value.events.items():
            problem = handler_signature_problem(handler, order)
            if problem is not None:
                where = f"{kind} {name!r}: the handler for {event_type!r}"
                walk.report(codes.HANDLER_SIGNATURE, entry.path, f"{where} {problem}")
    for child in surface.subagents.values():
        _check_handlers(walk, child)


def _check_packs(walk: Walk, surface: AgentSurface) -> None:
    """Warn about a GitHub pack without a webhook secret: anyone may post to its route."""
    for name, entry in surface.channels.items():
        pack = entry.value.pack
        if pack is not None and pack.kind == "github" and not pack.options.get("secret"):
            walk.report(
                codes.UNSIGNED_WEBHOOKS, entry.path, f"channel {name!r} admits unsigned deliveries (no secret=)"
            )


def handler_signature_problem(handler: Callable[..., object], order: tuple[str, ...]) -> str | None:
    """Why ``handler`` cannot be called with ``order`` (e.g. ``("event", "ctx")``), or None."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return None
    positional = [
        parameter
        for parameter in signature.parameters.values()
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    wanted = f"({', '.join(order)})"
    if positional and _is_context(positional[0]):
        taken = ", ".join(parameter.name for parameter in positional)
        return f"takes ({taken}), the context first; it is called {wanted}"
    try:
        signature.bind(*order)
    except TypeError:
        return f"takes {signature}; it is called {wanted}"
    return None


def _is_context(parameter: inspect.Parameter) -> bool:
    annotation = parameter.annotation
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return parameter.name in CONTEXT_PARAMETERS or str(name).endswith("Context")


def _check_playground(walk: Walk, surface: AgentSurface) -> None:
    for name, path in surface.playground_tools.items():
        if name not in surface.tools:
            walk.report(codes.UNKNOWN_PLAYGROUND_TOOL, path, f"there is no tool {name!r} to render")
