"""``POST /<slug>/v1/dev/schedules/<id>``: run a schedule once, now (dev mode only).

In dev mode schedules never fire by themselves; this route (and the playground's "Run
now" button on it) is how a developer runs one. With dev mode off it is 404, like a
route that does not exist; ``agent dispatch --schedule`` works in any mode.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agents.api.base import AgentView
from sessions_app.triggers.schedules import run_schedule_now


class DevRouteOff(DomainError):
    status, code = 404, "not_found"


class DevScheduleRunView(AgentView):
    """Run the schedule ``schedule_id`` once; 404 naming the known ids when there is none."""

    def resolve(self, request: Request, agent_slug: str, **kwargs: object) -> None:
        if not platform_settings.DEV:
            raise DevRouteOff("No such route: the dev routes exist only in dev mode (PLATFORM_DEV=1).")
        super().resolve(request, agent_slug, **kwargs)

    @extend_schema(
        operation_id="dev_schedule_run",
        request=None,
        responses={
            200: inline_serializer(
                "DevScheduleRun",
                {
                    "scheduleId": serializers.CharField(),
                    "sessionIds": serializers.ListField(child=serializers.CharField()),
                },
            ),
            404: OpenApiResponse(description="No such schedule (the message names the known ids), or dev mode is off."),
            502: OpenApiResponse(description="The schedule's handler raised (sessions it sent are kept)."),
        },
    )
    def post(self, request: Request, agent_slug: str, schedule_id: str) -> Response:
        return Response(run_schedule_now(self.agent, self.surface, schedule_id))
