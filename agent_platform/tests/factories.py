"""Factories for tenancy rows. Tests build data with these, never by hand-written fixtures."""

from __future__ import annotations

import factory
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.db.models import Model

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


def staff_user_for(principal: Principal, username: str | None = None, password: str | None = None) -> User:
    """A staff account in the "Tenant staff" group, linked to ``principal`` (it acts as it)."""
    from django.contrib.auth.models import Group

    from agent_platform.signals import TENANT_STAFF_GROUP

    user = User.objects.create_user(username=username or f"{principal.name}-staff", password=password, is_staff=True)
    user.groups.add(Group.objects.get(name=TENANT_STAFF_GROUP))
    principal.user = user
    principal.save(update_fields=["user"])
    return user


def admin_url(obj: Model, view: str) -> str:
    """The admin's URL of ``view`` ("change", "download", ...) for ``obj``, its key quoted
    as the admin quotes it (an id holding ``_22`` would otherwise read back as ``"``)."""
    meta = obj._meta
    return f"/admin/{meta.app_label}/{meta.model_name}/{quote(obj.pk)}/{view}/"
