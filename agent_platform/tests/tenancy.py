"""Alice's data (tenant acme) for tenancy tests: one of everything a route can address,
each carrying a marker string that must never appear in another tenant's responses."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from agent_platform.models import ApiToken, Principal
from agents.models import Agent
from agents.registry import get_agent, surface_for
from agents.secrets import set_secret
from agents.tests.deploying import deployed_agent
from sessions_app import approvals, services
from sessions_app.models import (
    Approval,
    Artifact,
    EvalRun,
    EvalRunStatus,
    KVEntry,
    LogLine,
    Session,
    StoredFile,
    Turn,
)


@dataclass
class Seeded:
    """What a tenancy test addresses, and the strings that would show a leak."""

    session: Session
    turn: Turn
    approval: Approval
    artifact: Artifact
    private_agent: Agent
    token_prefix: str
    eval_run_id: str = ""
    secret_name: str = ""
    markers: list[str] = field(default_factory=list)

    def leaked(self, body: bytes | str, sent: str = "") -> list[str]:
        """Markers in ``body`` that the request (``sent``: its URL and body) did not carry itself."""
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        return [marker for marker in self.markers if marker in text and marker not in sent]


def seed(owner: Principal) -> Seeded:
    """A chat session on the shared ``weather`` agent with a parked call, an artifact, kv
    and files, a private agent deployed by the owner's tenant, and a token."""
    secret = secrets.token_hex(4)
    weather = get_agent("weather")
    assert weather is not None
    session, turn = services.start_session(
        weather, surface_for(weather), owner, message=f"message-{secret}", title=f"title-{secret}"
    )
    session.refresh_from_db()
    approval = Approval.objects.create(
        session=session,
        turn=turn,
        call_id=f"call_{secret}",
        tool_name="get_weather",
        args={"city": f"city-{secret}"},
        args_sha256=approvals.args_digest({"city": f"city-{secret}"}),
    )
    artifact = Artifact.objects.create(
        session=session,
        turn=turn,
        kind="report",
        name=f"report-{secret}.txt",
        content_type="text/plain",
        content=f"content-{secret}".encode(),
        size=len(f"content-{secret}"),
        expires_at=timezone.now() + timedelta(days=1),
    )
    private = deployed_agent(owner.tenant, f"private-{secret}", Path(weather.path))
    KVEntry.objects.create(tenant=owner.tenant, agent=weather, key=f"key-{secret}", value={"v": f"kv-{secret}"})
    StoredFile.objects.create(
        tenant=owner.tenant,
        agent=weather,
        session=session,
        path=f"/notes-{secret}.md",
        content=f"file-{secret}".encode(),
        etag="e1",
    )
    LogLine.objects.create(
        level="INFO", logger="agents.test", message=f"log-{secret}", tenant=owner.tenant, agent_slug="weather"
    )
    row, _ = ApiToken.issue(owner, f"token-{secret}")
    agent_secret, _ = set_secret(private, f"SEEDED_{secret.upper()}", f"secret-value-{secret}")
    eval_run = EvalRun.objects.create(
        tenant=owner.tenant,
        agent=weather,
        principal=owner,
        status=EvalRunStatus.COMPLETED,
        results=[{"id": "smoke/echo", "status": "failed", "error": f"evalrun-{secret}", "assertions": []}],
    )
    return Seeded(
        session=session,
        turn=turn,
        approval=approval,
        artifact=artifact,
        private_agent=private,
        token_prefix=row.prefix,
        eval_run_id=eval_run.pk,
        secret_name=agent_secret.name,
        markers=[
            f"secret-value-{secret}",
            eval_run.pk,
            f"evalrun-{secret}",
            session.pk,
            session.continuation_token or session.pk,
            turn.pk,
            artifact.pk,
            approval.call_id,
            private.slug,
            row.prefix,
            session.title,
            f"message-{secret}",
            artifact.name,
            f"content-{secret}",
            f"city-{secret}",
            f"key-{secret}",
            f"kv-{secret}",
            f"notes-{secret}",
            f"file-{secret}",
            f"token-{secret}",
            f"log-{secret}",
        ],
    )
