"""Smoke test: the test model echoes plain text and calls a tool on ``/call``."""

from __future__ import annotations

from typing import Any

from agents.sdk import define_eval


async def test(t: Any) -> None:
    """Echo a greeting, then ask for Lyon's weather through the tool."""
    reply = await t.send("hello")
    assert reply == "echo: hello"

    reply = await t.send('/call get_weather {"city": "Lyon"}')
    assert t.called("get_weather")
    assert "Lyon" in reply
    assert t.succeeded()


case = define_eval(test=test, description="echo and one get_weather call", tags=["smoke"])
