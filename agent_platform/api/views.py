"""The management API under ``/api/v1/``: who am I, my tokens, the agents I can use, and
the tenant's deployed agents and their deployments (``agents.deployments``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.pagination import cursor_pages
from agent_platform.api.serializers import (
    AgentRequestSerializer,
    AgentSerializer,
    ApiTokenSerializer,
    DeploymentSerializer,
    IssuedTokenSerializer,
    TokenRequestSerializer,
)
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import ApiToken, all_scopes
from agent_platform.scopes import ANY_SCOPE
from agents import archives, deployments
from agents.models import Agent, Revision
from agents.registry import served_agents

NOT_STAFF = OpenApiResponse(OpenApiTypes.OBJECT, "Only tenant staff may do this (`not_tenant_staff`).")
INVALID_TREE = OpenApiResponse(OpenApiTypes.OBJECT, "The tree has errors (`deployment_invalid`, with `diagnostics`).")

ARCHIVE_TYPES = {"application/gzip", "application/x-gzip", "application/zip", "application/x-tar+gzip"}


class MeView(APIView):
    """``GET /api/v1/me``: the principal and tenant the credentials name (any scope)."""

    token_scopes = ANY_SCOPE

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "tenant": serializers.CharField(),
                "principal": serializers.CharField(),
                "tokenPrefix": serializers.CharField(allow_null=True),
            },
        )
    )
    def get(self, request: Request) -> Response:
        user = caller(request)
        token = user.token
        return Response(
            {
                "tenant": user.tenant.slug,
                "principal": user.principal.name,
                "tokenPrefix": token.prefix if token else None,
            }
        )


class TokenListView(ListAPIView[ApiToken]):
    """``GET /api/v1/tokens`` lists the caller's tokens (newest first, a page at a time);
    ``POST`` issues a new one, returned once in ``token``."""

    serializer_class = ApiTokenSerializer
    pagination_class = cursor_pages("tokens", ("-created_at", "-id"), "datetime")

    def get_queryset(self) -> QuerySet[ApiToken]:
        return ApiToken.objects.filter(principal=caller(self.request).principal)

    @extend_schema(
        request=TokenRequestSerializer,
        responses={201: IssuedTokenSerializer, 403: OpenApiResponse(description="A scope the calling token lacks.")},
    )
    def post(self, request: Request) -> Response:
        user = caller(request)
        body = TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        scopes = body.validated_data.get("scopes") or all_scopes()
        if user.token is not None and not set(scopes) <= set(user.token.scopes):
            missing = ", ".join(sorted(set(scopes) - set(user.token.scopes)))
            raise ApiError(403, "insufficient_scope", f"A token cannot grant scopes it lacks ({missing}).")
        seconds = body.validated_data.get("expiresInSeconds")
        expires_at = None if seconds is None else timezone.now() + timedelta(seconds=seconds)
        row, token = ApiToken.issue(user.principal, body.validated_data["name"], scopes=scopes, expires_at=expires_at)
        return Response({"token": token, **ApiTokenSerializer(row).data}, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    """``GET /api/v1/tokens/:prefix`` shows one of the caller's tokens; ``DELETE`` revokes it."""

    @staticmethod
    def _token(request: Request, prefix: str) -> ApiToken:
        token = ApiToken.objects.filter(principal=caller(request).principal, prefix=prefix).first()
        if token is None:
            raise ApiError(404, "token_not_found", f"You have no token with prefix {prefix[:40]!r}.")
        return token

    @extend_schema(responses=ApiTokenSerializer)
    def get(self, request: Request, prefix: str) -> Response:
        return Response(ApiTokenSerializer(self._token(request, prefix)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, prefix: str) -> Response:
        self._token(request, prefix).revoke()
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentListView(ListAPIView[Agent]):
    """``GET /api/v1/agents``: the shared agents and the caller's tenant's own, by slug."""

    serializer_class = AgentSerializer
    pagination_class = cursor_pages("agents", ("slug",))

    def get_queryset(self) -> QuerySet[Agent]:
        served = served_agents(caller(self.request).tenant)
        return Agent.objects.filter(pk__in=[agent.pk for agent in served])

    @extend_schema(
        request=AgentRequestSerializer,
        responses={
            201: AgentSerializer,
            403: NOT_STAFF,
            409: OpenApiResponse(OpenApiTypes.OBJECT, "The slug is taken."),
        },
    )
    def post(self, request: Request) -> Response:
        """``POST /api/v1/agents {"slug"}``: a new deployed agent of the caller's tenant
        (tenant staff only), with no deployment yet."""
        user = caller(request)
        deployments.require_staff(user)
        body = AgentRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        agent = deployments.create_agent(user.tenant, body.validated_data["slug"])
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


def _upload_chunks(request: Request) -> Iterator[bytes]:
    """The archive's bytes as they arrive: the raw body, or the multipart field ``archive``
    (Django spools uploaded files to disk).

    Raises:
        ApiError: 415 for another content type, 400 for a form without ``archive``.
    """
    content_type = (request.content_type or "").split(";")[0].strip().lower()
    django_request = request._request
    if content_type == "multipart/form-data":
        upload = django_request.FILES.get("archive")
        if upload is None:
            raise ApiError(400, "invalid", "The form has no file field 'archive'.")
        return iter(upload.chunks(archives.CHUNK))
    if content_type not in ARCHIVE_TYPES:
        raise ApiError(
            415,
            "unsupported_media_type",
            "Send the archive as the body (Content-Type: application/gzip or application/zip) "
            "or as the multipart field 'archive'.",
        )
    return iter(lambda: django_request.read(archives.CHUNK), b"")


ARCHIVE_BODY = {
    "application/gzip": OpenApiTypes.BINARY,
    "application/zip": OpenApiTypes.BINARY,
    "multipart/form-data": inline_serializer("DeploymentUpload", {"archive": serializers.FileField()}),
}


class DeploymentListView(APIView):
    """``GET /api/v1/agents/:slug/deployments`` lists an agent's revisions, newest first;
    ``POST`` uploads a new one (tenant staff): 201, or 422 with the diagnostics of a tree
    with errors (the active revision keeps serving either way)."""

    @extend_schema(responses=inline_serializer("DeploymentList", {"deployments": DeploymentSerializer(many=True)}))
    def get(self, request: Request, agent_slug: str) -> Response:
        agent = deployments.tenant_agent(caller(request).tenant, agent_slug)
        rows = Revision.objects.filter(agent=agent).select_related("agent", "uploaded_by")
        return Response({"deployments": DeploymentSerializer(rows, many=True).data})

    @extend_schema(
        request=ARCHIVE_BODY,
        responses={
            201: DeploymentSerializer,
            200: OpenApiResponse(DeploymentSerializer, description="The same tree was uploaded before."),
            403: NOT_STAFF,
            422: INVALID_TREE,
        },
    )
    def post(self, request: Request, agent_slug: str) -> Response:
        user = caller(request)
        agent = deployments.tenant_agent(user.tenant, agent_slug)
        deployments.require_staff(user)
        revision, created = deployments.upload(agent, _upload_chunks(request), user.principal)
        body = DeploymentSerializer(revision).data
        if revision.status != "ready":
            message = f"The tree has errors; deployment {revision.pk} cannot be activated."
            return Response({"error": "deployment_invalid", "message": message, **body}, status=422)
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class DeploymentActivateView(APIView):
    """``POST /api/v1/agents/:slug/deployments/:id/activate``: new sessions use it from
    now on; running ones finish on theirs. Activating an older one is a roll back."""

    @extend_schema(request=None, responses={200: DeploymentSerializer, 403: NOT_STAFF, 422: INVALID_TREE})
    def post(self, request: Request, agent_slug: str, deployment_id: str) -> Response:
        user = caller(request)
        agent = deployments.tenant_agent(user.tenant, agent_slug)
        deployments.require_staff(user)
        revision = deployments.activate(agent, deployment_id)
        return Response(DeploymentSerializer(revision).data)
