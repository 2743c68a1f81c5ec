"""A2A routes: ``GET /<slug>/.well-known/agent-card.json`` and JSON-RPC at
``POST /<slug>/v1/a2a`` (the logic is ``sessions_app.a2a_server``).

Auth and tenancy are the session API's: a bearer token (401 without one, as JSON, before
any JSON-RPC is read), another tenant's private agent is 404, and another principal's
task or context is "task not found". A body that is not a JSON object is the platform's
400 envelope; every JSON object answers 200 with a JSON-RPC result or error object, as
A2A clients expect. Answers that wait for a turn (``SendMessage``, ``CancelTask``) and the
SSE of ``SendStreamingMessage`` are written from the event loop: no request thread or
database connection is held while a turn runs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

from a2a.types.a2a_pb2 import SendMessageResponse, Task
from a2a.utils.errors import A2AError, InternalError, InvalidParamsError
from django.db import InterfaceError, OperationalError
from django.http import HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from sessions_app import a2a_server
from sessions_app.a2a_server import Call

SSE = "text/event-stream"
logger = logging.getLogger(__name__)


class AgentCardView(AgentView):
    """``GET /<slug>/.well-known/agent-card.json``: no token needed for shared agents
    (a private agent's card needs its tenant's token, like its other routes)."""

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="agent_card",
        responses=OpenApiResponse(OpenApiTypes.OBJECT, description="The A2A agent card (see docs/a2a.md)."),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        endpoint = request.build_absolute_uri(f"/{self.agent.slug}/v1/a2a")
        return Response(a2a_server.agent_card(self.agent, self.surface, endpoint))


class A2AView(AgentView):
    """``POST /<slug>/v1/a2a``: ``SendMessage``, ``SendStreamingMessage``, ``GetTask``,
    ``CancelTask`` (A2A 1.0's names; 0.3's arrive here as these, see ``parse_call``)."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        # Streaming clients accept only text/event-stream; refusals are still JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="agent_a2a",
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="A JSON-RPC result or error object (see docs/a2a.md)."
            ),
            (200, SSE): OpenApiResponse(
                OpenApiTypes.STR, description="SendStreamingMessage: one JSON-RPC result per SSE event."
            ),
        },
    )
    def post(self, request: Request, agent_slug: str) -> HttpResponseBase:
        body = request.data  # a body that is not JSON is the platform's 400 (or 415), like everywhere
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_request", "A JSON-RPC request is one JSON object (batches are not served).")
        try:
            call = a2a_server.parse_call(body, request.headers.get(a2a_server.VERSION_HEADER))
            return self._answer(request, call)
        except A2AError as error:
            return Response(a2a_server.error_response(error, a2a_server.request_id(body)))

    def _answer(self, request: Request, call: Call) -> HttpResponseBase:
        user = caller(request)
        match call.method:
            case "SendMessage" | "SendStreamingMessage":
                turn, start = a2a_server.send_message(
                    self.agent, self.surface, user, call.params, platform_settings.DEFAULT_MODEL
                )
                if call.method == "SendStreamingMessage":
                    return _sse(call, partial(a2a_server.task_updates, turn, start))
                if call.params.configuration.return_immediately:
                    return Response(a2a_server.result_response(call, _sent(a2a_server.task_of(turn))))
                return _later(
                    call, lambda: a2a_server.settled_task(turn, start, a2a_server.MAX_WAIT_SECONDS), sent=True
                )
            case "GetTask":
                turn = a2a_server.owned_turn(self.agent, user, call.params.id)
                return Response(a2a_server.result_response(call, a2a_server.task_of(turn)))
            case "CancelTask":
                turn = a2a_server.owned_turn(self.agent, user, call.params.id)
                start = turn.session.next_event_index  # read before the cancel: its end comes later
                a2a_server.cancel_turn(turn)
                return _later(call, partial(a2a_server.settled_task, turn, start, a2a_server.CANCEL_WAIT_SECONDS))
        raise InvalidParamsError(f"Method {call.method!r} is not served.")  # parse_call admits no other


def _sent(task: Task) -> SendMessageResponse:
    return SendMessageResponse(task=task)


# What a client reads when the log cannot be read mid-answer (the HTTP status is sent already).
UNAVAILABLE = "The database is unavailable; ask for the task again with GetTask."


def _later(call: Call, wait: Callable[[], Awaitable[Task]], *, sent: bool = False) -> StreamingHttpResponse:
    """A JSON answer written once ``wait()`` has the task, from the event loop."""

    async def body() -> AsyncIterator[bytes]:
        try:
            result = await wait()
        except (OperationalError, InterfaceError) as error:
            logger.warning("A2A answer for %s: %s", call.method, error)
            yield json.dumps(a2a_server.error_response(InternalError(UNAVAILABLE), call.id)).encode()
            return
        yield json.dumps(a2a_server.result_response(call, _sent(result) if sent else result)).encode()

    return _no_buffering(StreamingHttpResponse(body(), content_type="application/json"))


def _sse(call: Call, updates: Callable[[], AsyncIterator[Any]]) -> StreamingHttpResponse:
    """Each update as one SSE event holding a JSON-RPC result."""

    async def body() -> AsyncIterator[bytes]:
        try:
            async for update in updates():
                yield f"data: {json.dumps(a2a_server.result_response(call, update))}\n\n".encode()
        except (OperationalError, InterfaceError) as error:
            logger.warning("A2A stream for %s: %s", call.method, error)
            failure = a2a_server.error_response(InternalError(UNAVAILABLE), call.id)
            yield f"event: error\ndata: {json.dumps(failure)}\n\n".encode()

    return _no_buffering(StreamingHttpResponse(body(), content_type=SSE))


def _no_buffering(response: StreamingHttpResponse) -> StreamingHttpResponse:
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
