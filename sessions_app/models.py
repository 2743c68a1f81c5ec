"""Durable state of conversations: sessions, their event log, turns and what
turns produce or park (approvals, artifacts, reminders, stored data, eval runs).

Postgres is the source of truth. The broker and the channel layer only carry
triggers and "new event" signals; everything a reader needs is in these tables.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agent_platform.ids import new_id
from agent_platform.models import Principal, Tenant
from agent_platform.request_ids import current_request_id
from agents.events import TERMINAL_SESSION_EVENTS, event_record
from agents.models import Agent, Revision


class SessionMode(models.TextChoices):
    CHAT = "chat", "Chat (waits for follow-ups)"
    TASK = "task", "Task (ends after its turn)"


class SessionPurpose(models.TextChoices):
    LIVE = "live", "Live"
    EVAL = "eval", "Eval"


class SessionStatus(models.TextChoices):
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting for input"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


class Session(models.Model):
    """One conversation of a principal with an agent.

    ``next_event_index`` is the event-log counter: appenders take their indexes
    from it inside the insert transaction (``sessions_app.eventlog``).
    """

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "ses"), editable=False)
    # Kept on the row (it is the principal's tenant) so that every tenant-scoped
    # query and the admin filter on one indexed column.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="sessions")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="sessions")
    # A deployed agent's revision the session started on: its turns run on it to the end,
    # whatever is activated meanwhile (null for a shared agent).
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    principal = models.ForeignKey(Principal, on_delete=models.PROTECT, related_name="sessions")
    channel = models.CharField(max_length=100, default="http")
    mode = models.CharField(max_length=10, choices=SessionMode.choices, default=SessionMode.CHAT)
    purpose = models.CharField(max_length=10, choices=SessionPurpose.choices, default=SessionPurpose.LIVE)
    status = models.CharField(max_length=10, choices=SessionStatus.choices, default=SessionStatus.RUNNING)
    title = models.CharField(max_length=200, blank=True)
    continuation_key = models.CharField(
        max_length=300, blank=True, help_text="The channel's key for this conversation, e.g. a Slack thread."
    )
    continuation_token = models.CharField(
        max_length=80, unique=True, null=True, blank=True, help_text="Current HTTP continuation token."
    )
    dry_run = models.BooleanField(default=False)
    # A fork's origin (POST .../fork): a plain id, not a key, so retention may remove the
    # original without touching its forks.
    forked_from = models.CharField(max_length=40, blank=True, editable=False)
    forked_at_index = models.PositiveIntegerField(null=True, blank=True, editable=False)
    next_event_index = models.PositiveIntegerField(default=0, editable=False)
    # The last event index handed to the channel's and the hooks' handlers (-1: none yet).
    dispatched_index = models.IntegerField(default=-1, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["principal", "agent", "-created_at"], name="session_by_owner"),
            models.Index(fields=["tenant", "-created_at"], name="session_by_tenant"),
            # Retention's scan: sessions with no turn to run, by their last activity.
            models.Index(
                fields=["agent", "updated_at"],
                condition=Q(status__in=["waiting", "completed", "failed"]),
                name="session_settled_by_activity",
            ),
            # The sweep's scan for sessions left running by a lost settle (few rows).
            models.Index(fields=["updated_at"], condition=Q(status="running"), name="session_running_by_activity"),
        ]
        constraints = [
            models.UniqueConstraint(
                # Per principal: the same Slack thread or PR key seen by two tenants
                # of a shared agent names two conversations.
                fields=["agent", "principal", "channel", "continuation_key"],
                condition=~Q(continuation_key=""),
                name="session_unique_continuation_key",
            ),
        ]

    def __str__(self) -> str:
        return self.id

    def save(self, *args: Any, **kwargs: Any) -> None:
        update_fields = kwargs.get("update_fields")
        # A save of other fields (status, token) cannot change the pairing: no need to load the principal.
        if update_fields is None or {"tenant", "tenant_id", "principal", "principal_id"} & set(update_fields):
            if self.tenant_id is None:
                self.tenant_id = self.principal.tenant_id
            elif self.tenant_id != self.principal.tenant_id:
                raise ValueError(f"session {self.id!r}: tenant differs from its principal's tenant")
        super().save(*args, **kwargs)


class Event(models.Model):
    """One record of a session's log: ``{type, index, sessionId, turnId?, at, data}``.

    Events are never changed once written; ``index`` runs 0, 1, 2, ... per session.
    """

    # No database constraint: Postgres would check the session row (a `SELECT ... FOR KEY
    # SHARE`) for every event inserted, a fifth of a turn's statements. append_events inserts
    # nothing for a session that does not exist, and sessions are deleted after their events
    # (retention; Django's cascade runs in Python), so no event is left without its session.
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="events", db_index=False, db_constraint=False
    )
    index = models.PositiveIntegerField()
    type = models.CharField(max_length=64)
    # No database constraint: its check would scan the whole event table for every turn
    # deleted (there is no index on turn_id, and the append path is better without one).
    # A turn is deleted only with its session, whose events go first (retention, admin).
    turn = models.ForeignKey(
        "Turn", on_delete=models.CASCADE, null=True, blank=True, db_index=False, db_constraint=False
    )
    at = models.DateTimeField(default=timezone.now)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["session", "index"]
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="event_unique_index_per_session"),
        ]
        indexes = [
            # Where a session's log ended, if it did (a stream from past it has nothing to
            # wait for): found at once however long the log, and small (a row per ended session).
            models.Index(
                fields=["session", "index"],
                condition=Q(type__in=sorted(str(end) for end in TERMINAL_SESSION_EVENTS)),
                name="event_session_end",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.index} {self.type}"

    def as_record(self) -> dict[str, Any]:
        """The event as clients see it on the stream (DESIGN.md §5)."""
        return event_record(self.type, self.index, self.session_id, self.turn_id, self.at, self.data)


class TurnStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PARKED = "parked", "Waiting for approval"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


# A turn not yet ended: what the scheduler waits on and the running-turns quota counts.
ACTIVE_TURNS = (TurnStatus.QUEUED, TurnStatus.RUNNING, TurnStatus.PARKED)


class Admission(models.TextChoices):
    """What a message sent to a busy session does (DESIGN.md §5)."""

    PREEMPT = "preempt", "Interrupt the running turn"
    COALESCE = "coalesce", "Queue; queued messages make one turn"
    ENQUEUE = "enqueue", "Queue; each message its own turn"
    REJECT = "reject", "Refuse while busy"


class Turn(models.Model):
    """One model run over a session. A Celery task claims it by a conditional
    update on ``status`` and ``lease_until``, so a duplicate delivery is a no-op."""

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "turn"), editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    message = models.TextField(blank=True, help_text="The user input this turn answers.")
    admission = models.CharField(max_length=10, choices=Admission.choices, default=Admission.PREEMPT)
    status = models.CharField(max_length=10, choices=TurnStatus.choices, default=TurnStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True, help_text="Token counts by kind.")
    cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True, help_text="USD")
    failure_message = models.TextField(blank=True)
    # Files sent with the message, written into the workspace before the turn runs.
    attachments = models.JSONField(default=dict, blank=True)
    # Set by stop or a preempting message; the worker running the turn polls it.
    cancel_requested = models.BooleanField(default=False)
    # A parked turn's state (conversation, pending calls), enough to resume it anywhere.
    parked_state = models.JSONField(null=True, blank=True)
    # The messages this turn added to the conversation; the history of the next turn.
    conversation = models.JSONField(default=list, blank=True)
    # The X-Request-ID of the request that created the turn; its worker logs under it.
    request_id = models.CharField(max_length=100, blank=True, default=current_request_id)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session", "status"], name="turn_by_session_status"),
            models.Index(fields=["status", "lease_until"], name="turn_by_status_lease"),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"


class Approval(models.Model):
    """A tool call parked until a person decides. The decision is bound to the
    exact arguments through ``args_sha256`` and taken once (conditional update)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="approvals")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="approvals")
    call_id = models.CharField(max_length=100, unique=True)
    tool_name = models.CharField(max_length=200)
    args = models.JSONField(default=dict, blank=True)
    args_sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(Principal, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    requested_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]
        indexes = [models.Index(fields=["session", "status"], name="approval_by_session_status")]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.call_id})"


