"""Dev mode's reminder routes under ``/<slug>/v1/dev/reminders``: reminders never fire
by themselves in dev mode, so a developer lists them and fires one by hand. With dev
mode off the routes do not exist (404, before any authentication)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.conf import platform_settings
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from sessions_app.access import visible_sessions
from sessions_app.api.base import ERROR
from sessions_app.models import Reminder, Session
from sessions_app.triggers.reminder_firing import fire_reminder_now
from sessions_app.triggers.reminders import ReminderNotFound

REMINDER_FIELDS: dict[str, serializers.Field[Any, Any, Any, Any]] = {
    "id": serializers.CharField(),
    "sessionId": serializers.CharField(),
    "message": serializers.CharField(),
    "at": serializers.DateTimeField(),
    "status": serializers.ChoiceField(["pending", "fired", "cancelled", "dropped"]),
    "createdAt": serializers.DateTimeField(),
    "firedAt": serializers.DateTimeField(allow_null=True),
}
REMINDER_LIST = inline_serializer(
    "ReminderList", {"reminders": inline_serializer("Reminder", REMINDER_FIELDS, many=True)}
)


class DevView(AgentView):
    """A route that exists only in dev mode."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if not platform_settings.DEV:
            raise ApiError(404, "not_found", "No such route.")
        super().initial(request, *args, **kwargs)


def _callers_reminders(view: AgentView, request: Request) -> Any:
    sessions = visible_sessions(Session.objects.filter(agent=view.agent), caller(request))
    return Reminder.objects.filter(session__in=sessions)


class DevReminderListView(DevView):
    """``GET /<slug>/v1/dev/reminders``: the reminders of the caller's sessions on this agent."""

    @extend_schema(responses={200: REMINDER_LIST, 404: ERROR})
    def get(self, request: Request, agent_slug: str) -> Response:
        reminders = _callers_reminders(self, request).order_by("fire_at", "created_at")
        return Response({"reminders": [reminder.as_record() for reminder in reminders]})


class DevReminderFireView(DevView):
    """``POST /<slug>/v1/dev/reminders/:id``: fire a pending reminder now."""

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                "ReminderFired",
                {
                    "reminderId": serializers.CharField(),
                    "sessionId": serializers.CharField(),
                    "turnId": serializers.CharField(),
                },
            ),
            404: ERROR,
            409: ERROR,
        },
    )
    def post(self, request: Request, agent_slug: str, reminder_id: str) -> Response:
        # Someone else's reminder is unknown to this caller, as an unknown one is.
        if not _callers_reminders(self, request).filter(pk=reminder_id).exists():
            raise ReminderNotFound(f"No reminder {reminder_id!r} on this agent.")
        return Response(fire_reminder_now(self.agent.slug, reminder_id))
