"""The turn's sink: what it writes to the session's log, and in how many writes (each
one a transaction, a doorbell and a read by every stream following the session)."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async

from agents.events import EventType
from sessions_app import sink as sink_module
from sessions_app.eventlog import read_events
from sessions_app.sink import DatabaseSink
from sessions_app.tests.factories import TurnFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _counting_sink(session_id: str) -> tuple[DatabaseSink, list[list[str]]]:
    writes: list[list[str]] = []

    async def db(func, session_id, batch, fence=None):
        writes.append([event.type for event in batch])
        return await database_sync_to_async(func)(session_id, batch, fence)

    return DatabaseSink(session_id, db=db), writes


def _types(session_id: str) -> list[str]:
    return [event.type for event in read_events(session_id)]


def test_progress_events_join_the_write_of_the_event_the_turn_then_waits_for(monkeypatch):
    # A writer that would linger for a minute: the event the turn waits for cuts it short.
    monkeypatch.setattr(sink_module, "LINGER_SECONDS", 60.0)
    turn = TurnFactory()
    sink, writes = _counting_sink(turn.session_id)

    async def opening_of_a_turn():
        await sink.emit(EventType.TURN_STARTED, {}, turn.pk)
        await sink.emit(EventType.STEP_STARTED, {"step": 0}, turn.pk)
        # A tool call about to run: it waits until it and everything before it are durable.
        async with asyncio.timeout(30):
            await sink.emit(EventType.ACTIONS_REQUESTED, {"calls": []}, turn.pk)

    asyncio.run(opening_of_a_turn())
    opening = ["turn.started", "step.started", "actions.requested"]
    assert writes == [opening]
    assert _types(turn.session_id) == opening


def test_progress_events_reach_the_log_while_the_turn_waits_on_its_model(monkeypatch):
    monkeypatch.setattr(sink_module, "LINGER_SECONDS", 0.5)  # both are emitted well within it
    turn = TurnFactory()
    sink, writes = _counting_sink(turn.session_id)

    async def a_turn_whose_model_thinks():
        await sink.emit(EventType.TURN_STARTED, {}, turn.pk)
        await sink.emit(EventType.STEP_STARTED, {"step": 0}, turn.pk)
        # Nothing more is emitted and nobody drains: readers still see the turn start.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not writes:
            await asyncio.sleep(0.01)
        await sink.drain()

    asyncio.run(a_turn_whose_model_thinks())
    assert writes == [["turn.started", "step.started"]]
    assert _types(turn.session_id) == ["turn.started", "step.started"]


def test_the_first_delta_of_a_reply_is_written_at_once_and_the_end_of_the_turn_in_one_write(monkeypatch):
    monkeypatch.setattr(sink_module, "LINGER_SECONDS", 60.0)
    turn = TurnFactory()
    sink, writes = _counting_sink(turn.session_id)

    async def a_reply():
        async with asyncio.timeout(30):
            await sink.emit(EventType.MESSAGE_APPENDED, {"text": "Hel"}, turn.pk)
        assert writes == [["message.appended"]]  # durable before the model's next delta
        await sink.emit(EventType.MESSAGE_COMPLETED, {"text": "Hello"}, turn.pk)
        await sink.emit(EventType.STEP_COMPLETED, {"step": 0}, turn.pk)
        async with asyncio.timeout(30):
            await sink.emit(EventType.TURN_COMPLETED, {"text": "Hello"}, turn.pk)

    asyncio.run(a_reply())
    assert writes[1:] == [["message.completed", "step.completed", "turn.completed"]]
    assert _types(turn.session_id) == ["message.appended", "message.completed", "step.completed", "turn.completed"]


def test_a_workers_sink_holds_the_end_of_the_turn_for_the_worker_to_write(monkeypatch):
    monkeypatch.setattr(sink_module, "LINGER_SECONDS", 60.0)
    turn = TurnFactory()
    sink, writes = _counting_sink(turn.session_id)
    sink.hold_turn_end = True

    async def a_turn_that_ends():
        async with asyncio.timeout(30):
            await sink.emit(EventType.MESSAGE_APPENDED, {"text": "Hello"}, turn.pk)  # written at once
        await sink.emit(EventType.MESSAGE_COMPLETED, {"text": "Hello"}, turn.pk)
        await sink.emit(EventType.STEP_COMPLETED, {"step": 0}, turn.pk)
        await sink.emit(EventType.TURN_COMPLETED, {"text": "Hello"}, turn.pk)
        async with asyncio.timeout(30):
            await sink.drain()

    asyncio.run(a_turn_that_ends())
    # The end, with what still waited for the writer, is written with the turn's record and
    # the session's settling (sessions_app.turn_worker._end).
    assert writes == [["message.appended"]]
    assert [event.type for event in sink.held] == ["message.completed", "step.completed", "turn.completed"]
    assert _types(turn.session_id) == ["message.appended"]