class Artifact(models.Model):
    """A file an agent tagged for people to keep (a report, a patch, a digest):
    ``ctx.artifacts.tag`` and the ``tag_artifact`` tool (``sessions_app.records.artifacts``).
    One per ``(session, kind, name)``: tagging it again updates it in place. Content up to
    ``PLATFORM["ARTIFACT_INLINE_BYTES"]`` is kept here; larger content in the files store
    (a ``StoredFile`` of scope ``artifact``)."""

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "art"), editable=False)
    # Whose it is, kept on the row: an artifact outlives its session (retention removes
    # ended sessions; artifacts follow their own retention), and stays its owner's.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    principal = models.ForeignKey(Principal, on_delete=models.PROTECT, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts")
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts")
    kind = models.CharField(max_length=100)
    name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=200, default="application/octet-stream")
    size = models.PositiveBigIntegerField(default=0)
    has_content = models.BooleanField(default=True, help_text="False for a tag without content.")
    content = models.BinaryField(blank=True, default=b"", help_text="Empty when the content is in the files store.")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Removed by the retention task after this.")

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.UniqueConstraint(fields=["session", "kind", "name"], name="artifact_one_per_name")]
        indexes = [
            models.Index(fields=["session", "-updated_at"], name="artifact_by_session"),
            models.Index(fields=["agent", "principal", "-updated_at"], name="artifact_by_owner"),
            models.Index(fields=["expires_at"], name="artifact_by_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The owner is the session's, copied when the artifact is made.
        if self.session is not None and self.principal_id is None:
            self.tenant_id, self.agent_id = self.session.tenant_id, self.session.agent_id
            self.principal_id = self.session.principal_id
        super().save(*args, **kwargs)


class ABAssignment(models.Model):
    """The arm of an A/B experiment a session was assigned to (sticky)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="ab_assignments")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    experiment = models.CharField(max_length=200)
    arm = models.CharField(max_length=100)
    assigned_at = models.DateTimeField(default=timezone.now)
    # What the experiment's metrics(sample) returned after the session's latest settled
    # turn: {metric: number}; empty until a sample is kept.
    metrics = models.JSONField(default=dict, blank=True)
    sampled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-assigned_at"]
        verbose_name = "A/B assignment"
        constraints = [
            models.UniqueConstraint(fields=["session", "experiment"], name="ab_one_arm_per_experiment"),
        ]
        indexes = [models.Index(fields=["agent", "experiment", "arm"], name="ab_by_experiment_arm")]

    def __str__(self) -> str:
        return f"{self.experiment}={self.arm}"


class ReminderStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    FIRED = "fired", "Fired"
    CANCELLED = "cancelled", "Cancelled"
    DROPPED = "dropped", "Dropped (the session takes no follow-up)"


class Reminder(models.Model):
    """``ctx.host.reminders``: a one-shot message delivered to its session at ``fire_at``
    as a follow-up (``sessions_app.triggers.reminders``); ``turn`` is the turn it joined."""

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "rem"), editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="reminders")
    message = models.TextField()
    fire_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=ReminderStatus.choices, default=ReminderStatus.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    fired_at = models.DateTimeField(null=True, blank=True)
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["fire_at"]
        indexes = [models.Index(fields=["status", "fire_at"], name="reminder_due")]

    def __str__(self) -> str:
        return f"{self.id} at {self.fire_at:%Y-%m-%d %H:%M}"

    def as_record(self) -> dict[str, Any]:
        """The record authored code and the dev routes see (ISO times)."""
        return {
            "id": self.pk,
            "sessionId": self.session_id,
            "message": self.message,
            "at": self.fire_at.isoformat(),
            "status": self.status,
            "createdAt": self.created_at.isoformat(),
            "firedAt": self.fired_at.isoformat() if self.fired_at else None,
        }


class KVEntry(models.Model):
    """``ctx.host.kv``: a JSON value per key, per agent, inside one tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=500)
    value = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent", "key"]
        verbose_name = "KV entry"
        verbose_name_plural = "KV entries"
        constraints = [models.UniqueConstraint(fields=["tenant", "agent", "key"], name="kv_unique_key")]

    def __str__(self) -> str:
        return self.key


class FileScope(models.TextChoices):
    SESSION = "session", "Session"
    DEPLOYMENT = "deployment", "Deployment (agent-wide)"
    ARTIFACT = "artifact", "Artifact content (beyond the inline cap)"


class StoredFile(models.Model):
    """``ctx.host.files``: a file in session or deployment scope. Writers pass the
    ``etag`` they read to replace it only if nobody changed it since."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True, related_name="files")
    # Scope "artifact": the content of this artifact, removed with it; never seen by ctx.host.files.
    artifact = models.OneToOneField(
        Artifact, on_delete=models.CASCADE, null=True, blank=True, related_name="stored_content"
    )
    scope = models.CharField(max_length=12, choices=FileScope.choices, default=FileScope.SESSION)
    path = models.CharField(max_length=1000)
    content = models.BinaryField()
    content_type = models.CharField(max_length=200, default="application/octet-stream")
    size = models.PositiveBigIntegerField(default=0)
    etag = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope=FileScope.SESSION, session__isnull=False, artifact__isnull=True)
                | Q(scope=FileScope.DEPLOYMENT, session__isnull=True, artifact__isnull=True)
                | Q(scope=FileScope.ARTIFACT, session__isnull=True, artifact__isnull=False),
                name="file_scope_matches_session",
            ),
            models.UniqueConstraint(
                fields=["tenant", "agent", "session", "path"],
                condition=Q(session__isnull=False),
                name="file_unique_path_in_session",
            ),
            models.UniqueConstraint(
                fields=["tenant", "agent", "path"],
                condition=Q(scope=FileScope.DEPLOYMENT),
                name="file_unique_path_in_deployment",
            ),
        ]

    def __str__(self) -> str:
        return self.path


class EvalRunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class EvalRun(models.Model):
    """One run of an agent's eval cases; at most one active per agent and tenant."""

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "evr"), editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="eval_runs")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="eval_runs")
    principal = models.ForeignKey(Principal, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=10, choices=EvalRunStatus.choices, default=EvalRunStatus.QUEUED)
    options = models.JSONField(default=dict, blank=True, help_text="Case filter, tags, concurrency.")
    results = models.JSONField(default=list, blank=True, help_text="One entry per case.")
    summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # The worker running the batch renews this; past it, the sweep resumes or fails the run.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent"],
                condition=Q(status__in=["queued", "running"]),
                name="eval_one_active_run",
            ),
        ]

    def __str__(self) -> str:
        return self.id


