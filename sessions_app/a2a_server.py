"""The agent as an A2A server: A2A 1.0 over JSON-RPC, with the official ``a2a-sdk``'s types.

A task is one turn of a session: ``contextId`` is the ``sessionId`` and ``taskId`` the
``turnId``. A message without a ``contextId`` starts a chat session; one with a
``contextId`` is a follow-up in that session (admission ``preempt``, as over HTTP). The
turn runs on a worker like any other; what a client reads comes from the session's
event log, followed with ``streams.SessionFollower``: nothing here keeps state of its own.

The SDK's own server (request handler, event queues, task store) would keep a second
copy of every task in memory or in its own tables; here the log is the task, so the
views in ``sessions_app.api.a2a_views`` use only the SDK's protocol types and errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from a2a.compat.v0_3 import conversions as v03
from a2a.compat.v0_3 import types as types_v03
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    StringList,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    TaskNotCancelableError,
    TaskNotFoundError,
    VersionNotSupportedError,
)
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage
from pydantic import BaseModel, ValidationError

from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.db import on_pool
from agent_platform.errors import DomainError
from agents.channels import A2A_CHANNEL
from agents.discovery import AgentSurface
from agents.events import INTERRUPTED, TURN_ENDS, EventType
from agents.models import Agent
from sessions_app import services
from sessions_app.access import may_use
from sessions_app.eventlog import events_of_turn
from sessions_app.models import Event, Session, Turn, TurnStatus
from sessions_app.streams import SessionFollower

PROTOCOL_VERSION = "1.0"
LEGACY_VERSION = "0.3"
VERSION_HEADER = "A2A-Version"
CHANNEL = A2A_CHANNEL
# How long ``SendMessage`` waits for its turn to end (or to ask for approval) before it
# answers with the task as it is (still ``working``); ``GetTask`` tells the rest.
MAX_WAIT_SECONDS = 120.0
# How long ``CancelTask`` waits for the worker to end the turn it was told to stop.
CANCEL_WAIT_SECONDS = 10.0
REPLY_ARTIFACT = "reply"

# The methods the a2a-sdk 1.x client sends, and what they take.
METHODS: dict[str, type[ProtoMessage]] = {
    "SendMessage": SendMessageRequest,
    "SendStreamingMessage": SendMessageRequest,
    "GetTask": GetTaskRequest,
    "CancelTask": CancelTaskRequest,
}
# A2A 0.3's names for the same methods (DESIGN §9.7 spells these), with their 0.3 request
# model and the SDK's conversion to the 1.0 request: a 0.3 call is served as its 1.0 twin
# and its answer converted back (``result_response``).
LEGACY_METHODS: dict[str, tuple[str, type[BaseModel], Callable[[Any], ProtoMessage]]] = {
    "message/send": ("SendMessage", types_v03.SendMessageRequest, v03.to_core_send_message_request),
    "message/stream": ("SendStreamingMessage", types_v03.SendStreamingMessageRequest, v03.to_core_send_message_request),
    "tasks/get": ("GetTask", types_v03.GetTaskRequest, v03.to_core_get_task_request),
    "tasks/cancel": ("CancelTask", types_v03.CancelTaskRequest, v03.to_core_cancel_task_request),
}


# --- the agent card ---------------------------------------------------------------------


def agent_card(agent: Agent, surface: AgentSurface, endpoint_url: str) -> dict[str, Any]:
    """``GET /<slug>/.well-known/agent-card.json``: the agent, its skills (its tools and
    skill documents, from discovery) and where to call it, in the card format both 1.x
    and 0.3 clients read (``agent_card_to_dict`` adds the 0.3 fields)."""
    skills = [
        AgentSkill(
            id=name,
            name=entry.value.title or name,
            description=entry.value.description or name,
            tags=["tool"],
        )
        for name, entry in surface.tools.items()
    ] + [
        AgentSkill(id=name, name=name, description=entry.value.description or name, tags=["skill"])
        for name, entry in surface.skills.items()
    ]
    card = AgentCard(
        name=agent.slug,
        description=surface.config.description or f"The {agent.slug} agent.",
        version=f"{agent.updated_at:%Y.%m.%d.%H%M%S}",
        supported_interfaces=[
            AgentInterface(url=endpoint_url, protocol_binding="JSONRPC", protocol_version=version)
            for version in (PROTOCOL_VERSION, LEGACY_VERSION)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer", description="An API token of the platform: Authorization: Bearer <token>."
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )
    return agent_card_to_dict(card)


# --- JSON-RPC ------------------------------------------------------------------------------


@dataclass
class Call:
    """One JSON-RPC request: its id (echoed in the answer), method and parsed params."""

    id: str | int | None
    method: str  # the 1.0 name
    params: Any = field(default=None)
    legacy: bool = False  # sent with its 0.3 name: answered in 0.3's shapes


def request_id(body: Any) -> str | int | None:
    """The request's id, for the answer, when it is one JSON-RPC may echo."""
    found = body.get("id") if isinstance(body, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def parse_call(body: Any, version: str | None) -> Call:
    """The request in ``body`` (already JSON-decoded), for the ``A2A-Version`` header sent.

    Raises:
        A2AError: an invalid request, unknown method, bad params or unsupported version
            (``error_response`` writes it).
    """
    if not isinstance(body, dict):
        raise InvalidRequestError("A JSON-RPC request is one JSON object (batches are not supported).")
    call_id = body.get("id")
    if isinstance(call_id, bool) or not isinstance(call_id, str | int | None):
        raise InvalidRequestError("id must be a string, an integer or null.")
    if body.get("jsonrpc") != "2.0":
        raise InvalidRequestError("jsonrpc must be exactly '2.0'.")
    method = body.get("method")
    if isinstance(method, str) and method in LEGACY_METHODS:
        return _legacy_call(body, call_id, method, version)
    # No header is taken as the current version (the SDK's own server would take it as 0.3).
    if version and version.split(".")[:2] != PROTOCOL_VERSION.split("."):
        raise VersionNotSupportedError(f"A2A-Version {version!r} is not served; use {PROTOCOL_VERSION}.")
    model = METHODS.get(method) if isinstance(method, str) else None
    if model is None:
        served = [*METHODS, *LEGACY_METHODS]
        raise MethodNotFoundError(f"Unknown method {method!r}; served: {', '.join(served)}.")
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise InvalidParamsError("params must be an object.")
    try:
        parsed = ParseDict(params, model(), ignore_unknown_fields=True)
    except ParseError as error:
        raise InvalidParamsError(f"Invalid params for {method}: {error}") from None
    return Call(call_id, str(method), parsed)


def _legacy_call(body: dict[str, Any], call_id: str | int | None, method: str, version: str | None) -> Call:
    if version and version.split(".")[:2] != LEGACY_VERSION.split("."):
        raise VersionNotSupportedError(f"{method} is A2A {LEGACY_VERSION}; A2A-Version {version!r} does not name it.")
    core_method, model, to_core = LEGACY_METHODS[method]
    try:
        request = model.model_validate(body)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:3])
        raise InvalidParamsError(f"Invalid {method} request: {problems}") from None
    return Call(call_id, core_method, to_core(request), legacy=True)


