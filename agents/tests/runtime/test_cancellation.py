"""Stopping a turn reaches the running tool and ends the turn as interrupted."""

from __future__ import annotations

import asyncio

from agents.events import EventType
from agents.runtime.turn import run_turn

WAITER = '''
from agents.sdk import ToolContext, tool

started = []
saw_cancel = []


@tool(timeout=30)
def wait_for_stop(ctx: ToolContext) -> str:
    """Wait until the turn is stopped."""
    started.append(True)
    saw_cancel.append(ctx.signal.wait(10))
    return "stopped"
'''


def test_cancelling_a_turn_mid_tool_signals_the_tool_and_fails_the_turn(agent):
    agent.write({"agent/tools/wait_for_stop.py": WAITER})
    surface = agent.surface()
    request = agent.request("/call wait_for_stop {}")
    module = surface.tools["wait_for_stop"].value.fn.__globals__

    async def scenario():
        task = asyncio.create_task(run_turn(surface, request, agent.sink, agent.settings))
        while not module["started"]:
            await asyncio.sleep(0.01)
        request.signal.cancel()  # what a stop does besides cancelling the task
        task.cancel()
        return await task

    outcome = asyncio.run(scenario())
    assert outcome.status == "failed" and outcome.failure == "turn interrupted"
    assert agent.data(EventType.TURN_FAILED) == [{"message": "turn interrupted"}]
    assert module["saw_cancel"] == [True]


def test_cancelling_during_a_model_sleep_ends_promptly(agent):
    async def scenario():
        task = asyncio.create_task(run_turn(agent.surface(), agent.request("/sleep 30"), agent.sink, agent.settings))
        await asyncio.sleep(0.1)
        task.cancel()
        return await asyncio.wait_for(task, 5)

    outcome = asyncio.run(scenario())
    assert outcome.failure == "turn interrupted"
    assert "message.completed" not in agent.types()
