from __future__ import annotations

import shutil

import pytest
from rest_framework.test import APIClient

from agents.registry import RESERVED_SEGMENTS, agent_folders

pytestmark = pytest.mark.django_db

EXAMPLES = ["support", "triage", "weather"]


def test_the_examples_folder_holds_the_example_agents():
    assert list(agent_folders()) == EXAMPLES


@pytest.mark.parametrize("slug", EXAMPLES)
def test_each_example_agent_answers_health_without_a_token(slug):
    response = APIClient().get(f"/{slug}/v1/health")
    assert response.status_code == 200
    assert response.json() == {"ok": True, "agent": slug, "source": "directory", "diagnostics": []}


def test_an_unknown_agent_is_a_json_404():
    response = APIClient().get("/no-such-agent/v1/health")
    assert response.status_code == 404
    assert response.json()["error"] == "agent_not_found"


def test_an_unknown_route_under_an_agent_is_a_json_404():
    response = APIClient().get("/weather/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_an_agent_folder_added_while_serving_is_served(tmp_path, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    assert APIClient().get("/fresh/v1/health").status_code == 404
    (tmp_path / "fresh" / "agent").mkdir(parents=True)
    (tmp_path / "fresh" / "agent" / "instructions.md").write_text("Be brief.")
    assert APIClient().get("/fresh/v1/health").status_code == 200


def test_a_removed_agent_folder_stops_being_served(tmp_path, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    (tmp_path / "brief" / "agent").mkdir(parents=True)
    (tmp_path / "brief" / "agent" / "instructions.md").write_text("Be brief.")
    assert APIClient().get("/brief/v1/health").status_code == 200
    shutil.rmtree(tmp_path / "brief" / "agent")
    assert APIClient().get("/brief/v1/health").status_code == 404


@pytest.mark.parametrize("name", [*sorted(RESERVED_SEGMENTS), "-dash-first", "has space", "no_agent_tree"])
def test_folders_with_a_reserved_or_invalid_slug_or_no_agent_tree_are_not_agents(tmp_path, settings, name):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    folder = tmp_path / name
    (folder if name == "no_agent_tree" else folder / "agent").mkdir(parents=True)
    assert agent_folders() == {}


def test_the_index_page_lists_the_agents():
    response = APIClient().get("/")
    assert response.status_code == 200
    for slug in EXAMPLES:
        assert f"/{slug}/v1/health" in response.content.decode()


def test_healthz_reports_the_database_reachable():
    assert APIClient().get("/healthz").json() == {"ok": True}


def test_the_agent_list_api_shows_shared_and_own_agents_only(alice, mallory, client_for):
    from agents.models import AgentSource
    from sessions_app.tests.factories import AgentFactory

    AgentFactory(slug="acme-private", tenant=alice.tenant, source=AgentSource.DEPLOYMENT)
    AgentFactory(slug="umbrella-private", tenant=mallory.tenant, source=AgentSource.DEPLOYMENT)
    slugs = [agent["slug"] for agent in client_for(alice).get("/api/v1/agents").json()["agents"]]
    assert slugs == ["acme-private", *EXAMPLES]