def error_response(error: A2AError, call_id: str | int | None = None) -> dict[str, Any]:
    """The JSON-RPC error answer for ``error``."""
    return build_error_response(call_id, error)


def result_response(call: Call, result: ProtoMessage) -> dict[str, Any]:
    """The JSON-RPC answer carrying ``result``, in the shapes of the version called."""
    if not call.legacy:
        return {"jsonrpc": "2.0", "id": call.id, "result": MessageToDict(result)}
    if isinstance(result, StreamResponse):
        return _dump(v03.to_compat_stream_response(result, call.id))
    task = result.task if isinstance(result, SendMessageResponse) else result
    assert isinstance(task, Task), type(result)
    return {"jsonrpc": "2.0", "id": call.id, "result": _dump(v03.to_compat_task(task))}


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- messages in, tasks out ----------------------------------------------------------------


def message_text(message: Message) -> str:
    """The text of a message: its text parts, one per line.

    Raises:
        InvalidParamsError: no text at all.
        ContentTypeNotSupportedError: a file or data part (the agent reads text).
    """
    texts = []
    for part in message.parts:
        if part.WhichOneof("content") != "text":
            raise ContentTypeNotSupportedError("Only text parts are accepted; send files and data as text.")
        texts.append(part.text)
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError("message needs at least one non-empty text part.")
    return text


