"""Forking a session (DESIGN §9.10): a new session of the same principal whose log starts
with a copy of the original's events ``0..N``; the original is untouched.

The copy keeps each event's type, data, time and index, with two changes: the fork's
``session.started`` carries ``forkedFrom {"sessionId", "index"}``, and events of a turn
point at the fork's copy of that turn (copied turns keep their conversation, so the
fork's next turn has the history up to the fork point). A turn the fork point cuts
through ends ``turn.failed`` in the fork, and a fork whose copy does not end settled is
settled as a turn's end would settle it (``session.waiting``, or for a task its end).
The copied events are not handed to hooks or webhooks again (they saw them once), and
a fork is a session of the HTTP API whatever the original's channel.
The workspace is not copied: the fork's next turn seeds a fresh one.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agent_platform.errors import DomainError
from agents import events
from agents.events import TURN_ENDS, EventType
from sessions_app.channel_state import HTTP_CHANNEL
from sessions_app.eventlog import NewEvent, append_events, read_events
from sessions_app.models import (
    Event,
    Session,
    SessionMode,
    SessionStatus,
    Turn,
    TurnStatus,
)
from sessions_app.records import ab
from sessions_app.services import new_continuation_token

PAGE = 1000
CUT_BY_FORK = "the fork point cut this turn short"
SETTLED_EVENTS: dict[str, SessionStatus] = {
    EventType.SESSION_WAITING: SessionStatus.WAITING,
    EventType.SESSION_COMPLETED: SessionStatus.COMPLETED,
    EventType.SESSION_FAILED: SessionStatus.FAILED,
}


class InvalidForkPoint(DomainError):
    status, code = 400, "invalid"


def fork_point(session: Session, at_index: Any) -> int:
    """The last index the fork copies: ``at_index`` checked, or by default the end of the
    last settled turn (its ``turn.*`` end, and the ``session.*`` settle right after it);
    with no settled turn yet, the whole log so far.

    Raises:
        InvalidForkPoint: ``at_index`` is not an integer in ``0..eventCount-1``.
    """
    last = session.next_event_index - 1
    if at_index is not None:
        if isinstance(at_index, bool) or not isinstance(at_index, int) or not 0 <= at_index <= last:
            raise InvalidForkPoint(f"atIndex must be an integer from 0 to {last} (the session's last index).")
        return at_index
    end = (
        Event.objects.filter(session_id=session.pk, type__in=TURN_ENDS)
        .order_by("-index")
        .values_list("index", flat=True)
        .first()
    )
    if end is None:
        return last
    after = read_events(session.pk, end + 1, 1)
    return end + 1 if after and after[0].type in SETTLED_EVENTS else end


def fork_session(session: Session, at_index: Any = None) -> Session:
    """Fork ``session`` at ``at_index`` (see ``fork_point``); returns the new session.

    Raises:
        InvalidForkPoint: for an ``atIndex`` outside the log.
    """
    point = fork_point(session, at_index)
    with transaction.atomic():
        fork = Session(
            agent_id=session.agent_id,
            revision_id=session.revision_id,
            principal_id=session.principal_id,
            tenant_id=session.tenant_id,
            # An HTTP API session whatever the original's channel: a fork of a Slack thread
            # or a PR must not answer into that thread or PR.
            channel=HTTP_CHANNEL,
            mode=session.mode,
            purpose=session.purpose,
            title=session.title,
            dry_run=session.dry_run,
            status=SessionStatus.WAITING,
            forked_from=session.pk,
            forked_at_index=point,
            next_event_index=point + 1,
            dispatched_index=point,
        )
        fork.continuation_token = new_continuation_token(fork.pk)
        fork.save(force_insert=True)
        turns, ended, last_type = _copy_log(session, fork, point)
        closing = [
            NewEvent(EventType.TURN_FAILED, events.turn_failed(CUT_BY_FORK), copy.pk)
            for original, copy in turns.items()
            if original not in ended
        ]
        status = SETTLED_EVENTS.get(last_type) if not closing else None
        if status is None:
            status, settle = _settle(fork, turns, ended)
            closing.append(NewEvent(settle, {}))
        written = append_events(fork.pk, closing) if closing else []
        ab.copy_assignments(session, fork)  # a fork keeps its original's arms
        # Nothing of the fork is news to hooks or webhooks: they saw the original's events.
        last = written[-1].index if written else point
        Session.objects.filter(pk=fork.pk).update(status=status, dispatched_index=last)
        fork.status, fork.dispatched_index, fork.next_event_index = status, last, last + 1
    return fork


def _copy_log(session: Session, fork: Session, point: int) -> tuple[dict[str, Turn], dict[str, str], str]:
    """Copy events ``0..point`` and their turns into ``fork``; returns the copied turns
    (by original id, oldest first), the turn ends in the copy (original id -> type) and
    the last copied event's type. Each copied turn is as the copied log leaves it:
    completed, with its conversation, when its ``turn.completed`` is in the copy, else failed."""
    prefix = Event.objects.filter(session_id=session.pk, index__lte=point)
    ended = dict(prefix.filter(type__in=TURN_ENDS, turn__isnull=False).values_list("turn_id", "type"))
    turns: dict[str, Turn] = {}
    for original in Turn.objects.filter(pk__in=prefix.filter(turn__isnull=False).values("turn_id")).order_by(
        "created_at"
    ):
        completed = ended.get(original.pk) == EventType.TURN_COMPLETED
        turns[original.pk] = Turn(
            session=fork,
            message=original.message,
            admission=original.admission,
            status=TurnStatus.COMPLETED if completed else TurnStatus.FAILED,
            created_at=original.created_at,
            started_at=original.started_at,
            ended_at=original.ended_at,
            usage=original.usage,
            cost=original.cost,
            failure_message=original.failure_message if not completed else "",
            attachments=original.attachments,
            conversation=original.conversation if completed else [],
        )
    Turn.objects.bulk_create(turns.values())
    last_type, start = "", 0
    while start <= point and (page := read_events(session.pk, start, min(PAGE, point + 1 - start))):
        rows = []
        for event in page:
            data = dict(event.data)
            if event.index == 0:
                data["forkedFrom"] = {"sessionId": session.pk, "index": point}
            turn_id = turns[event.turn_id].pk if event.turn_id else None
            rows.append(
                Event(session=fork, index=event.index, type=event.type, turn_id=turn_id, at=event.at, data=data)
            )
        Event.objects.bulk_create(rows)
        last_type, start = page[-1].type, page[-1].index + 1
    return turns, ended, last_type


def _settle(fork: Session, turns: dict[str, Turn], ended: dict[str, str]) -> tuple[SessionStatus, EventType]:
    """How a turn's end would settle the fork: a chat waits; a task is over, failed unless
    its last turn completed (``scheduling.settle_session``)."""
    if fork.mode != SessionMode.TASK:
        return SessionStatus.WAITING, EventType.SESSION_WAITING
    last = list(turns)[-1] if turns else None
    if last is not None and ended.get(last) == EventType.TURN_COMPLETED:
        return SessionStatus.COMPLETED, EventType.SESSION_COMPLETED
    return SessionStatus.FAILED, EventType.SESSION_FAILED
