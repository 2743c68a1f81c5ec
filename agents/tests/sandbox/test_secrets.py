"""The runner's environment holds the agent's declared secrets and nothing else, looked up
through the resolver the platform gives when the runner starts; ``ctx.secrets`` is what the
platform resolved for the call (a secret changed after start counts at the next call)."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime.tool_calls import run_server_tool
from agents.sandbox import bwrap_path, sandboxed_surface
from agents.sdk import SessionInfo, ToolContext
from agents.tests.sandbox.trees import SECRETIVE
from agents.tests.trees import write_tree


def test_only_the_declared_secrets_reach_the_runner_and_a_new_value_counts_at_the_next_call(tmp_path):
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap")
    store = {"API_TOKEN": "first", "DATABASE_URL": "postgres://never"}
    asked: list[tuple[str, ...]] = []

    def resolve(names):
        asked.append(tuple(names))
        return {name: store[name] for name in names if name in store}

    surface, loader = sandboxed_surface(write_tree(tmp_path / "secretive", SECRETIVE), "secretive", secrets=resolve)
    tool = surface.tools["token"].value

    def ctx() -> ToolContext:  # as the platform makes it for each call: the declared names, resolved now
        return ToolContext(session=SessionInfo(id="ses_1", agent="secretive"), secrets=resolve(["API_TOKEN"]))

    try:
        first = asyncio.run(run_server_tool(tool, {}, ctx())).output
        store["API_TOKEN"] = "second"
        second = asyncio.run(run_server_tool(tool, {}, ctx())).output
    finally:
        loader.unload()
    assert first == {"environ": {"API_TOKEN": "first"}, "secrets": {"API_TOKEN": "first"}}
    assert second["secrets"] == {"API_TOKEN": "second"}
    assert set(asked) == {("API_TOKEN",)}