def send_message(
    agent: Agent, surface: AgentSurface, user: AuthenticatedPrincipal, request: SendMessageRequest, default_model: str
) -> tuple[Turn, int]:
    """Start a session (no ``contextId``) or follow up in one; the new turn and the index
    of its ``message.received`` (where its events start).

    Raises:
        InvalidParamsError: no message, or a ``taskId`` (a task is one turn: it takes no more).
        TaskNotFoundError: a ``contextId`` that is not one of the caller's sessions of this agent.
    """
    if not request.HasField("message"):
        raise InvalidParamsError("params.message is required.")
    message = request.message
    text = message_text(message)
    if message.task_id:
        raise InvalidParamsError("A task is one turn and takes no further message; send with its contextId instead.")
    try:
        if message.context_id:
            session = _owned_session(agent, user, message.context_id)
            turn = services.continue_session(session, message=text)
        else:
            session, turn = services.start_session(
                agent, surface, user.principal, message=text, default_model=default_model, channel=CHANNEL
            )
    except DomainError as error:  # a task-mode session, say: its own words
        raise InvalidParamsError(str(error)) from None
    first = events_of_turn(session.pk, turn.pk, turn.created_at).values_list("index", flat=True)
    return turn, first[0] if first else 0


def _owned_session(agent: Agent, user: AuthenticatedPrincipal, session_id: str) -> Session:
    session = Session.objects.select_related("agent").filter(pk=session_id, agent=agent).first()
    if session is None or not may_use(session, user):
        # Someone else's session is not found either: a task id says nothing about others.
        raise TaskNotFoundError(f"No conversation {session_id!r} of yours on this agent.")
    return session


def owned_turn(agent: Agent, user: AuthenticatedPrincipal, task_id: str) -> Turn:
    """The caller's turn ``task_id`` on this agent.

    Raises:
        TaskNotFoundError: there is none, or it is another principal's (any tenant).
    """
    turn = Turn.objects.select_related("session").filter(pk=task_id, session__agent=agent).first() if task_id else None
    if turn is None or not may_use(turn.session, user):
        raise TaskNotFoundError(f"No task {task_id!r} of yours on this agent.")
    return turn


def cancel_turn(turn: Turn) -> None:
    """Interrupt ``turn``; it ends ``turn.failed`` "turn interrupted", ``canceled`` here.

    Raises:
        TaskNotCancelableError: it has ended already.
    """
    if not services.stop_turn(turn):
        raise TaskNotCancelableError(f"Task {turn.pk!r} has ended; there is nothing to cancel.")


def _state(turn: Turn, end: Event | None) -> TaskState:
    """The task's state: by the turn's end in the log once it is there (the worker
    settles the row just after), else by the row."""
    if end is not None and end.type == EventType.TURN_COMPLETED:
        return TaskState.TASK_STATE_COMPLETED
    if end is not None:
        failure = str(end.data.get("message", ""))
        return TaskState.TASK_STATE_CANCELED if failure == INTERRUPTED else TaskState.TASK_STATE_FAILED
    match turn.status:
        case TurnStatus.QUEUED:
            return TaskState.TASK_STATE_SUBMITTED
        case TurnStatus.PARKED:
            return TaskState.TASK_STATE_INPUT_REQUIRED
    return TaskState.TASK_STATE_WORKING


