"""``define_agent(webhooks=[...])``: the shape is checked when agent.py is imported, the
URL against the outbound policy at discovery (like MCP connection URLs)."""

from __future__ import annotations

import pytest

from agents.discovery import discover
from agents.runtime.outbound import OutboundPolicy
from agents.sdk import DefinitionError, define_agent
from agents.tests.trees import INSTRUCTIONS, codes, only, write_tree

AGENT = """
    from agents.sdk import define_agent

    agent = define_agent(webhooks=[{{"url": {url!r}, "events": {events!r}, "secret": "HOOK_SECRET"}}])
"""


@pytest.mark.parametrize(
    ("webhooks", "complaint"),
    [
        ({"url": "https://example.com/", "events": ["*"]}, "list of dicts"),
        (["https://example.com/"], "must be a dict"),
        ([{"url": "https://example.com/", "events": ["*"], "headers": {}}], "unknown keys ['headers']"),
        ([{"events": ["*"]}], "['url'] must be a URL string"),
        ([{"url": "https://example.com/", "events": "turn.completed"}], "non-empty list of event types"),
        ([{"url": "https://example.com/", "events": []}], "non-empty list of event types"),
        ([{"url": "https://example.com/", "events": [3]}], "event type strings"),
        ([{"url": "https://example.com/", "events": ["*"], "secret": ""}], "must name a secret"),
    ],
)
def test_a_malformed_webhook_is_refused_when_agent_py_is_imported(webhooks, complaint):
    with pytest.raises(DefinitionError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
        define_agent(webhooks=webhooks)


def test_a_webhook_keeps_its_url_events_and_secret_name():
    config = define_agent(webhooks=[{"url": "https://hooks.example.com/in", "events": ["turn.completed"]}])
    [webhook] = config.webhooks
    assert (webhook.url, webhook.events, webhook.secret) == ("https://hooks.example.com/in", ("turn.completed",), None)
    assert webhook.wants("turn.completed") and not webhook.wants("turn.failed")


def test_discovery_reports_a_webhook_url_into_the_platforms_network(tmp_path):
    files = {**INSTRUCTIONS, "agent/agent.py": AGENT.format(url="https://10.1.2.3/hook", events=["*"])}
    surface, loader = discover(write_tree(tmp_path / "demo", files))
    loader.unload()
    diagnostic = only(surface, "agents.E013")
    assert diagnostic.path == "agent/agent.py"
    assert "webhooks[0] is refused" in diagnostic.message and "private" in diagnostic.message


def test_an_allowed_host_and_a_known_event_give_no_diagnostic_and_an_unknown_event_a_warning(tmp_path):
    files = {
        **INSTRUCTIONS,
        "agent/agent.py": AGENT.format(url="http://127.0.0.1:9/hook", events=["turn.completed", "turn.finished"]),
    }
    surface, loader = discover(write_tree(tmp_path / "demo", files), outbound=OutboundPolicy(allow=("127.0.0.1",)))
    loader.unload()
    assert codes(surface) == ["agents.W018"]
    assert "'turn.finished'" in only(surface, "agents.W018").message
