"""The deployment life cycle with turns on a real worker process: a session running on the
old revision finishes on it while a new session uses the newly activated one, a replace
keeps the agent's kv, and a roll back sends new sessions to the older revision again. The
worker unpacks each revision from the revision store (the run's, shared) into its own VAR_DIR, and
serves a newly activated one without a restart."""

from __future__ import annotations

import pytest

from agent_platform.tests.factories import staff_user_for
from agents.tests.deploying import tar_gz

pytestmark = pytest.mark.django_db(transaction=True)


def results(events):
    return [e["data"]["output"] for e in events if e["type"] == "action.result"]


def test_running_sessions_finish_on_their_revision_and_new_ones_use_the_active(
    live, celery_worker_process, settings, tmp_path, alice, client_for
):
    settings.PLATFORM = {**settings.PLATFORM, "VAR_DIR": tmp_path / "var"}
    staff_user_for(alice)
    admin = client_for(alice)
    assert admin.post("/api/v1/agents", {"slug": "revs"}, format="json").status_code == 201

    def deploy(tree: str) -> str:
        uploaded = admin.generic(
            "POST", "/api/v1/agents/revs/deployments", tar_gz(tree), content_type="application/gzip"
        )
        assert uploaded.status_code == 201, uploaded.content
        revision = uploaded.json()["id"]
        assert admin.post(f"/api/v1/agents/revs/deployments/{revision}/activate").status_code == 200
        return revision

    v1 = deploy("v1")
    lab = live(alice, "revs")
    first = lab.start('/call remember {"key": "pet", "value": "cat"}')["sessionId"]
    assert results(lab.wait_for(first, "turn.completed")) == ["kept"]

    running = lab.start("/sleep 1\n/call version {}")["sessionId"]
    lab.wait_for(running, "turn.started")
    deploy("v2")  # while that turn sleeps on v1
    fresh = lab.start('/call version {}\n/call recall {"key": "pet"}')["sessionId"]
    assert results(lab.wait_for(fresh, "turn.completed")) == ["v2", "cat"]  # the replace kept kv
    assert results(lab.wait_for(running, "turn.completed")) == ["v1"]

    # The session keeps its revision for its later turns too.
    assert lab.follow_up(running, "/call version {}").status_code == 202
    assert results(lab.wait_for(running, "turn.completed", count=2)) == ["v1", "v1"]

    # Roll back: new sessions use v1 again.
    assert admin.post(f"/api/v1/agents/revs/deployments/{v1}/activate").status_code == 200
    after = lab.start("/call version {}")["sessionId"]
    assert results(lab.wait_for(after, "turn.completed")) == ["v1"]