def _agent_message(turn: Turn, text: str) -> Message:
    return Message(
        message_id=f"{turn.pk}-reply",
        context_id=turn.session_id,
        task_id=turn.pk,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def _reply_artifact(text: str) -> Artifact:
    return Artifact(artifact_id=REPLY_ARTIFACT, name=REPLY_ARTIFACT, parts=[Part(text=text)])


def task_of(turn: Turn) -> Task:
    """The task a turn is, as of now: its state, the reply (an artifact, and the status
    message) when it completed, the failure when it failed, and the history."""
    end = events_of_turn(turn.session_id, turn.pk, turn.created_at).filter(type__in=TURN_ENDS).first()
    state = _state(turn, end)
    task = submitted_task(turn)
    task.status.state = state
    task.status.timestamp.FromDatetime(end.at if end is not None else turn.started_at or turn.created_at)
    if end is not None and state == TaskState.TASK_STATE_COMPLETED:
        reply = str(end.data.get("result") or "")
        task.artifacts.append(_reply_artifact(reply))
        task.status.message.CopyFrom(_agent_message(turn, reply))
        task.history.append(_agent_message(turn, reply))
    elif end is not None:
        task.status.message.CopyFrom(_agent_message(turn, str(end.data.get("message", ""))))
    return task


def submitted_task(turn: Turn) -> Task:
    """The task as this request submitted it: the updates that follow replay the turn from
    its start, so the first snapshot never says more than they do (a fast turn may have
    ended before the stream's first write)."""
    task = Task(id=turn.pk, context_id=turn.session_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
    task.status.timestamp.FromDatetime(turn.created_at)
    task.history.append(
        Message(
            message_id=f"{turn.pk}-message",
            context_id=turn.session_id,
            task_id=turn.pk,
            role=Role.ROLE_USER,
            parts=[Part(text=turn.message)],
        )
    )
    return task


def load_task(turn_id: str) -> Task:
    return task_of(Turn.objects.get(pk=turn_id))


_load_task = on_pool(load_task)


# --- following a turn ----------------------------------------------------------------------


async def turn_events(session_id: str, turn_id: str, start_index: int) -> AsyncIterator[Event]:
    """The turn's events from ``start_index`` on, until it ends or asks for approval
    (a parked turn waits for a decision made elsewhere: ``input-required``)."""
    async with SessionFollower(session_id, start_index) as follower:
        async for event in follower:
            if event.turn_id != turn_id:
                continue
            yield event
            if event.type in TURN_ENDS or event.type == EventType.ACTION_APPROVAL_REQUESTED:
                return


async def settled_task(turn: Turn, start_index: int, timeout: float) -> Task:
    """The task once its turn has ended or asks for approval, or after ``timeout`` seconds."""
    asking = False
    try:
        async with asyncio.timeout(timeout):
            async for event in turn_events(turn.session_id, turn.pk, start_index):
                asking = event.type == EventType.ACTION_APPROVAL_REQUESTED
    except TimeoutError:
        pass
    task = await _load_task(turn.pk)
    if asking and task.status.state == TaskState.TASK_STATE_WORKING:
        task.status.state = TaskState.TASK_STATE_INPUT_REQUIRED  # recorded; the turn is still parking
    return task


async def task_updates(turn: Turn, start_index: int) -> AsyncIterator[StreamResponse]:
    """``SendStreamingMessage``: the task as submitted, then a status or artifact update
    per event that changes what a client shows, ending with the final status.

    The reply streams as chunks of the ``reply`` artifact: a model step's first chunk
    replaces it (``append: false``), the rest append, and the turn's end sends the final
    reply whole (``lastChunk: true``), so a client that applies the updates holds the
    reply ``GetTask`` returns."""
    context, task_id = turn.session_id, turn.pk
    yield StreamResponse(task=submitted_task(turn))

    def status(state: TaskState, text: str | None = None) -> StreamResponse:
        update = TaskStatusUpdateEvent(task_id=task_id, context_id=context, status=TaskStatus(state=state))
        if text is not None:
            update.status.message.CopyFrom(_agent_message(turn, text))
        return StreamResponse(status_update=update)

    def chunk(text: str, *, append: bool, last: bool = False) -> StreamResponse:
        update = TaskArtifactUpdateEvent(
            task_id=task_id, context_id=context, artifact=_reply_artifact(text), append=append, last_chunk=last
        )
        return StreamResponse(artifact_update=update)

    fresh = True
    async for event in turn_events(context, task_id, start_index):
        match event.type:
            case EventType.TURN_STARTED:
                yield status(TaskState.TASK_STATE_WORKING)
            case EventType.STEP_STARTED:
                fresh = True
            case EventType.MESSAGE_APPENDED:
                yield chunk(str(event.data.get("text", "")), append=not fresh)
                fresh = False
            case EventType.ACTION_APPROVAL_REQUESTED:
                tool = event.data.get("toolName", "a tool")
                yield status(TaskState.TASK_STATE_INPUT_REQUIRED, f"{tool} needs approval.")
            case EventType.TURN_COMPLETED:
                reply = str(event.data.get("result") or "")
                yield chunk(reply, append=False, last=True)
                yield status(TaskState.TASK_STATE_COMPLETED, reply)
            case EventType.TURN_FAILED:
                message = str(event.data.get("message", ""))
                state = TaskState.TASK_STATE_CANCELED if message == INTERRUPTED else TaskState.TASK_STATE_FAILED
                yield status(state, message)
