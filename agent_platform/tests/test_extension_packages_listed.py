"""The installed extension packages (entry point group ``agent_platform.extensions``),
with their version, where people look for them: ``agent extensions``, the admin's
Extensions page and the index page. The package listed is the repository's own sample,
``extensions/shop``, which ``make test`` installs like any extension package."""

from __future__ import annotations

import json
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from agent_platform.tests.factories import PrincipalFactory, TenantFactory, staff_user_for

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
# The shipped package's own version: a stale install (an older copy) fails the test.
VERSION = tomllib.loads((REPO / "extensions/shop/pyproject.toml").read_text())["project"]["version"]


def agent_command(*args: str) -> str:
    out = StringIO()
    call_command("agent", *args, stdout=out)
    return out.getvalue()


def test_agent_extensions_lists_the_installed_sample_package_with_its_version(settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": REPO / "examples"}
    lines = agent_command("extensions").splitlines()
    assert f"shop  agent-platform-shop {VERSION}  module agent_platform_shop" in lines
    [listed] = [item for item in json.loads(agent_command("extensions", "--json")) if item["name"] == "shop"]
    assert listed == {
        "name": "shop",
        "module": "agent_platform_shop",
        "distribution": "agent-platform-shop",
        "version": VERSION,
        "summary": listed["summary"],
    }
    assert "shop support agents" in listed["summary"]
    # And `agent info` names the package version behind each mount.
    assert f"  extension shop: extension from shop, agent-platform-shop {VERSION}" in agent_command("info", "support")


def test_the_admin_lists_the_packages_to_staff_only(settings):
    anonymous = Client().get("/admin/extensions/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    staff = Client()
    staff.force_login(staff_user_for(PrincipalFactory(tenant=TenantFactory(slug="acme"), name="alice")))
    html = staff.get("/admin/extensions/").content.decode()
    row = html[html.index('<table id="extension-packages">') :].split("</table>")[0]
    assert "<code>shop</code>" in row and "agent-platform-shop" in row and f"<td>{VERSION}</td>" in row
    # Reachable from every admin page.
    assert 'href="/admin/extensions/"' in staff.get("/admin/").content.decode()


def test_the_index_shows_each_agents_mounts_and_the_packages_with_who_mounts_them(settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": REPO / "examples"}
    html = Client().get("/").content.decode()
    support = html[html.index("<td>support</td>") :].split("</tr>")[0]
    assert f"<code>shop</code>: extension from shop (agent-platform-shop {VERSION})" in support
    packages = html[html.index('<table id="extension-packages">') :].split("</table>")[0]
    assert f"<td>{VERSION}</td>" in packages
    assert "<code>support/shop</code>" in packages
