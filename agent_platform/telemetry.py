"""The ``agent_sdk.http`` span and the ``agent_sdk.http.duration`` histogram of each
request to an agent's routes (DESIGN.md §9.9), for agents that export.

The span is made when the response is ready, from the request's start time, so that a
request costs nothing extra until then, and only a clock read for an agent that
exports nothing. Which agent: the one ``agents.api.base.served_agent`` resolved for the
request (routes outside an agent's ``/<slug>/`` have none and get no span). A W3C
``traceparent`` header makes the span a child of the caller's span; a turn the request
starts is the root of a trace of its own (its spans are made when it ends).

A streamed response's span ends when its headers are sent, not when the stream closes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agents.telemetry.spans import http_span
from sessions_app.telemetry import agent_telemetry

logger = logging.getLogger(__name__)
_propagator = TraceContextTextMapPropagator()
_ids = RandomIdGenerator()


def observe(request: HttpRequest, response: HttpResponseBase, start: int) -> None:
    """Record the request, if its agent exports (never raises into the response)."""
    surface = getattr(request, "agent_surface", None)
    if surface is None:
        return
    telemetry = agent_telemetry(surface)
    if telemetry is None:
        return
    end = time.time_ns()
    try:
        match = request.resolver_match
        route = f"/{match.route}" if match is not None and match.route else ""
        method, status = request.method or "", response.status_code
        parent = get_current_span(_propagator.extract(request.headers)).get_span_context()
        span = http_span(
            method=method,
            route=route,
            status=status,
            start=start,
            end=end,
            agent=surface.slug,
            parent=parent,
            resource=telemetry.resource,
            span_id=_ids.generate_span_id(),
            trace_id=_ids.generate_trace_id(),
        )
        telemetry.export([span])
        points = {
            "agent_sdk.agent": surface.slug,
            "http.request.method": method,
            "http.route": route,
            "http.response.status_code": status,
        }
        telemetry.record("agent_sdk.http.duration", (end - start) / 1e6, points, unit="ms")
    except Exception:  # observe-only: the response goes out whatever happens here
        logger.exception("the request's telemetry was not recorded")


@sync_and_async_middleware
def http_telemetry(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Django middleware (both modes: the async stream views pay no thread hop)."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            start = time.time_ns()
            response: Awaitable[HttpResponseBase] = get_response(request)
            answered = await response
            observe(request, answered, start)
            return answered

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        start = time.time_ns()
        response = get_response(request)
        observe(request, response, start)
        return response

    return middleware
