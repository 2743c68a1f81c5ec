"""The index page: every agent with its health, its diagnostics and, when served, its playground."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents_dir(tmp_path, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    (tmp_path / "fine" / "agent").mkdir(parents=True)
    (tmp_path / "fine" / "agent" / "instructions.md").write_text("Be brief.")
    (tmp_path / "broken" / "agent").mkdir(parents=True)  # no instructions: not served
    return tmp_path


def test_served_agents_link_their_playground_and_health(agents_dir):
    html = Client().get("/").content.decode()
    assert 'href="/fine/playground"' in html
    assert 'href="/fine/v1/health"' in html


def test_an_agent_with_errors_is_listed_not_served_without_a_playground(agents_dir):
    html = Client().get("/").content.decode()
    row = html[html.index('<tr class="agent-invalid">') :].split("</tr>")[0]
    assert "broken" in row and "not served" in row
    assert "/broken/playground" not in html
    assert 'class="diagnostic error"' in row


def test_the_index_links_the_dashboard_and_fits_a_phone():
    html = Client().get("/").content.decode()
    assert 'href="/admin/dashboard/"' in html
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
