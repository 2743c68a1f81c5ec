"""Who owns the sessions a trigger starts (DESIGN §9.12): a service principal of the
agent's tenant named after the source (``slack``, ``github``, ``schedule``), made on
first use. A shared ``AGENTS_DIR`` agent has no tenant: its triggered sessions belong to
``PLATFORM["SHARED_AGENTS_TENANT"]`` (default ``local``)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from agent_platform.conf import platform_settings
from agent_platform.models import Principal, Tenant
from agents.models import Agent


def trigger_tenant(agent: Agent) -> Tenant:
    """The tenant whose sessions the agent's triggers start."""
    if agent.tenant_id is not None:
        return agent.tenant  # type: ignore[return-value]
    slug = platform_settings.SHARED_AGENTS_TENANT
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug})
    return tenant


def service_principal(agent: Agent, source: str) -> Principal:
    """The principal named ``source`` in the agent's trigger tenant, made on first use."""
    tenant = trigger_tenant(agent)
    found = Principal.objects.filter(tenant=tenant, name=source).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return Principal.objects.create(tenant=tenant, name=source)
    except IntegrityError:  # made by a concurrent first use
        return Principal.objects.get(tenant=tenant, name=source)
