"""Artifact routes under ``/<slug>/v1/``: the caller's artifacts, and their content.

An artifact is its session owner's (kept on the row: it outlives its session). Another
principal's artifact (same tenant or not) is 403 with no detail, an unknown or
expired one 404, a malformed id 400. Content is always sent as an attachment with
a file name made safe here, whatever name the agent gave it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform import rls
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agents.api.base import AgentView
from sessions_app.access import NotSessionOwner, owned_session
from sessions_app.api.base import ERROR, non_negative_int
from sessions_app.models import Artifact
from sessions_app.records.artifacts import MEDIA_TYPE, content_of

ARTIFACT_ID = re.compile(r"art_[a-z2-7]{26}")
SESSION_ID = re.compile(r"ses_[a-z2-7]{26}")
DEFAULT_FILE_NAME = "artifact"
MAX_FILE_NAME_CHARS = 150

ARTIFACT_FIELDS: dict[str, serializers.Field[Any, Any, Any, Any]] = {
    "id": serializers.CharField(),
    "sessionId": serializers.CharField(),
    "turnId": serializers.CharField(allow_null=True),
    "kind": serializers.CharField(),
    "name": serializers.CharField(),
    "contentType": serializers.CharField(),
    "size": serializers.IntegerField(),
    "metadata": serializers.DictField(),
    "createdAt": serializers.DateTimeField(),
    "updatedAt": serializers.DateTimeField(),
    "expiresAt": serializers.DateTimeField(allow_null=True),
}
MAX_ARTIFACTS_LISTED = 200
KIND_MAX_CHARS = Artifact._meta.get_field("kind").max_length or 100
POSITIVE_INT = {"type": "integer", "minimum": 1}


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def artifact_record(artifact: Artifact) -> dict[str, Any]:
    return {
        "id": artifact.pk,
        "sessionId": artifact.session_id,
        "turnId": artifact.turn_id,
        "kind": artifact.kind,
        "name": artifact.name,
        "contentType": artifact.content_type,
        "size": artifact.size,
        "metadata": artifact.metadata,
        "createdAt": _iso(artifact.created_at),
        "updatedAt": _iso(artifact.updated_at),
        "expiresAt": _iso(artifact.expires_at),
    }


def _live(artifacts: QuerySet[Artifact]) -> QuerySet[Artifact]:
    return artifacts.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))


def safe_file_name(name: str) -> str:
    """The last path segment of ``name`` without control characters, quotes or a leading
    dot, e.g. ``"../../etc/passwd"`` -> ``"passwd"``; ``"artifact"`` when nothing is left."""
    last = name.replace("\\", "/").rsplit("/", 1)[-1]
    kept = "".join(c for c in last if unicodedata.category(c)[0] not in "CZ" or c == " ")
    kept = kept.replace('"', "").strip().lstrip(".")
    return kept[:MAX_FILE_NAME_CHARS] or DEFAULT_FILE_NAME


class ArtifactListView(AgentView):
    """``GET /<slug>/v1/artifacts?kind=&sessionId=&limit=``: the caller's artifacts on this
    agent, the most recently updated first."""

    @extend_schema(
        operation_id="artifact_list",
        parameters=[
            OpenApiParameter(
                "sessionId",
                {"type": "string", "pattern": rf"^{SESSION_ID.pattern}$"},
                description="Only this session's artifacts.",
            ),
            OpenApiParameter("kind", str, description="Only artifacts of this kind."),
            OpenApiParameter(
                "limit", POSITIVE_INT, description=f"Default 50; a larger value means {MAX_ARTIFACTS_LISTED}."
            ),
        ],
        responses={
            200: inline_serializer(
                "ArtifactList", {"artifacts": inline_serializer("Artifact", ARTIFACT_FIELDS, many=True)}
            ),
            400: ERROR,
            403: ERROR,
            404: ERROR,
        },
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        user = caller(request)
        limit = non_negative_int(request, "limit", 50, MAX_ARTIFACTS_LISTED)
        if limit == 0:
            raise ApiError(400, "invalid", "limit must be a positive integer, not 0.")
        artifacts = _live(Artifact.objects.filter(agent=self.agent))
        if not user.sees_all_sessions:
            artifacts = artifacts.filter(principal=user.principal)
        session_ids = request.query_params.getlist("sessionId")
        if len(session_ids) > 1:
            raise ApiError(400, "invalid", "sessionId must be given once.")
        if session_ids:
            if not SESSION_ID.fullmatch(session_ids[0]):
                raise ApiError(400, "invalid", f"sessionId {session_ids[0][:40]!r} is not a session id.")
            session = owned_session(self.agent, session_ids[0], user)
            artifacts = artifacts.filter(session=session)
        kinds = request.query_params.getlist("kind")
        if len(kinds) > 1:
            raise ApiError(400, "invalid", "kind must be given once.")
        if kinds:
            if not kinds[0] or len(kinds[0]) > KIND_MAX_CHARS:
                raise ApiError(400, "invalid", f"kind {kinds[0][:40]!r} is not an artifact kind.")
            artifacts = artifacts.filter(kind=kinds[0])
        rows = artifacts.order_by("-updated_at", "-pk").defer("content")[:limit]
        return Response({"artifacts": [artifact_record(artifact) for artifact in rows]})


class ArtifactContentView(AgentView):
    """``GET /<slug>/v1/artifacts/:id/content``: the bytes, always as an attachment."""

    @extend_schema(
        operation_id="artifact_content",
        parameters=[
            OpenApiParameter(
                "artifact_id", {"type": "string", "pattern": rf"^{ARTIFACT_ID.pattern}$"}, OpenApiParameter.PATH
            )
        ],
        responses={
            (200, "*/*"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The content; Content-Type is the artifact's own."
            ),
            400: ERROR,
            403: ERROR,
            404: ERROR,
        },
    )
    def get(self, request: Request, agent_slug: str, artifact_id: str) -> HttpResponse:
        agent = self.agent
        if not ARTIFACT_ID.fullmatch(artifact_id):
            raise ApiError(400, "invalid", f"{artifact_id[:40]!r} is not an artifact id.")
        # Found across tenants (another tenant's id is 403, not 404); the owner check follows.
        artifact = rls.found_across_tenants(
            lambda: _live(Artifact.objects.filter(pk=artifact_id, agent=agent)).defer("content").first()
        )
        if artifact is None:
            raise ApiError(404, "artifact_not_found", f"No artifact {artifact_id!r} on this agent.")
        user = caller(request)
        if not (user.sees_all_sessions or artifact.principal_id == user.principal.pk):
            raise NotSessionOwner("You do not own this artifact.")
        content = content_of(artifact)
        if content is None:
            raise ApiError(404, "artifact_not_found", f"Artifact {artifact_id!r} has no content.")
        content_type = artifact.content_type if MEDIA_TYPE.fullmatch(artifact.content_type) else ""
        response = HttpResponse(content, content_type=content_type or "application/octet-stream")
        response["Content-Disposition"] = content_disposition_header(True, safe_file_name(artifact.name))
        # Never rendered by a browser on our origin, whatever the agent said the type was.
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["X-Content-Type-Options"] = "nosniff"
        return response
