"""``python manage.py token create TENANT PRINCIPAL`` prints a new API token once."""

from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from agent_platform.models import ApiToken, Principal, Tenant, TokenScope


def _scopes(value: str) -> list[str]:
    named = [scope.strip() for scope in value.split(",") if scope.strip()]
    unknown = [scope for scope in named if scope not in TokenScope.values]
    if not named or unknown:
        raise ArgumentTypeError(f"scopes are {', '.join(TokenScope.values)}; got {value!r}")
    return [scope for scope in TokenScope.values if scope in named]


def _positive_days(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 3660:
        raise ArgumentTypeError(f"a number of days from 1 to 3660, not {value!r}")
    return int(value)


class Command(BaseCommand):
    help = "Manage API tokens. `create` prints the new token alone on the last line; only its hash is kept."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Issue a token for PRINCIPAL of TENANT (made if needed).")
        create.add_argument("tenant")
        create.add_argument("principal")
        create.add_argument("--name", default="", help="What the token is for.")
        create.add_argument(
            "--scopes",
            type=_scopes,
            default=None,
            help=f"Comma-separated, of {', '.join(TokenScope.values)} (default: every scope).",
        )
        create.add_argument(
            "--expires-in-days", type=_positive_days, default=None, help="Refuse the token after this many days."
        )
        listing = actions.add_parser("list", help="List a tenant's tokens (prefixes only).")
        listing.add_argument("tenant")
        revoke = actions.add_parser("revoke", help="Revoke the token with this prefix.")
        revoke.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            days = options["expires_in_days"]
            expires_at = None if days is None else timezone.now() + timedelta(days=days)
            self.create(options["tenant"], options["principal"], options["name"], options["scopes"], expires_at)
        elif action == "list":
            tokens = ApiToken.objects.filter(principal__tenant__slug=options["tenant"]).select_related("principal")
            for token in tokens:
                state = "revoked" if token.is_revoked else "expired" if token.is_expired else "active"
                scopes = ",".join(token.scopes)
                expires = token.expires_at.isoformat() if token.expires_at else "-"
                self.stdout.write(f"{token.prefix}\t{token.principal.name}\t{state}\t{token.name}\t{scopes}\t{expires}")
        else:
            updated = ApiToken.objects.active().filter(prefix=options["prefix"])
            if not updated.exists():
                raise CommandError(f"No active token with prefix {options['prefix']!r}.")
            for token in updated:
                token.revoke()
            self.stdout.write(f"Revoked {options['prefix']}.")

    @transaction.atomic
    def create(
        self,
        tenant_slug: str,
        principal_name: str,
        name: str,
        scopes: list[str] | None = None,
        expires_at: datetime | None = None,
    ) -> None:
        tenant = Tenant.objects.filter(slug=tenant_slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {tenant_slug!r}; create it with `tenant create {tenant_slug}`.")
        principal = Principal.objects.filter(tenant=tenant, name=principal_name).first()
        if principal is None:
            principal = Principal(tenant=tenant, name=principal_name)
            try:
                principal.full_clean()
            except ValidationError as error:
                raise CommandError(f"principal: {' '.join(error.message_dict.get('name', [str(error)]))}") from error
            principal.save()
            self.stdout.write(f"Created principal {principal}.")
        row, token = ApiToken.issue(principal, name, scopes=scopes, expires_at=expires_at)
        self.stdout.write(f"Token {row.prefix}… for {principal}. It is shown only now; keep it somewhere safe:")
        self.stdout.write(token)
