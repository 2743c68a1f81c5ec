"""``GET /api/v1/agents`` (a page at a time) and ``GET /api/v1/agents/:slug``: one agent's
health and diagnostics, as its health route and ``agent validate`` report them."""

from __future__ import annotations

import pytest

from agent_platform.tests.factories import staff_user_for
from agents.models import AgentSource
from agents.tests.deploying import TREES, deployed_agent
from sessions_app.tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_the_agent_list_pages_through_shared_and_own_agents_by_slug(alice, mallory, client_for):
    AgentFactory(slug="acme-private", tenant=alice.tenant, source=AgentSource.DEPLOYMENT)
    AgentFactory(slug="umbrella-private", tenant=mallory.tenant, source=AgentSource.DEPLOYMENT)
    client = client_for(alice)
    first = client.get("/api/v1/agents?limit=3").json()
    assert [agent["slug"] for agent in first["agents"]] == ["acme-private", "support", "triage"]
    assert first["previous"] is None and first["next"].startswith("http://testserver/api/v1/agents?")
    second = client.get(first["next"]).json()
    assert [agent["slug"] for agent in second["agents"]] == ["weather"]
    assert second["next"] is None
    back = client.get(second["previous"]).json()
    assert [agent["slug"] for agent in back["agents"]] == ["acme-private", "support", "triage"]


def test_an_agent_shows_its_health_model_and_tools(alice, client_for):
    response = client_for(alice).get("/api/v1/agents/weather")
    assert response.status_code == 200
    body = response.json()
    assert body["slug"] == "weather" and body["shared"] is True and body["source"] == "directory"
    assert body["ok"] is True and body["errors"] == 0 and body["diagnostics"] == []
    assert body["model"] == "test"
    assert "get_weather" in body["tools"]
    assert body["health"] == "http://testserver/weather/v1/health"


def test_an_agent_with_errors_is_200_with_its_diagnostics(alice, client_for, tmp_path, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    (tmp_path / "broken" / "agent").mkdir(parents=True)  # no instructions.md
    response = client_for(alice).get("/api/v1/agents/broken")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False and body["errors"] >= 1
    assert "agents.E007" in [d["code"] for d in body["diagnostics"]]
    assert {"severity", "code", "path", "message", "hint"} <= set(body["diagnostics"][0])
    assert client_for(alice).get("/broken/v1/health").status_code == 503  # the same finding


def test_a_missing_provider_key_is_a_warning(alice, client_for, settings):
    settings.PLATFORM = {
        **settings.PLATFORM,
        "DEFAULT_MODEL": "openai:gpt-4.1",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
    }
    body = client_for(alice).get("/api/v1/agents/weather").json()
    assert body["missingModelKeys"] == [{"model": "openai:gpt-4.1", "variable": "OPENAI_API_KEY"}]
    assert body["model"] == "openai:gpt-4.1" and body["warnings"] >= 1 and body["ok"] is True


def test_another_tenants_agent_is_404_and_an_unknown_one_too(alice, mallory, client_for):
    deployed_agent(alice.tenant, "acme-private", TREES / "v1")
    assert client_for(alice).get("/api/v1/agents/acme-private").status_code == 200
    refused = client_for(mallory).get("/api/v1/agents/acme-private")
    unknown = client_for(mallory).get("/api/v1/agents/acme-privatf")
    assert refused.status_code == unknown.status_code == 404
    # The same answer as for a slug nobody has: nothing tells the agent exists.
    assert refused.json()["message"].replace("acme-private", "acme-privatf") == unknown.json()["message"]


def test_an_agent_made_but_not_deployed_yet_is_200_saying_so(alice, mallory, client_for):
    staff_user_for(alice)
    staff = client_for(alice)
    assert staff.post("/api/v1/agents", {"slug": "coming-soon"}, format="json").status_code == 201
    assert "coming-soon" in {a["slug"] for a in staff.get("/api/v1/agents").json()["agents"]}

    body = staff.get("/api/v1/agents/coming-soon").json()
    assert (body["ok"], body["source"], body["model"], body["tools"], body["errors"]) == (
        False,
        AgentSource.DEPLOYMENT,
        None,
        [],
        1,
    )
    [problem] = body["diagnostics"]
    assert problem["code"] == "agents.E052" and "no active deployment" in problem["message"]
    # Its routes are not served yet, and another tenant still learns nothing of it.
    assert staff.get("/coming-soon/v1/info").status_code == 404
    refused = client_for(mallory).get("/api/v1/agents/coming-soon")
    unknown = client_for(mallory).get("/api/v1/agents/coming-sooo")
    assert refused.status_code == unknown.status_code == 404
    assert refused.json()["message"].replace("coming-soon", "coming-sooo") == unknown.json()["message"]
