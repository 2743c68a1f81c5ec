"""The discovered surface over HTTP and the CLI, and refusing to serve a broken agent."""

from __future__ import annotations

import json
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

GOOD_TOOL = '''
from agents.sdk import tool


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()
'''


def write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def agents_dir(tmp_path, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    write(tmp_path / "echo", {"agent/instructions.md": "Be brief.", "agent/tools/shout.py": GOOD_TOOL})
    write(
        tmp_path / "broken", {"agent/instructions.md": "Be brief.", "agent/tools/bad.py": "import nonexistent_module\n"}
    )
    return tmp_path


def cli_info_json(slug: str) -> dict:
    out = StringIO()
    call_command("agent", "info", slug, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("slug", ["weather", "triage", "support"])
def test_v1_info_is_the_same_document_as_agent_info_json(alice, client_for, slug):
    response = client_for(alice).get(f"/{slug}/v1/info")
    assert response.status_code == 200
    assert response.json() == cli_info_json(slug)
    assert response.json()["diagnostics"] == []


def test_v1_info_lists_a_packs_webhook_url(alice, client_for):
    channels = {c["name"]: c for c in client_for(alice).get("/support/v1/info").json()["channels"]}

    assert channels["web"]["pack"] is None
    assert channels["slack"]["pack"] == "slack"
    [route] = channels["slack"]["routes"]
    assert (route["method"], route["url"]) == ("POST", "/support/v1/channels/slack/events")
    assert "signature" in route["description"]


def test_the_tool_routes_list_tools_and_name_the_available_ones_on_a_miss(alice, client_for, agents_dir):
    client = client_for(alice)
    tools = client.get("/echo/v1/tools").json()["tools"]
    assert [tool["name"] for tool in tools] == ["shout"]
    assert tools[0]["inputSchema"]["required"] == ["text"]
    assert client.get("/echo/v1/tools/shout").json()["description"] == "Say it louder."
    missing = client.get("/echo/v1/tools/whisper")
    assert missing.status_code == 404
    assert missing.json() == {"error": "tool_not_found", "message": "No tool 'whisper'. Available: shout."}


def test_an_agent_with_errors_is_not_served_and_says_why(alice, client_for, agents_dir):
    client = client_for(alice)
    health = client.get("/broken/v1/health")
    assert health.status_code == 503
    [diagnostic] = health.json()["diagnostics"]
    assert diagnostic["code"] == "agents.E001"
    assert diagnostic["path"] == "agent/tools/bad.py"
    assert "nonexistent_module" in diagnostic["message"]
    refused = client.get("/broken/v1/sessions")
    assert refused.status_code == 503
    assert refused.json()["error"] == "agent_invalid"
    assert "agents.E001" in refused.json()["message"]
    # The surface stays readable, so the playground can show what is wrong.
    assert client.get("/broken/v1/info").json()["diagnostics"][0]["code"] == "agents.E001"


def test_the_index_page_lists_broken_agents_with_their_diagnostics(agents_dir):
    html = APIClient().get("/").content.decode()
    assert "not served" in html and "agents.E001" in html and "agent/tools/bad.py" in html


def test_in_dev_mode_an_edit_is_picked_up_without_a_restart(alice, client_for, agents_dir, settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    client = client_for(alice)
    assert client.get("/broken/v1/health").status_code == 503
    (agents_dir / "broken" / "agent" / "tools" / "bad.py").write_text(GOOD_TOOL.replace("shout", "bad"))
    assert client.get("/broken/v1/health").status_code == 200
    assert [t["name"] for t in client.get("/broken/v1/tools").json()["tools"]] == ["bad"]


def test_outside_dev_mode_the_first_discovery_is_kept(alice, client_for, agents_dir):
    client = client_for(alice)
    assert client.get("/echo/v1/health").status_code == 200
    write(agents_dir / "echo", {"agent/tools/extra.py": GOOD_TOOL.replace("def shout", "def extra")})
    assert [t["name"] for t in client.get("/echo/v1/tools").json()["tools"]] == ["shout"]


def test_validate_exits_non_zero_and_prints_the_diagnostics_when_an_agent_has_errors(agents_dir):
    out = StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("agent", "validate", "--dir", str(agents_dir), stdout=out)
    assert failure.value.returncode == 1
    printed = out.getvalue()
    assert "broken: error (1 error(s), 0 warning(s))" in printed
    assert "ERROR agents.E001 agent/tools/bad.py" in printed
    assert "echo: ok" in printed


def test_validate_passes_on_every_example_agent():
    out = StringIO()
    call_command("agent", "validate", stdout=out)
    assert out.getvalue().count(": ok (0 error(s), 0 warning(s))") == 3


def test_init_scaffolds_an_agent_that_validates_cleanly(tmp_path):
    call_command("agent", "init", "helpdesk", "--dir", str(tmp_path), stdout=StringIO())
    out = StringIO()
    call_command("agent", "validate", "--dir", str(tmp_path / "helpdesk"), stdout=out)
    assert "helpdesk: ok (0 error(s), 0 warning(s))" in out.getvalue()
    info = json.loads(_info_json_for(tmp_path / "helpdesk"))
    assert [t["name"] for t in info["tools"]] == ["word_count"]
    assert [h["name"] for h in info["hooks"]] == ["log_turns", "memory"]  # memory: docs/memory.md
    assert (tmp_path / "helpdesk/agent/hooks/memory.py").read_text().count("hook = memory_hook()") == 1
    assert [c["id"] for c in info["evals"]["cases"]] == ["smoke"]


def _info_json_for(folder: Path) -> str:
    out = StringIO()
    call_command("agent", "info", "--dir", str(folder), "--json", stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("name", ["api", "bad.name", "has space"])
def test_init_refuses_an_unusable_slug(tmp_path, name):
    with pytest.raises(CommandError, match="not a usable slug"):
        call_command("agent", "init", name, "--dir", str(tmp_path))


def test_init_refuses_to_overwrite(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(CommandError, match="already exists"):
        call_command("agent", "init", "taken", "--dir", str(tmp_path))
