"""``GET /<slug>/v1/artifacts`` and ``/v1/artifacts/:id/content``: the caller's own
artifacts, newest first; content always as an attachment; strangers get 403, unknown
or expired ids 404, malformed ids 400."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.registry import get_agent
from sessions_app.models import Artifact
from sessions_app.tests.factories import AgentFactory, SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def weather():
    return get_agent("weather")


def make_artifact(session, name="report.txt", **fields):
    content = fields.pop("content", b"hello")
    return Artifact.objects.create(
        session=session, kind="report", name=name, content=content, size=len(content), **fields
    )


def test_the_owner_lists_their_artifacts_newest_first(alice, client_for, weather):
    session = SessionFactory(principal=alice, agent=weather)
    earlier = timezone.now() - timedelta(minutes=5)
    older = make_artifact(session, "a.txt", created_at=earlier, updated_at=earlier)
    now = timezone.now()
    newer = make_artifact(session, "b.txt", metadata={"pages": 2}, created_at=now, updated_at=now)
    response = client_for(alice).get("/weather/v1/artifacts")
    assert response.status_code == 200
    records = response.json()["artifacts"]
    assert [r["id"] for r in records] == [newer.pk, older.pk]
    assert records[0] == {
        "id": newer.pk,
        "sessionId": session.pk,
        "turnId": None,
        "kind": "report",
        "name": "b.txt",
        "contentType": "application/octet-stream",
        "size": 5,
        "metadata": {"pages": 2},
        "createdAt": records[0]["createdAt"],
        "updatedAt": records[0]["createdAt"],
        "expiresAt": None,
    }


def test_the_list_filters_by_session_and_limit(alice, client_for, weather):
    first, second = SessionFactory(principal=alice, agent=weather), SessionFactory(principal=alice, agent=weather)
    mine = make_artifact(first)
    make_artifact(second)
    client = client_for(alice)
    assert [r["id"] for r in client.get(f"/weather/v1/artifacts?sessionId={first.pk}").json()["artifacts"]] == [mine.pk]
    assert len(client.get("/weather/v1/artifacts?limit=1").json()["artifacts"]) == 1


def test_the_list_shows_nobody_elses_and_no_other_agents_or_expired_artifacts(alice, bob, mallory, client_for, weather):
    make_artifact(SessionFactory(principal=bob, agent=weather), "bobs.txt")
    make_artifact(SessionFactory(principal=mallory, agent=weather), "mallorys.txt")
    make_artifact(SessionFactory(principal=alice, agent=AgentFactory()), "other-agent.txt")
    make_artifact(SessionFactory(principal=alice, agent=weather), "old.txt", expires_at=timezone.now() - timedelta(1))
    assert client_for(alice).get("/weather/v1/artifacts").json() == {"artifacts": []}


@pytest.mark.parametrize(("who", "status"), [("bob", 403), ("mallory", 403)])
def test_filtering_by_someone_elses_session_is_403(alice, bob, mallory, client_for, weather, who, status):
    session = SessionFactory(principal=alice, agent=weather)
    make_artifact(session)
    stranger = {"bob": bob, "mallory": mallory}[who]
    response = client_for(stranger).get(f"/weather/v1/artifacts?sessionId={session.pk}")
    assert response.status_code == status
    assert session.pk not in response.content.decode()


@pytest.mark.parametrize(
    "query", ["sessionId=nope", "sessionId=ses_x&sessionId=ses_y", "limit=-1", "limit=0", "kind=a&kind=b"]
)
def test_a_bad_filter_is_400(alice, client_for, weather, query):
    assert client_for(alice).get(f"/weather/v1/artifacts?{query}").status_code == 400


def test_an_unknown_session_filter_is_404(alice, client_for, weather):
    assert client_for(alice).get(f"/weather/v1/artifacts?sessionId=ses_{'a' * 26}").status_code == 404


def test_the_owner_downloads_the_content_as_an_attachment(alice, client_for, weather):
    artifact = make_artifact(
        SessionFactory(principal=alice, agent=weather),
        "report <1>.html",
        content=b"<script>x</script>",
        content_type="text/html",
    )
    response = client_for(alice).get(f"/weather/v1/artifacts/{artifact.pk}/content")
    assert response.status_code == 200
    assert response.content == b"<script>x</script>"
    assert response["Content-Type"] == "text/html"
    assert response["Content-Disposition"] == 'attachment; filename="report <1>.html"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


@pytest.mark.parametrize("who", ["bob", "mallory"])
def test_anyone_but_the_owner_gets_403_and_no_content(alice, bob, mallory, client_for, weather, who):
    artifact = make_artifact(SessionFactory(principal=alice, agent=weather), "secret.txt", content=b"secret")
    response = client_for({"bob": bob, "mallory": mallory}[who]).get(f"/weather/v1/artifacts/{artifact.pk}/content")
    assert response.status_code == 403
    assert b"secret" not in response.content


def test_unknown_expired_and_other_agents_artifacts_are_404(alice, client_for, weather):
    expired = make_artifact(SessionFactory(principal=alice, agent=weather), expires_at=timezone.now() - timedelta(1))
    elsewhere = make_artifact(SessionFactory(principal=alice, agent=AgentFactory()))
    client = client_for(alice)
    for artifact_id in (f"art_{'a' * 26}", expired.pk, elsewhere.pk):
        response = client.get(f"/weather/v1/artifacts/{artifact_id}/content")
        assert response.status_code == 404, artifact_id
        assert response.json()["error"] == "artifact_not_found"


def test_a_malformed_artifact_id_is_400(alice, client_for, weather):
    response = client_for(alice).get("/weather/v1/artifacts/art_UPPER/content")
    assert response.status_code == 400


def test_artifact_routes_need_a_token(weather):
    from rest_framework.test import APIClient

    assert APIClient().get("/weather/v1/artifacts").status_code == 401
    assert APIClient().get(f"/weather/v1/artifacts/art_{'a' * 26}/content").status_code == 401
