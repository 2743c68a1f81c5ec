"""Factories for tenancy rows. Tests build data with these, never by hand-written fixtures."""

from __future__ import annotations

import factory

from agent_platform.models import ApiToken, Principal, Tenant


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda tenant: tenant.slug.title())


class PrincipalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Principal
        django_get_or_create = ["tenant", "name"]

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"principal-{n}")


def issue_token(principal: Principal, name: str = "test") -> str:
    """A fresh bearer token for ``principal``."""
    _, token = ApiToken.issue(principal, name)
    return token
