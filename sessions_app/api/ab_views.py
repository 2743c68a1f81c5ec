"""``GET /<slug>/v1/abs``: the agent's A/B experiments over the caller's sessions."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agents.api.base import AgentView
from sessions_app.access import visible_sessions
from sessions_app.models import Session
from sessions_app.records import ab

_INTERVAL = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)


class AbsView(AgentView):
    """Per arm: sessions and each metric's mean with an always-valid 95% interval; per
    metric, each arm against the first (the baseline); and the sessions' assignments.
    Only the caller's sessions count (every principal's for the local developer)."""

    @extend_schema(
        operation_id="ab_report",
        responses=inline_serializer(
            "AbReport",
            {
                "experiments": inline_serializer(
                    "AbExperiment",
                    {
                        "name": serializers.CharField(),
                        "description": serializers.CharField(allow_null=True),
                        "arms": inline_serializer(
                            "AbArm",
                            {
                                "arm": serializers.CharField(),
                                "weight": serializers.FloatField(),
                                "sessions": serializers.IntegerField(),
                                "metrics": serializers.DictField(
                                    child=inline_serializer(
                                        "AbMetric",
                                        {
                                            "n": serializers.IntegerField(),
                                            "mean": serializers.FloatField(allow_null=True),
                                            "ci95": _INTERVAL,
                                        },
                                    )
                                ),
                            },
                            many=True,
                        ),
                        "comparisons": inline_serializer(
                            "AbComparison",
                            {
                                "metric": serializers.CharField(),
                                "arm": serializers.CharField(),
                                "baseline": serializers.CharField(),
                                "difference": serializers.FloatField(allow_null=True),
                                "ci95": _INTERVAL,
                                "significant": serializers.BooleanField(),
                            },
                            many=True,
                        ),
                    },
                    many=True,
                ),
                "sessions": inline_serializer(
                    "AbAssignment",
                    {
                        "sessionId": serializers.CharField(),
                        "experiment": serializers.CharField(),
                        "arm": serializers.CharField(),
                        "assignedAt": serializers.DateTimeField(),
                        "metrics": serializers.DictField(child=serializers.FloatField()),
                    },
                    many=True,
                ),
            },
        ),
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        sessions = visible_sessions(Session.objects.filter(agent=self.agent), caller(request))
        return Response(ab.report(self.surface, sessions))
