"""The public authoring surface is a visible decision, and it does not pull in Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import agents.sdk

REPO = Path(__file__).resolve().parents[3]

# Frozen copy of agents.sdk.__all__: change it here on purpose when the surface changes.
PUBLIC_SURFACE = [
    "ABConfig",
    "AgentConfig",
    "ArtifactsConfig",
    "Channel",
    "ChannelContext",
    "ChannelInfo",
    "ChannelRequest",
    "ChannelSession",
    "DefinitionError",
    "Disable",
    "EvalCase",
    "EvalsConfig",
    "Experiment",
    "ExtensionContext",
    "ExtensionSpec",
    "FileSystemSpec",
    "Hook",
    "HookContext",
    "Instructions",
    "McpConnection",
    "Mount",
    "OtelConfig",
    "PluginMount",
    "ResultContext",
    "ResultHandler",
    "Route",
    "Schedule",
    "SendMessage",
    "SessionInfo",
    "SessionRefused",
    "Signal",
    "Skill",
    "StorageConfig",
    "Tool",
    "ToolContext",
    "define_ab",
    "define_ab_config",
    "define_agent",
    "define_artifacts",
    "define_channel",
    "define_eval",
    "define_evals_config",
    "define_extension",
    "define_hook",
    "define_instructions",
    "define_mcp_connection",
    "define_otel",
    "define_result",
    "define_schedule",
    "define_skill",
    "define_storage",
    "disable_ab",
    "disable_artifacts",
    "disable_channel",
    "disable_connection",
    "disable_hook",
    "disable_instructions",
    "disable_schedule",
    "disable_skill",
    "disable_subagent",
    "disable_tool",
    "empty_fs",
    "github_channel",
    "host_fs",
    "mount",
    "overlay_fs",
    "plugin_mount",
    "slack_channel",
    "temp_fs",
    "tool",
    "union_fs",
]


def test_the_sdk_exports_exactly_the_frozen_surface():
    assert agents.sdk.__all__ == PUBLIC_SURFACE


# Public submodules, imported as ``agents.sdk.<name>`` (documented in docs/evals.md, docs/memory.md).
PUBLIC_SUBMODULES = {"evals", "memory"}


def test_every_other_name_in_the_sdk_package_is_private():
    import agents.sdk.evals
    import agents.sdk.memory

    assert agents.sdk.memory.__all__ == ["memory_hook"]

    public = [name for name in vars(agents.sdk) if not name.startswith("_") and name not in PUBLIC_SUBMODULES]
    assert sorted(public) == sorted(PUBLIC_SURFACE)


def test_every_exported_name_exists():
    assert all(hasattr(agents.sdk, name) for name in PUBLIC_SURFACE)


def test_importing_the_sdk_and_discovery_does_not_import_django():
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, agents.sdk, agents.sdk.memory, agents.discovery; assert 'django' not in sys.modules",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
