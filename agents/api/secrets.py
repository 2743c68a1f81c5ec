"""``/api/v1/agents/<slug>/secrets``: an agent's secrets, write-only (docs/secrets.md).

Another tenant's agent is 404 on every route; only tenant staff (a principal linked to a
staff account, or the local developer in dev mode) manage secrets, and a shared agent's
only the operator's tenant (``PLATFORM["SHARED_AGENTS_TENANT"]``) or a superuser: 403.
No answer ever carries a value.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.fields import StrictCharField
from agent_platform.auth import AuthenticatedPrincipal, caller
from agent_platform.errors import DomainError
from agents import secrets
from agents.api.base import MAX_SLUG_CHARS, AgentNotFound
from agents.models import Agent, AgentSecret
from agents.registry import get_visible_agent


class NotTenantStaff(DomainError):
    status, code = 403, "not_tenant_staff"


class NotAgentOwner(DomainError):
    status, code = 403, "not_agent_owner"


def _is_staff(user: AuthenticatedPrincipal) -> bool:
    if user.sees_all_sessions:  # the local developer in dev mode operates the whole platform
        return True
    account = user.principal.user
    return account is not None and account.is_active and (account.is_staff or account.is_superuser)


def managed_agent(request: Request, slug: str) -> Agent:
    """The agent of the URL if the caller may manage its secrets.

    Raises:
        AgentNotFound: no such agent, or another tenant's.
        NotTenantStaff: the caller's principal is not linked to a staff account.
        NotAgentOwner: a shared agent, and the caller is not of the operator's tenant.
    """
    user = caller(request)
    agent = get_visible_agent(slug, user.tenant) if len(slug) <= MAX_SLUG_CHARS and "\x00" not in slug else None
    if agent is None:
        raise AgentNotFound(f"No agent is served at /{slug[:MAX_SLUG_CHARS]}/.")
    if not _is_staff(user):
        raise NotTenantStaff(
            "Only tenant staff manage secrets: use a token of a principal linked to a staff account "
            "(`python manage.py tenant add-staff TENANT USER`)."
        )
    account = user.principal.user
    superuser = account is not None and account.is_superuser
    if not superuser and secrets.owner_tenant(agent).pk != user.tenant.pk:
        raise NotAgentOwner(
            f"Agent {agent.slug!r} is shared by every tenant: its secrets are set by the operator's tenant "
            "(PLATFORM_SHARED_AGENTS_TENANT), or in its environment."
        )
    return agent


def _listed(row: AgentSecret) -> dict[str, Any]:
    return {"name": row.name, "updatedAt": serializers.DateTimeField().to_representation(row.updated_at)}


class SecretListed(serializers.Serializer[None]):
    """A secret as listed: its name and when it was last set, never its value."""

    name = serializers.CharField()
    updatedAt = serializers.DateTimeField()


ERROR = inline_serializer("SecretError", {"error": serializers.CharField(), "message": serializers.CharField()})


class SecretValueSerializer(serializers.Serializer[None]):
    # Kept exactly as sent: a token's whitespace is part of it.
    value = StrictCharField(max_length=secrets.MAX_VALUE_CHARS, trim_whitespace=False)


class AgentSecretListView(APIView):
    """``GET /api/v1/agents/:slug/secrets``: the agent's secrets by name, never a value."""

    @extend_schema(
        responses={
            200: inline_serializer("SecretList", {"secrets": SecretListed(many=True)}),
            403: OpenApiResponse(
                ERROR, description="Not tenant staff, or a shared agent and not the operator's tenant."
            ),
        }
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent = managed_agent(request, agent_slug)
        return Response({"secrets": [_listed(row) for row in AgentSecret.objects.filter(agent=agent)]})


class AgentSecretView(APIView):
    """``PUT /api/v1/agents/:slug/secrets/:name {"value"}`` sets (or replaces) one secret,
    answered with its name and time only; ``DELETE`` removes it."""

    @extend_schema(
        request=SecretValueSerializer,
        responses={
            200: SecretListed,
            403: OpenApiResponse(
                ERROR, description="Not tenant staff, or a shared agent and not the operator's tenant."
            ),
        },
    )
    def put(self, request: Request, agent_slug: str, secret_name: str) -> Response:
        agent = managed_agent(request, agent_slug)
        secrets.checked_name(secret_name)
        body = SecretValueSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row, _ = secrets.set_secret(agent, secret_name, body.validated_data["value"])
        return Response(_listed(row))

    @extend_schema(
        responses={
            204: None,
            403: OpenApiResponse(
                ERROR, description="Not tenant staff, or a shared agent and not the operator's tenant."
            ),
        }
    )
    def delete(self, request: Request, agent_slug: str, secret_name: str) -> Response:
        agent = managed_agent(request, agent_slug)
        secrets.delete_secret(agent, secret_name)  # a name that cannot be stored is not stored: 404
        return Response(status=status.HTTP_204_NO_CONTENT)
