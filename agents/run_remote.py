"""``agent run --url``: one turn on a remote platform through the Python client
(``agent_platform_client``, clients/python), its events handed over as they stream."""

from __future__ import annotations

from typing import Any

import httpx
from agent_platform_client import Client as PlatformClient
from agent_platform_client import ClientError, Decision
from django.core.management.base import CommandError

from agents.local_run import OnRecord


def run(
    url: str,
    token: str | None,
    slug: str,
    message: str,
    *,
    session_id: str | None,
    approve: bool | None,
    dry_run: bool,
    show: OnRecord,
) -> tuple[list[dict[str, Any]], str, str | None]:
    """The turn's event records, its status (``completed``, ``failed``, ``parked``) and
    its failure; every call waiting for approval is approved or denied when ``approve``
    is set, and the turn followed on.

    Raises:
        CommandError: the server refused (its status and message) or cannot be reached (code 2).
    """
    options: dict[str, Any] = {} if session_id else {"dry_run": dry_run or None}
    try:
        with PlatformClient(url, token) as client:
            turn = client.run(slug, message, session_id=session_id, on_event=lambda e: show(e.as_record()), **options)
            while turn.status == "parked" and approve is not None:
                for call in turn.pending_approvals:
                    decision: Decision = "approve" if approve else "deny"
                    client.decide(slug, turn.session_id, call["callId"], decision, "decided on the command line")
                turn = client.wait_turn(slug, turn, on_event=lambda e: show(e.as_record()))
    except (ClientError, httpx.HTTPError) as error:
        raise CommandError(f"{url}: {error}", returncode=2) from error
    return [event.as_record() for event in turn.events], turn.status, turn.failure
