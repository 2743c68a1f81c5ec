"""Tenancy and access: who may call the platform, and on whose behalf."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from agents.sdk._definitions import cors_origin
from agents.sdk._errors import DefinitionError

TOKEN_PREFIX = "apt_"  # noqa: S105  (a marker, not a secret)
# How many characters of a token stay visible (and searchable) after creation.
VISIBLE_PREFIX_LENGTH = len(TOKEN_PREFIX) + 8
# last_used_at is refreshed at most this often, to keep writes off the hot path.
LAST_USED_RESOLUTION = timedelta(seconds=60)

# The Tenant columns that hold its quotas and budget (only superusers set them).
QUOTA_FIELDS = (
    "max_running_turns",
    "max_sessions_per_minute",
    "max_open_streams",
    "max_stored_bytes",
    "monthly_budget_usd",
)

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]*\Z",
    "Use lowercase letters, digits, '-' and '_', starting with a letter or digit.",
)


def validate_cors_origins(value: Any) -> None:
    """A list of browser origins or ``*`` (as ``define_channel(cors_origins=...)`` takes)."""
    if not isinstance(value, list):
        raise ValidationError('A list of origins, e.g. ["https://shop.example"].')
    for origin in value:
        try:
            cors_origin(origin)
        except DefinitionError as error:
            raise ValidationError(str(error)) from None


class Tenant(models.Model):
    """An organisation using the deployment. Tenants never see each other's data."""

    slug = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200, blank=True)
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Days an ended session of this tenant is kept (agents with their own retention_days keep theirs); "
            "empty: the platform's default (PLATFORM_RETENTION_DAYS); 0: kept forever."
        ),
    )
    cors_origins = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_cors_origins],
        help_text=(
            'Browser origins (["https://shop.example"], or ["*"]) whose pages may call the channel and '
            "session routes of this tenant's own (deployed) agents, besides what each channel allows."
        ),
    )
    # Quotas and the budget (sessions_app.quotas); empty: the platform's default (PLATFORM_QUOTA_*).
    max_running_turns = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Turns not yet ended (queued, running, awaiting approval) at once; empty: the default.",
    )
    max_sessions_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="New sessions in any 60 seconds; empty: the default."
    )
    max_open_streams = models.PositiveIntegerField(
        null=True, blank=True, help_text="Event streams (NDJSON and WebSocket) open at once; empty: the default."
    )
    max_stored_bytes = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Bytes stored (workspace files, key-value entries, files, artifacts); empty: the default.",
    )
    monthly_budget_usd = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="USD a calendar month (UTC) of turns may cost; once spent, new turns are refused; 0 refuses all; "
        "empty: the default (PLATFORM_MONTHLY_BUDGET_USD, none when unset).",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Principal(models.Model):
    """Someone or something acting inside a tenant: a person, a service, a bot.

    A principal may be linked to a Django user so that staff can work in the
    admin; API callers are principals through their tokens.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="principals")
    name = models.CharField(max_length=150, validators=[slug_validator])
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="principal",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant__slug", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="principal_unique_name_per_tenant")]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name}"


def hash_token(token: str) -> str:
    """The stored form of an API token. Tokens carry 256 random bits, so a fast
    hash is enough: there is nothing to brute-force."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do. ``read``: any GET (agents, sessions, streams, usage);
    ``sessions``: every route of an agent (start, follow up, approve, run tools, MCP, A2A);
    ``manage``: every route of the management API under ``/api/`` (tokens, agents,
    deployments, secrets, tenants)."""

    READ = "read", "Read"
    SESSIONS = "sessions", "Use agents"
    MANAGE = "manage", "Manage"


def all_scopes() -> list[str]:
    """Every scope: what a token gets when none are named (and what older tokens have)."""
    return [scope.value for scope in TokenScope]


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        """Neither revoked nor expired."""
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now())
        )


class ApiToken(models.Model):
    """A bearer token naming a principal. Only the token's hash is stored."""

    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True, help_text="What the token is for.")
    prefix = models.CharField(max_length=VISIBLE_PREFIX_LENGTH, db_index=True, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="After this the token is refused (401); empty: it never expires."
    )
    scopes = models.JSONField(
        default=all_scopes,
        help_text="What the token may do: any of 'read', 'sessions', 'manage' (every one by default).",
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.principal})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def clean(self) -> None:
        """Raises:
        ValidationError: when ``scopes`` is not a non-empty list of known scopes."""
        known = set(TokenScope.values)
        if not isinstance(self.scopes, list) or not self.scopes or not set(self.scopes) <= known:
            raise ValidationError({"scopes": f"A non-empty list of {', '.join(TokenScope.values)}."})

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return not self.is_revoked and not self.is_expired

    def allows(self, scopes: frozenset[str] | set[str]) -> bool:
        """Whether the token holds at least one of ``scopes``."""
        return not scopes.isdisjoint(self.scopes or ())

    @classmethod
    def issue(
        cls,
        principal: Principal,
        name: str = "",
        *,
        scopes: list[str] | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[ApiToken, str]:
        """Create a token for ``principal`` (every scope unless ``scopes`` names some;
        never expiring unless ``expires_at``); returns the row and the token itself,
        which is never stored and cannot be shown again."""
        row = cls(principal=principal, name=name, scopes=scopes or all_scopes(), expires_at=expires_at)
        token = row.assign_new_secret()
        row.save()
        return row, token

    def assign_new_secret(self) -> str:
        """Give this (unsaved) row a fresh secret; returns the token to hand out once."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.prefix = token[:VISIBLE_PREFIX_LENGTH]
        self.token_hash = hash_token(token)
        return token

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    def touch(self) -> None:
        """Record a use, at most once per ``LAST_USED_RESOLUTION``."""
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at >= LAST_USED_RESOLUTION:
            type(self).objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now
