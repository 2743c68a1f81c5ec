"""The management API under ``/api/v1/``: who am I, my tokens, the agents I can use."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.pagination import cursor_pages
from agent_platform.api.serializers import (
    AgentSerializer,
    ApiTokenSerializer,
    IssuedTokenSerializer,
    TokenRequestSerializer,
)
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import ApiToken, all_scopes
from agent_platform.scopes import ANY_SCOPE
from agents.models import Agent
from agents.registry import served_agents


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
