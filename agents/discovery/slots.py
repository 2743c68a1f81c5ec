"""The authoring slots: one row per slot of an agent tree, in discovery order.

Everything that must agree about a slot is derived from its row: the top-level
entries discovery knows, the entries only the mounting agent may carry, the
registries an extension contributes to and ``disable_*()`` removes from, and the
keys of the ``/v1/info`` document. Adding a slot is adding a row here (see
CONTRIBUTING.md, "Adding an authoring slot"); a guard test fails when a field of
``AgentSurface`` has no row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agents import sdk

# How a slot's files are walked: each name is a walker in discover.WALKERS, except
# "extensions" (mounted once the whole tree is walked) and "evals" (beside agent/).
WalkKind = Literal[
    "single",  # one file holding one definition (agent.py, result.py, ...)
    "named",  # a folder of <name>.py files, one definition each
    "instructions",
    "tools",
    "skills",
    "hooks",
    "schedules",
    "experiments",
    "playground",
    "seeds",
    "subagents",
    "extensions",
    "evals",
]
# What the surface holds for the slot, which says how extensions merge into it and how
# disable_*() removes from it: a registry of named entries, a list, one value, or files by path.
Shape = Literal["named", "list", "one", "files"]


@dataclass(frozen=True)
class Slot:
    """One authoring slot."""

    paths: tuple[str, ...]  # its entries in agent/ ("tools", "ab.py", ...); evals: beside agent/
    fields: tuple[str, ...]  # the AgentSurface fields it fills (the first is its main one)
    definition: type | tuple[type, ...] | None  # what its Python files define (None: no Python)
    helper: str | None  # the agents.sdk helper that makes that definition
    walk: WalkKind
    shape: Shape
    info_key: str | None  # its key in GET /v1/info (None: agent.py's settings are top-level keys)
    disable: str | None = None  # its disable_<kind>() kind, when an extension's contribution can be removed
    extension: bool = False  # an extension (or a mount folder) may contribute it
    subagent: bool = True  # a subagent may have it
    beside: bool = False  # lives beside agent/, not in it

    @property
    def field(self) -> str:
        return self.fields[0]

    def applies_to(self, kind: str) -> bool:
        """Whether a tree of this kind (``root``, ``subagent``, ``extension``) has the slot."""
        if kind == "extension":
            return self.extension
        if kind == "subagent":
            return self.subagent
        return True


SLOTS: tuple[Slot, ...] = (
    Slot(("agent.py",), ("config",), sdk.AgentConfig, "define_agent", "single", "one", None),
    Slot(
        ("instructions.md", "instructions.py", "instructions"),
        ("instructions",),
        sdk.Instructions,
        "define_instructions",
        "instructions",
        "list",
        "instructions",
        disable="instructions",
        extension=True,
    ),
    Slot(("tools",), ("tools",), sdk.Tool, "@tool", "tools", "named", "tools", disable="tool", extension=True),
    Slot(
        ("skills",),
        ("skills",),
        sdk.Skill,
        "define_skill",
        "skills",
        "named",
        "skills",
        disable="skill",
        extension=True,
    ),
    Slot(
        ("mcp-connections",),
        ("mcp_connections",),
        sdk.McpConnection,
        "define_mcp_connection",
        "named",
        "named",
        "mcpConnections",
        disable="connection",
        extension=True,
    ),
    Slot(
        ("host-connections",),
        ("host_connections",),
        sdk.McpConnection,
        "define_mcp_connection",
        "named",
        "named",
        "hostConnections",
        disable="connection",
        extension=True,
    ),
    Slot(
        ("channels",),
        ("channels",),
        sdk.Channel,
        "define_channel",
        "named",
        "named",
        "channels",
        disable="channel",
        extension=True,
    ),
    Slot(("hooks",), ("hooks",), sdk.Hook, "define_hook", "hooks", "named", "hooks", disable="hook", extension=True),
    Slot(
        ("schedules",),
        ("schedules",),
        sdk.Schedule,
        "define_schedule",
        "schedules",
        "named",
        "schedules",
        disable="schedule",
        extension=True,
    ),
    Slot(
        ("ab.py", "ab"),
        ("experiments",),
        sdk.Experiment,
        "define_ab",
        "experiments",
        "named",
        "experiments",
        disable="ab",
        extension=True,
    ),
    Slot(
        ("artifacts.py",),
        ("artifacts",),
        sdk.ArtifactsConfig,
        "define_artifacts",
        "single",
        "one",
        "artifacts",
        disable="artifacts",
        extension=True,
    ),
    Slot(("result.py",), ("result",), sdk.ResultHandler, "define_result", "single", "one", "result", subagent=False),
    Slot(("ab.config.py",), ("ab_config",), sdk.ABConfig, "define_ab_config", "single", "one", "abConfig"),
    Slot(("storage.py",), ("storage",), sdk.StorageConfig, "define_storage", "single", "one", "storage"),
    Slot(("otel.py",), ("otel",), sdk.OtelConfig, "define_otel", "single", "one", "otel"),
    Slot(("playground",), ("playground_tools",), None, None, "playground", "files", "playgroundTools"),
    Slot(("sandbox",), ("seeds",), None, None, "seeds", "files", "workspace", extension=True),
    Slot(
        ("subagents",),
        ("subagents",),
        sdk.AgentConfig,
        "define_agent",
        "subagents",
        "named",
        "subagents",
        disable="subagent",
        extension=True,
    ),
    Slot(
        ("extensions",),
        ("extensions",),
        (sdk.Mount, sdk.PluginMount),
        "mount",
        "extensions",
        "named",
        "extensions",
        subagent=False,
    ),
    Slot(
        ("evals",),
        ("evals", "evals_config"),
        (sdk.EvalCase, sdk.EvalsConfig),
        "define_eval",
        "evals",
        "named",
        "evals",
        beside=True,
    ),
)

# Entries of agent/ that are no slot but belong there.
NON_SLOT_ENTRIES = frozenset({"lib", "README.md", "__init__.py"})
# An extension tree's own description (define_extension), at its top level only.
EXTENSION_SPEC_FILE = "extension.py"

IN_TREE: tuple[Slot, ...] = tuple(slot for slot in SLOTS if not slot.beside)
# Top-level entries of an agent tree that discovery knows (anything else is a warning).
KNOWN_ENTRIES = frozenset(path for slot in IN_TREE for path in slot.paths) | NON_SLOT_ENTRIES
# Entries that configure the mounting agent itself; an extension carrying them is warned and they are ignored.
AGENT_ONLY = frozenset(path for slot in IN_TREE if not slot.extension for path in slot.paths)
# Entries a subagent does not have (only the root agent commits results and mounts extensions).
ROOT_ONLY = frozenset(path for slot in IN_TREE if not slot.subagent for path in slot.paths)
# The slots an extension contributes to, in discovery order.
EXTENSIBLE: tuple[Slot, ...] = tuple(slot for slot in IN_TREE if slot.extension)
# disable_<kind>() kind -> the slots it removes from ("connection" covers both kinds of connection).
DISABLE_KINDS: dict[str, tuple[Slot, ...]] = {}
for _slot in EXTENSIBLE:
    if _slot.disable is not None:
        DISABLE_KINDS[_slot.disable] = (*DISABLE_KINDS.get(_slot.disable, ()), _slot)
# Named registries an extension contributes to (as <ns>__<name>), each with its disable kind.
REGISTRIES: tuple[Slot, ...] = tuple(slot for slot in EXTENSIBLE if slot.shape == "named")
# AgentSurface field -> its key in GET /v1/info.
INFO_KEYS: dict[str, str] = {slot.field: slot.info_key for slot in SLOTS if slot.info_key is not None}


def slot_for_path(entry: str) -> Slot | None:
    """The slot a top-level entry of agent/ belongs to."""
    return next((slot for slot in IN_TREE if entry in slot.paths), None)
