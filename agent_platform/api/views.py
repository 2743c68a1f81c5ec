"""The management API under ``/api/v1/``: who am I, my tokens, the agents I can use."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.serializers import (
    AgentSerializer,
    ApiTokenSerializer,
    IssuedTokenSerializer,
    TokenRequestSerializer,
)
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import ApiToken
from agents.registry import served_agents


class MeView(APIView):
    """``GET /api/v1/me``: the principal and tenant the credentials name."""

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


class TokenListView(APIView):
    """``GET /api/v1/tokens`` lists the caller's tokens; ``POST`` issues a new one,
    returned once in ``token``."""

    @extend_schema(responses=inline_serializer("TokenList", {"tokens": ApiTokenSerializer(many=True)}))
    def get(self, request: Request) -> Response:
        tokens = ApiToken.objects.filter(principal=caller(request).principal)
        return Response({"tokens": ApiTokenSerializer(tokens, many=True).data})

    @extend_schema(
        request=TokenRequestSerializer,
        responses={201: IssuedTokenSerializer},
    )
    def post(self, request: Request) -> Response:
        body = TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row, token = ApiToken.issue(caller(request).principal, body.validated_data["name"])
        return Response({"token": token, **ApiTokenSerializer(row).data}, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    """``DELETE /api/v1/tokens/:prefix`` revokes one of the caller's tokens."""

    @extend_schema(responses={204: None})
    def delete(self, request: Request, prefix: str) -> Response:
        token = ApiToken.objects.filter(principal=caller(request).principal, prefix=prefix).first()
        if token is None:
            raise ApiError(404, "token_not_found", f"You have no token with prefix {prefix!r}.")
        token.revoke()
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentListView(APIView):
    """``GET /api/v1/agents``: the shared agents and the caller's tenant's own."""

    @extend_schema(responses=inline_serializer("AgentList", {"agents": AgentSerializer(many=True)}))
    def get(self, request: Request) -> Response:
        return Response({"agents": AgentSerializer(served_agents(caller(request).tenant), many=True).data})
