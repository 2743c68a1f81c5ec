"""Operations routes under ``/<slug>/v1/``: recent server log lines.

A caller sees the lines of this agent tagged with its own tenant, and the agent's
platform lines (no tenant, no session); never another tenant's lines.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import Tenant
from agents.api.base import AgentView
from sessions_app.api.base import NON_NEGATIVE_INT, non_negative_int
from sessions_app.models import LogLine

DEFAULT_LOG_LINES = 100
MAX_LOG_LINES = 1000


def visible_log_lines(agent_slug: str, tenant: Tenant, after: int, limit: int) -> list[LogLine]:
    """The agent's lines with an id above ``after`` that ``tenant`` may read, oldest first."""
    visible = Q(tenant=tenant) | Q(tenant__isnull=True, session_id="")
    lines = LogLine.objects.filter(visible, agent_slug=agent_slug, id__gt=after).order_by("id")
    return list(lines[:limit])


def line_record(line: LogLine) -> dict[str, Any]:
    return {
        "id": line.pk,
        "at": line.at.isoformat().replace("+00:00", "Z"),
        "level": line.level,
        "logger": line.logger,
        "message": line.message,
        "sessionId": line.session_id or None,
        "requestId": line.request_id or None,
    }


class AgentLogsView(AgentView):
    """``GET /<slug>/v1/logs?after=N&limit=M``: log lines with an id above N, oldest
    first; pass the answer's ``next`` as ``after`` to read on."""

    # Logs matter most when the tree is broken, so an invalid agent still answers.
    allow_invalid_agent = True

    @extend_schema(
        operation_id="agent_logs_list",
        parameters=[
            OpenApiParameter("after", NON_NEGATIVE_INT, description="Return lines with an id above this (default 0)."),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1},
                description=f"Default {DEFAULT_LOG_LINES}; a larger value means {MAX_LOG_LINES}.",
            ),
        ],
        responses=inline_serializer(
            "AgentLogLines",
            {
                "lines": inline_serializer(
                    "AgentLogLine",
                    {
                        "id": serializers.IntegerField(),
                        "at": serializers.DateTimeField(),
                        "level": serializers.CharField(),
                        "logger": serializers.CharField(),
                        "message": serializers.CharField(),
                        "sessionId": serializers.CharField(allow_null=True),
                        "requestId": serializers.CharField(
                            allow_null=True, help_text="The X-Request-ID of the request the line was logged for."
                        ),
                    },
                    many=True,
                ),
                "next": serializers.IntegerField(help_text="The last id returned, or `after` when none was."),
            },
        ),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent = self.agent
        after = non_negative_int(request, "after", 0)
        limit = non_negative_int(request, "limit", DEFAULT_LOG_LINES, MAX_LOG_LINES)
        if limit == 0:
            raise ApiError(400, "invalid", "limit must be at least 1.")
        lines = visible_log_lines(agent.slug, caller(request).tenant, after, limit)
        return Response({"lines": [line_record(line) for line in lines], "next": lines[-1].pk if lines else after})
