"""``python manage.py tenant create SLUG`` and friends."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from agent_platform.models import Principal, Tenant
from agent_platform.signals import TENANT_STAFF_GROUP


class Command(BaseCommand):
    help = "Manage tenants: create one, list them, or give a person admin access to one."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a tenant.")
        create.add_argument("slug", help="Lowercase letters, digits, '-' and '_'.")
        create.add_argument("--name", default="", help="Display name.")
        actions.add_parser("list", help="List tenants.")
        staff = actions.add_parser("add-staff", help="Make USERNAME a staff user who administers TENANT in the admin.")
        staff.add_argument("tenant")
        staff.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self.create(options["slug"], options["name"])
        elif action == "list":
            for tenant in Tenant.objects.all():
                self.stdout.write(f"{tenant.slug}\t{tenant.name}")
        else:
            self.add_staff(options["tenant"], options["username"])

    def create(self, slug: str, name: str) -> None:
        tenant = Tenant(slug=slug, name=name)
        try:
            tenant.full_clean()
        except ValidationError as error:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in error.message_dict.items())
            ) from error
        tenant.save()
        self.stdout.write(f"Created tenant {tenant.slug!r}.")

    @transaction.atomic
    def add_staff(self, tenant_slug: str, username: str) -> None:
        tenant = Tenant.objects.filter(slug=tenant_slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {tenant_slug!r}; create it with `tenant create {tenant_slug}`.")
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": True})
        existing = Principal.objects.filter(user=user).exclude(tenant=tenant).first()
        if existing is not None:
            raise CommandError(f"{username!r} already administers tenant {existing.tenant.slug!r}.")
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        user.groups.add(Group.objects.get(name=TENANT_STAFF_GROUP))
        principal, _ = Principal.objects.get_or_create(tenant=tenant, name=username)
        principal.user = user
        principal.save(update_fields=["user"])
        self.stdout.write(f"{username!r} now administers tenant {tenant.slug!r} in the admin.")
        if created:
            self.stdout.write(f"Set a password with: python manage.py changepassword {username}")
