"""Every page the platform serves carries its Content-Security-Policy: script only from
this origin's static files, no inline script or handler, no plugins, no <base>, no
framing. A response with a policy of its own (an artifact's download) keeps it."""

from __future__ import annotations

import pytest
from django.test import Client

from agent_platform.csp import POLICY

pytestmark = pytest.mark.django_db


def directives(response) -> dict[str, str]:
    header = response.headers["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";"))


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/admin/dashboard/",
        "/weather/playground",
        "/admin/",
        "/no-such-agent/playground",
        "/no/such/page",
        "/static/playground/playground.js",
        "/weather/v1/health",
    ],
)
def test_every_page_carries_the_policy(admin_client, path):
    response = admin_client.get(path)
    response.close()  # a static file's response holds the file open
    assert response.status_code in {200, 404}, response.status_code
    assert response.headers["Content-Security-Policy"] == POLICY


def test_the_policy_allows_no_inline_script_no_plugins_no_base_and_no_framing():
    policy = directives(Client().get("/"))
    assert policy["script-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy["script-src"] and "unsafe" not in policy["default-src"]


def test_the_admin_login_page_a_visitor_sees_carries_it(client):
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_a_response_with_its_own_policy_keeps_it(client_for, alice):
    from agents.registry import get_agent
    from sessions_app.models import Artifact
    from sessions_app.tests.factories import SessionFactory

    session = SessionFactory(principal=alice, agent=get_agent("weather"))
    artifact = Artifact.objects.create(
        session=session, name="page.html", kind="file", content_type="text/html", content=b"<script>x</script>"
    )
    response = client_for(alice).get(f"/weather/v1/artifacts/{artifact.pk}/content")
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"


def test_no_template_carries_inline_script_or_handlers():
    """What the policy refuses must not be what our own pages rely on."""
    import re
    from pathlib import Path

    from django.conf import settings

    inline_script = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)
    handler = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)
    templates = [path for folder in settings.TEMPLATES[0]["DIRS"] for path in Path(folder).rglob("*.html")]
    assert templates
    offending = [
        str(path) for path in templates if inline_script.search(path.read_text()) or handler.search(path.read_text())
    ]
    assert offending == []
