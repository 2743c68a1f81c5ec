"""Eval routes under ``/<slug>/v1/dev/evals``: session-API auth, not dev-only, scoped to
the caller's tenant. Thin: the work is in ``sessions_app.evals.runs``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agents import eval_engine
from agents.api.base import AgentView
from sessions_app.api.base import ERROR
from sessions_app.evals import runs
from sessions_app.models import EvalRun

CASE_FIELDS: dict[str, serializers.Field[Any, Any, Any, Any]] = {
    "id": serializers.CharField(),
    "status": serializers.ChoiceField(["pending", "running", *eval_engine.FINISHED]),
    "durationMs": serializers.IntegerField(allow_null=True),
    "sessionIds": serializers.ListField(child=serializers.CharField()),
    "attempts": serializers.IntegerField(),
    "assertions": serializers.ListField(child=serializers.DictField()),
    "error": serializers.CharField(allow_null=True),
}
SNAPSHOT_FIELDS: dict[str, Any] = {
    "runId": serializers.CharField(),
    "status": serializers.ChoiceField(["running", "completed", "failed", "cancelled"]),
    "createdAt": serializers.DateTimeField(),
    "finishedAt": serializers.DateTimeField(allow_null=True),
    "filterIds": serializers.ListField(child=serializers.CharField()),
    "tags": serializers.ListField(child=serializers.CharField()),
    "summary": serializers.DictField(child=serializers.IntegerField()),
    "cases": inline_serializer("EvalCaseResult", CASE_FIELDS, many=True),
    "error": serializers.CharField(allow_null=True),
}
SNAPSHOT = inline_serializer("EvalRun", SNAPSHOT_FIELDS)
RUN_REQUEST = inline_serializer(
    "EvalRunRequest",
    {
        "filterIds": serializers.ListField(child=serializers.CharField(), required=False),
        "tags": serializers.ListField(child=serializers.CharField(), required=False),
    },
)
DATAPOINTS = inline_serializer(
    "EvalDatapoints",
    {
        "datapoints": inline_serializer(
            "EvalDatapoint",
            {
                "id": serializers.CharField(),
                "description": serializers.CharField(allow_null=True),
                "tags": serializers.ListField(child=serializers.CharField()),
            },
            many=True,
        ),
        "config": serializers.DictField(),
    },
)


def _string_list(data: Any, field: str) -> list[str]:
    value = data.get(field, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, "invalid_request", f"{field} must be a list of strings.")
    return value


class EvalListView(AgentView):
    """``GET /<slug>/v1/dev/evals``: the agent's eval cases and its evals config."""

    @extend_schema(responses={200: DATAPOINTS, 404: ERROR})
    def get(self, request: Request, agent_slug: str) -> Response:
        return Response(eval_engine.datapoints(self.surface))


class EvalRunsView(AgentView):
    """``GET`` the tenant's runs of this agent (newest first); ``POST`` start one."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "EvalRunList", {"runs": inline_serializer("EvalRunItem", SNAPSHOT_FIELDS, many=True)}
            )
        }
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        tenant_id = caller(request).principal.tenant_id
        found = EvalRun.objects.filter(agent=self.agent, tenant_id=tenant_id).order_by("-created_at")[:50]
        return Response({"runs": [runs.snapshot(run) for run in found]})

    @extend_schema(
        operation_id="eval_runs_create",
        request=RUN_REQUEST,
        responses={202: SNAPSHOT, 400: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request: Request, agent_slug: str) -> Response:
        data = request.data if isinstance(request.data, dict) else None
        if data is None:
            raise ApiError(400, "invalid_request", "The body must be a JSON object.")
        filter_ids, tags = _string_list(data, "filterIds"), _string_list(data, "tags")
        run = runs.create_run(self.agent, self.surface, caller(request).principal, filter_ids, tags)
        return Response(runs.snapshot(run), status=202)


class EvalRunMixin(AgentView):
    def _run(self, request: Request, run_id: str) -> EvalRun:
        tenant_id = caller(request).principal.tenant_id
        run = EvalRun.objects.filter(pk=run_id, agent=self.agent, tenant_id=tenant_id).first()
        if run is None:
            raise runs.EvalRunNotFound(f"No eval run {run_id}.")
        return run


class EvalRunView(EvalRunMixin):
    """``GET /<slug>/v1/dev/evals/runs/:runId``: the run's snapshot."""

    @extend_schema(operation_id="eval_run_retrieve", responses={200: SNAPSHOT, 404: ERROR})
    def get(self, request: Request, agent_slug: str, run_id: str) -> Response:
        return Response(runs.snapshot(self._run(request, run_id)))


class EvalRunCancelView(EvalRunMixin):
    """``POST .../runs/:runId/cancel``: unfinished cases become cancelled."""

    @extend_schema(request=None, responses={200: SNAPSHOT, 404: ERROR, 409: ERROR})
    def post(self, request: Request, agent_slug: str, run_id: str) -> Response:
        return Response(runs.snapshot(runs.cancel_run(self._run(request, run_id))))