class IdempotencyRecord(models.Model):
    """The first response to a request sent with an ``Idempotency-Key``; a retry gets it again."""

    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64, help_text="Route and body the key was first used with.")
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "key"], name="idempotency_unique_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_by_age")]

    def __str__(self) -> str:
        return self.key


class LogLine(models.Model):
    """A recent server log line, readable through ``/v1/logs?after=N`` (N = id)."""

    at = models.DateTimeField(default=timezone.now)
    level = models.CharField(max_length=10)
    logger = models.CharField(max_length=200)
    message = models.TextField()
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    agent_slug = models.CharField(max_length=100, blank=True)
    session_id = models.CharField(max_length=40, blank=True)
    request_id = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["agent_slug", "id"], name="logline_by_agent")]

    def __str__(self) -> str:
        return f"{self.level} {self.logger}: {self.message[:80]}"


class ChannelState(models.Model):
    """``channel.state`` of a session's channel handlers (DESIGN §9.2): one JSON dict per
    (session, channel), saved after each handler."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="channel_states")
    channel = models.CharField(max_length=100)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "channel"], name="channel_state_unique")]

    def __str__(self) -> str:
        return f"{self.channel} state of {self.session_id}"


class InboundDelivery(models.Model):
    """A webhook delivery a pack has taken in (Slack ``event_id``, GitHub ``hook id:delivery
    id``): the UNIQUE row that makes a retried or replayed delivery a no-op."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=20, help_text="The pack: slack, github.")
    delivery_id = models.CharField(max_length=200)
    received_at = models.DateTimeField(default=timezone.now)
    session = models.ForeignKey(Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        verbose_name_plural = "inbound deliveries"
        constraints = [
            models.UniqueConstraint(fields=["agent", "source", "delivery_id"], name="inbound_delivery_once"),
        ]
        indexes = [models.Index(fields=["received_at"], name="inbound_delivery_by_age")]

    def __str__(self) -> str:
        return f"{self.source} {self.delivery_id}"


class ScheduleFireStatus(models.TextChoices):
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed (the handler raised)"
    MISSED = "missed", "Missed (beat was down; skipped)"


class ScheduleFire(models.Model):
    """One fire of an agent's schedule: the UNIQUE row claimed before any session is made,
    so each ``(agent, schedule_id, scheduled_for)`` runs at most once whatever the number
    of beat processes. Runs from ``agent dispatch`` or the dev route are ``manual``."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    schedule_id = models.CharField(max_length=200)
    scheduled_for = models.DateTimeField()
    manual = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=ScheduleFireStatus.choices, default=ScheduleFireStatus.RUNNING)
    session_ids = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "schedule_id", "scheduled_for"], name="schedule_fire_once"),
        ]
        indexes = [models.Index(fields=["created_at"], name="schedule_fire_by_age")]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.scheduled_for:%Y-%m-%d %H:%M}"


class WebhookSubscription(models.Model):
    """A tenant's outbound webhook: its sessions' events of ``events`` types (or ``"*"``)
    POSTed to ``url``; ``agent`` empty means every agent the tenant's sessions run on."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_subscriptions")
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="+", help_text="Empty: every agent."
    )
    url = models.CharField(max_length=1000)
    events = models.JSONField(default=list, help_text='Event types, e.g. ["turn.completed"], or ["*"] for all.')
    secret_name = models.CharField(
        max_length=200, blank=True, help_text="The name of the secret that signs the body (X-Agent-Signature)."
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["tenant", "active"], name="webhook_subscription_by_tenant")]

    def __str__(self) -> str:
        return f"{self.url} ({', '.join(map(str, self.events or []))})"

    def clean(self) -> None:
        """The admin's checks: a list of event types, and a URL the outbound policy accepts."""
        from agents.config import outbound_policy
        from agents.runtime.outbound import OutboundRefused

        errors: dict[str, str] = {}
        events = self.events
        if not isinstance(events, list) or not events or not all(isinstance(e, str) and e for e in events):
            errors["events"] = 'A non-empty list of event types, e.g. ["turn.completed"], or ["*"].'
        try:
            outbound_policy().check_url(self.url)
        except OutboundRefused as refused:
            errors["url"] = f"The outbound policy refuses this URL: {refused}"
        if errors:
            raise ValidationError(errors)


class WebhookDeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event of a session to one webhook target, and its attempts so far.

    ``target`` names the webhook (``subscription:<id>`` or ``agent:<url>``); UNIQUE
    (target, session, event index) makes enqueueing an event twice a no-op. ``payload``
    is the body as sent (the event record plus ``"agent"``).
    """

    id = models.CharField(primary_key=True, max_length=40, default=partial(new_id, "whd"), editable=False)
    target = models.CharField(max_length=1100)
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )
    url = models.CharField(max_length=1000)
    secret_name = models.CharField(max_length=200, blank=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="webhook_deliveries")
    event_index = models.IntegerField()
    event_type = models.CharField(max_length=100)
    payload = models.JSONField()
    status = models.CharField(
        max_length=10, choices=WebhookDeliveryStatus.choices, default=WebhookDeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["target", "session", "event_index"], name="webhook_delivery_once"),
        ]
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"), name="webhook_delivery_due"),
            models.Index(fields=["created_at"], name="webhook_delivery_by_age"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} #{self.event_index} of {self.session_id} to {self.url}"
