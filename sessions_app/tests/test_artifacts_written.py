"""Artifacts agents write (DESIGN.md §9.5), end to end on a real worker: from a tool, the
``tag_artifact`` model tool, ``commit`` and a hook; ``artifact.tagged`` events; update in
place by (session, kind, name); an unknown kind or a path outside the workspace is an
``isError`` result and the turn goes on; content past the inline cap kept in the files
store; the list's filters and order; another tenant refused; retention by the beat task;
artifacts outliving their session; the triage example's digest kept by its commit."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from io import StringIO

from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from agents.registry import get_agent
from sessions_app.models import Artifact, FileScope, Session, StoredFile
from sessions_app.tasks import prune_artifacts
from sessions_app.tests.live import assert_gapless, types
from sessions_app.triggers.principals import service_principal

BIG = 300_000  # past the default inline cap (256 KiB): kept in the files store


def _call(tool: str, **arguments: object) -> str:
    return f"/call {tool} {json.dumps(arguments)}"


def _tagged(events: list[dict]) -> list[dict]:
    return [event for event in events if event["type"] == "artifact.tagged"]


def _wait_tagged(client, session_id: str, count: int) -> list[dict]:
    """The log once ``count`` artifact.tagged are in it (the hook's come after the turn)."""
    return client.wait_for(session_id, "artifact.tagged", count)


def test_agents_tag_artifacts_people_list_and_download_them_and_retention_removes_expired_ones(
    live, alice, mallory, client_for
):
    client = live(alice, "archivist")
    message = "\n".join(
        [
            _call("write_report", title="q1", body="first"),
            _call("tag_artifact", kind="bogus", name="x.txt", content="y"),
            _call("tag_artifact", kind="note", name="seed.md", path="notes/seed.md"),
            _call("tag_artifact", kind="note", name="secret", path="../../../../etc/passwd"),
            _call("write_report", title="big", body="z", repeat=BIG),
        ]
    )
    started = client.start(message, workspaceFiles={"notes/seed.md": "# Seed\n"})
    session_id = started["sessionId"]
    # write_report x2, tag_artifact seed.md, commit's answer.md, the hook's last-reply.txt
    events = _wait_tagged(client, session_id, 5)
    assert "turn.completed" in types(events) and "turn.failed" not in types(events)
    results = {e["data"]["callId"]: e["data"] for e in events if e["type"] == "action.result"}
    calls = [c for e in events if e["type"] == "actions.requested" for c in e["data"]["calls"]]
    bogus, seed, outside = (results[c["callId"]] for c in calls[1:4])
    assert bogus["isError"] and "unknown artifact kind 'bogus'" in bogus["output"]["error"]
    assert "note, report" in bogus["output"]["error"]  # the model is told the kinds
    assert not seed["isError"] and seed["output"]["name"] == "seed.md"
    assert outside["isError"] and "no file" in outside["output"]["error"]
    tagged = {e["data"]["name"]: e for e in _tagged(events)}
    assert set(tagged) == {"q1.md", "big.md", "seed.md", "answer.md", "last-reply.txt"}
    assert tagged["q1.md"]["data"] == {
        "artifactId": results[calls[0]["callId"]]["output"],
        "kind": "report",
        "name": "q1.md",
        "contentType": "text/markdown",
        "size": 5,
    }
    assert tagged["big.md"]["data"]["size"] == BIG
    turn_id = started["turnId"]
    assert all(e["turnId"] == turn_id for e in tagged.values())  # the hook's too: its event's turn

    http = client_for(alice)
    listed = http.get("/archivist/v1/artifacts").json()["artifacts"]
    assert len(listed) == 5
    updated = [datetime.fromisoformat(a["updatedAt"]) for a in listed]
    assert updated == sorted(updated, reverse=True)  # the most recently updated first
    by_name = {a["name"]: a for a in listed}
    q1 = by_name["q1.md"]
    assert q1["kind"] == "report" and q1["sessionId"] == session_id and q1["turnId"] == turn_id
    assert q1["metadata"] == {"title": "q1"} and q1["expiresAt"] is None  # reports are kept
    assert by_name["seed.md"]["contentType"] == "text/markdown" and by_name["seed.md"]["expiresAt"] is not None
    assert http.get(f"/archivist/v1/artifacts/{by_name['seed.md']['id']}/content").content == b"# Seed\n"
    assert http.get(f"/archivist/v1/artifacts/{by_name['answer.md']['id']}/content").content.startswith(b"done:")
    reports = http.get("/archivist/v1/artifacts?kind=report&limit=2").json()["artifacts"]
    assert len(reports) == 2 and {a["kind"] for a in reports} == {"report"}
    assert http.get(f"/archivist/v1/artifacts?sessionId={session_id}&kind=nope").json() == {"artifacts": []}
    # Past the inline cap: the row holds nothing, the files store holds the bytes, downloads are whole.
    big = Artifact.objects.get(pk=by_name["big.md"]["id"])
    assert bytes(big.content) == b"" and StoredFile.objects.get(artifact=big).scope == FileScope.ARTIFACT
    assert http.get(f"/archivist/v1/artifacts/{big.pk}/content").content == b"z" * BIG

    # Another tenant: nothing listed, the content refused with no detail.
    stranger = client_for(mallory)
    assert stranger.get("/archivist/v1/artifacts").json() == {"artifacts": []}
    refused = stranger.get(f"/archivist/v1/artifacts/{q1['id']}/content")
    assert refused.status_code == 403 and b"first" not in refused.content

    # Tagging the same (kind, name) again updates it in place, from the tool and the hook alike.
    time.sleep(0.01)
    assert client.follow_up(session_id, _call("write_report", title="q1", body="second!")).status_code == 202
    events = _wait_tagged(client, session_id, 8)  # write_report, answer.md, last-reply.txt again
    assert_gapless(events)
    again = {a["name"]: a for a in http.get("/archivist/v1/artifacts").json()["artifacts"]}
    assert len(again) == 5
    assert again["q1.md"]["id"] == q1["id"] and again["q1.md"]["createdAt"] == q1["createdAt"]
    moved = datetime.fromisoformat(again["q1.md"]["updatedAt"]) > datetime.fromisoformat(q1["updatedAt"])
    assert moved and again["q1.md"]["size"] == 7
    assert again["last-reply.txt"]["id"] == by_name["last-reply.txt"]["id"]
    assert http.get(f"/archivist/v1/artifacts/{q1['id']}/content").content == b"second!"

    # Retention: beat runs the task; a note past its day goes (with its content), a fresh one
    # and the kept reports stay.
    assert settings.CELERY_BEAT_SCHEDULE["prune-artifacts"]["task"] == prune_artifacts.name
    Artifact.objects.filter(pk=by_name["seed.md"]["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert prune_artifacts() == 1
    left = {a["name"] for a in http.get("/archivist/v1/artifacts").json()["artifacts"]}
    assert left == {"q1.md", "big.md", "answer.md", "last-reply.txt"}
    assert http.get(f"/archivist/v1/artifacts/{by_name['seed.md']['id']}/content").status_code == 404
    Artifact.objects.filter(pk=big.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert prune_artifacts() == 1 and not StoredFile.objects.filter(scope=FileScope.ARTIFACT).exists()

    # Artifacts outlive their session (session retention removes ended sessions), still the owner's.
    Session.objects.filter(pk=session_id).delete()
    kept = http.get("/archivist/v1/artifacts").json()["artifacts"]
    assert {a["name"] for a in kept} == {"q1.md", "answer.md", "last-reply.txt"}
    assert {a["sessionId"] for a in kept} == {None}
    assert http.get(f"/archivist/v1/artifacts/{q1['id']}/content").content == b"second!"
    assert stranger.get(f"/archivist/v1/artifacts/{q1['id']}/content").status_code == 403

    # The triage example's morning digest is kept by its commit (a scheduled run whose answer
    # carries the digest heading; the test model echoes the message back).
    digest = "Morning.\n# Triage digest\n#12 Login fails (auth): high, assigned\nSeverity: high"
    out = StringIO()
    call_command("agent", "dispatch", "triage", "--message", digest, "--wait", "--json", stdout=out)
    [digest_session] = json.loads(out.getvalue())["sessionIds"]
    triage = get_agent("triage")
    owner = client_for(service_principal(triage, "schedule"))
    [kept_digest] = owner.get("/triage/v1/artifacts?kind=digest").json()["artifacts"]
    assert kept_digest["sessionId"] == digest_session and kept_digest["name"].startswith("digest-")
    assert kept_digest["metadata"] == {"severity": "high"} and kept_digest["expiresAt"] is not None
    content = owner.get(f"/triage/v1/artifacts/{kept_digest['id']}/content").content
    assert b"# Triage digest" in content
