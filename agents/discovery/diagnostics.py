"""Diagnostics: what is wrong (or odd) in an agent tree, with stable ids.

Like Django's system checks: an id that never changes meaning, a message that
quotes the offending value, and a hint that says what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agents.runtime.fs.tools import FILE_TOOL_NAMES


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Code:
    id: str
    severity: Severity
    hint: str


def _error(number: int, hint: str) -> Code:
    return Code(f"agents.E{number:03d}", Severity.ERROR, hint)


def _warning(number: int, hint: str) -> Code:
    return Code(f"agents.W{number:03d}", Severity.WARNING, hint)


IMPORT_FAILED = _error(1, "Fix the error at the line shown; the file is imported when the agent loads.")
NO_DEFINITION = _error(2, "Define exactly one object with the slot's helper, e.g. @tool or define_hook(...).")
SEVERAL_DEFINITIONS = _error(3, "Keep one definition per file; move the others to files of their own.")
WRONG_HELPER = _error(4, "Use the helper that belongs to this folder, named in the message.")
DOUBLE_UNDERSCORE = _error(5, "Remove '__' from the name; it separates an extension's namespace from its names.")
SHADOWS_FILE_TOOL = _error(6, "Rename the tool; this name belongs to a file tool the platform synthesizes.")
NO_INSTRUCTIONS = _error(7, "Add agent/instructions.md (or instructions.py, or an instructions/ folder).")
EVALS_INSIDE_AGENT = _warning(8, "Move the folder beside agent/: <agent>/evals/.")
NO_DESCRIPTION = _error(9, "Give the subagent define_agent(description=...); its parent reads it to delegate.")
INVALID_CRON = _error(10, "Use five fields in UTC: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1'.")
EMPTY_HOOK = _warning(11, "Subscribe to at least one event type, or '*' for all; the hook is skipped until then.")
STRAY_FILE = _warning(12, "Remove the file or move it to lib/; only the slot's own files belong here.")
INVALID_DEFINITION = _error(13, "Change the arguments of the helper as the message says.")
INVALID_SKILL = _error(14, "Start the file with YAML front matter holding a description:\n---\ndescription: ...\n---")
EVALS_WITHOUT_CONFIG = _error(15, "Add evals/evals.config.py with define_evals_config(...).")
IGNORED_FILE = _warning(16, "Remove the file; it has no effect here.")
INVALID_NAME = _error(17, "Use letters, digits, '_' and '-' in file and folder names (at most 64 characters).")
UNKNOWN_EVENT = _warning(
    18, "Use an event type the platform records (e.g. 'turn.completed', 'action.result'), or '*' for all."
)
DUPLICATE_NAME = _error(19, "Rename one of them; names are shared between tools and subagents.")
MOUNT_NOT_FOUND = _error(20, "Name an installed package, an 'agent_platform.extensions' entry point, or a folder.")
INVALID_EXTENSION_CONFIG = _error(21, "Give the config the extension's define_extension(config=...) model expects.")
UNKNOWN_DISABLE = _error(22, "Disable only what the extension contributes (see `agent info`).")
AGENT_ONLY_PATH = _warning(23, "This file configures the mounting agent, not an extension; it is ignored here.")
INVALID_PLUGIN = _error(24, "Give the plugin folder a valid plugin.json (or .claude-plugin/ / .cursor-plugin/).")
UNKNOWN_OVERRIDE = _error(25, "An override must replace a contribution of the same kind and name.")
UNKNOWN_PLAYGROUND_TOOL = _warning(26, "Name the HTML file after a tool of this agent.")
NO_AGENT_TREE = _error(28, "Put the agent's files in an agent/ folder inside the agent folder.")
UNKNOWN_FILE_TOOL = _error(29, f"Name only the synthesized file tools: {', '.join(FILE_TOOL_NAMES)}.")
FILE_TOOLS_WITHOUT_ROOT = _error(30, "Declare define_agent(root=...) to get file tools, or drop tools=[...].")
WRITE_TOOLS_ON_READ_ONLY_ROOT = _error(31, "Drop the write tools from tools=[...], or give the agent a writable root.")
HANDLER_SIGNATURE = _error(
    32,
    "Take the event first: a hook handler is def on_event(event, ctx), a channel's events handler "
    "def on_event(event, channel, ctx) (plain or async).",
)
UNSIGNED_WEBHOOKS = _warning(
    41, 'Name the webhook secret: github_channel(secret="GITHUB_WEBHOOK_SECRET"), set on GitHub and the platform.'
)
RESERVED_CHANNEL = _error(42, "Rename the channel; the platform gives its own sessions this channel id.")
SANDBOX_FAILED = _error(
    50, "Run `agent validate` on the tree; if it is clean, the sandbox itself failed (see docs/security.md)."
)
SANDBOXED_STDIO_MCP = _warning(51, "Use an http MCP connection: a sandboxed agent's stdio commands are not started.")
NOT_DEPLOYED = _error(
    52, "Upload a tree (POST /api/v1/agents/<slug>/deployments, or `manage.py agent deploy`) and activate it."
)
INVALID_SLUG = _warning(27, "Agent folder names match [A-Za-z0-9][A-Za-z0-9_-]* and are not reserved segments.")


@dataclass(frozen=True)
class Diagnostic:
    """One finding: severity, stable id, the file it concerns, what and how to fix."""

    code: Code
    path: str
    message: str

    @property
    def severity(self) -> Severity:
        return self.code.severity

    @property
    def is_error(self) -> bool:
        return self.code.severity is Severity.ERROR

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": str(self.severity),
            "code": self.code.id,
            "path": self.path,
            "message": self.message,
            "hint": self.code.hint,
        }

    def __str__(self) -> str:
        return f"{self.severity.upper()} {self.code.id} {self.path}: {self.message}"
