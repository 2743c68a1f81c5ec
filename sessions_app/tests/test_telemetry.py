"""OpenTelemetry (DESIGN.md §9.9) end to end: turns run by the live worker and requests
served here export spans and metrics over OTLP/HTTP to a local collector, which decodes
them with opentelemetry-proto's classes. Agents are written into the live AGENTS_DIR
with an ``otel.py`` naming the collector."""

from __future__ import annotations

import json
import shutil
import textwrap
import uuid
from pathlib import Path

from agents.telemetry import shutdown_all
from sessions_app.tests.otlp_receiver import Receiver

SERVER_KIND = 2  # opentelemetry.proto.trace.v1.Span.SPAN_KIND_SERVER


def _write_agent(root: Path, slug: str, otel: str) -> None:
    files = {
        "agent/instructions.md": "You look cities up.\n",
        "agent/otel.py": f"from agents.sdk import define_otel\n\notel = {otel}\n",
        "agent/tools/lookup.py": '''
            from agents.sdk import ToolContext, tool


            @tool(effect="read")
            def lookup(ctx: ToolContext, city: str) -> dict:
                """Look a city up."""
                ctx.host.otel.increment("lab.lookups", 1, {"lab.kind": "city"})
                ctx.host.otel.set_attributes({"lab.cache": "miss"})
                return {"city": city, "found": True}
        ''',
        "agent/subagents/helper/agent.py": (
            'from agents.sdk import define_agent\n\nagent = define_agent(description="Helps.")\n'
        ),
        "agent/subagents/helper/instructions.md": "You help.\n",
        "agent/subagents/helper/tools/ping.py": '''
            from agents.sdk import tool


            @tool(effect="read")
            def ping() -> str:
                """Answer pong."""
                return "pong"
        ''',
    }
    for name, text in files.items():
        path = root / slug / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def test_turn_spans_and_metrics_reach_the_agents_collector_without_content(
    live, live_agents_dir, settings, monkeypatch
):
    receiver = Receiver()
    # This process serves the requests (their agent_sdk.http spans): export soon.
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
    # The operator's collector credentials: never sent to an endpoint an otel.py names.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-operator-key=op-secret")
    settings.PLATFORM = {**settings.PLATFORM, "OUTBOUND_ALLOW": ("127.0.0.1",)}
    tag = uuid.uuid4().hex[:6]
    lab, content, off = f"otel-{tag}", f"otelc-{tag}", f"oteloff-{tag}"
    common = f'endpoint="{receiver.url}", headers={{"x-collector-key": "k-123"}}, service_name="otel-lab"'
    _write_agent(live_agents_dir, lab, f"define_otel({common})")
    _write_agent(live_agents_dir, content, f"define_otel({common}, include_content=True)")
    _write_agent(live_agents_dir, off, f"define_otel({common}, enabled=False)")
    try:
        # Turned off: nothing of it may reach the collector, though it names one.
        quiet = live(slug=off)
        quiet_id = quiet.start('/call lookup {"city": "Quietville"}')["sessionId"]
        quiet.wait_for(quiet_id, "turn.completed")

        shown = live(slug=content)
        shown_id = shown.start('/call lookup {"city": "Timbuktu"}')["sessionId"]

        client = live(slug=lab).client
        caller_trace, caller_span = uuid.uuid4().hex, uuid.uuid4().hex[:16]
        message = '/call lookup {"city": "Zanzibar"}\n/subagent helper /call ping {}'
        created = client.post(
            f"/{lab}/v1/session",
            {"message": message},
            format="json",
            HTTP_TRACEPARENT=f"00-{caller_trace}-{caller_span}-01",
        ).json()
        session_id, turn_id = created["sessionId"], created["turnId"]
        live(slug=lab).wait_for(session_id, "turn.completed")
        # A tool run with no turn: its span under a synthetic turn.
        direct = client.post(f"/{lab}/v1/tools/lookup", {"input": {"city": "Zanzibar"}}, format="json")
        assert direct.status_code == 200, direct.content
        shown.wait_for(shown_id, "turn.completed")

        def turn_spans(slug: str, synthetic: bool = False) -> list:
            return [
                s
                for s in receiver.spans()
                if s.name == "agent_sdk.turn"
                and s.attributes["agent_sdk.agent"] == slug
                and s.attributes.get("agent_sdk.turn.synthetic", False) == synthetic
            ]

        def metric_names() -> set[str]:
            return {p.metric for p in receiver.points() if p.attributes.get("agent_sdk.agent") == lab}

        wanted = {
            "cursor.token.usage",
            "cursor.tool.calls",
            "agent_sdk.turn.count",
            "agent_sdk.subagent.count",
            "agent_sdk.session.count",
            "agent_sdk.http.duration",
            "lab.lookups",
        }
        receiver.wait_until(
            lambda: (
                all([turn_spans(lab), turn_spans(lab, synthetic=True), turn_spans(content)])
                and wanted <= metric_names()
            )
        )
        spans = receiver.spans()

        # The turn: the root of a trace of its own, not the HTTP request's.
        (turn,) = turn_spans(lab)
        assert turn.parent_id == ""
        assert turn.attributes["agent_sdk.session_id"] == turn.attributes["cursor.conversation.id"] == session_id
        assert turn.attributes["agent_sdk.turn_id"] == turn_id
        assert turn.attributes["agent_sdk.channel"] == "http"
        assert turn.attributes["gen_ai.request.model"] == "test"
        assert turn.resource["service.name"] == "otel-lab"
        assert turn.resource["agent_sdk.framework"] == "agent_platform"
        trace = [s for s in spans if s.trace_id == turn.trace_id]
        by_name: dict[str, list] = {}
        for span in trace:
            by_name.setdefault(span.name, []).append(span)
        (lookup,) = [s for s in by_name["agent_sdk.tool"] if s.attributes["cursor.tool.name"] == "lookup"]
        (ping,) = [s for s in by_name["agent_sdk.tool"] if s.attributes["cursor.tool.name"] == "ping"]
        (helper,) = by_name["agent_sdk.subagent"]
        assert lookup.parent_id == helper.parent_id == turn.span_id
        assert ping.parent_id == helper.span_id  # the subagent's own tools nest under it
        assert lookup.attributes["cursor.tool.status"] == "success"
        assert lookup.attributes["lab.cache"] == "miss"  # ctx.host.otel.set_attributes
        assert lookup.attributes["agent_sdk.call_id"]
        chats = by_name["chat test"]
        assert {c.parent_id for c in chats} == {turn.span_id, helper.span_id}
        assert all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
        assert all(c.attributes["gen_ai.usage.input_tokens"] > 0 for c in chats)

        (synthetic,) = turn_spans(lab, synthetic=True)
        (direct_tool,) = [s for s in spans if s.trace_id == synthetic.trace_id and s.name == "agent_sdk.tool"]
        assert direct_tool.parent_id == synthetic.span_id
        assert direct_tool.attributes["agent_sdk.call_id"] == direct.json()["callId"]
        assert direct_tool.attributes["lab.cache"] == "miss"

        # The request: a SERVER span in the caller's trace, under the caller's span.
        (http,) = [s for s in spans if s.name == "agent_sdk.http" and s.trace_id == caller_trace]
        assert (http.kind, http.parent_id) == (SERVER_KIND, caller_span)
        assert http.attributes["http.response.status_code"] == 201
        assert http.trace_id != turn.trace_id

        # Metrics: each point names its agent.
        points = [p for p in receiver.points() if p.attributes.get("agent_sdk.agent") == lab]
        tokens = {p.attributes["type"] for p in points if p.metric == "cursor.token.usage"}
        assert {"input", "output"} <= tokens
        tools = {p.attributes["cursor.tool.name"] for p in points if p.metric == "cursor.tool.calls"}
        assert tools == {"lookup", "ping"}

        # Content only where asked; the collector's headers on every export; nothing of the agent turned off.
        bodies = [body for _, _, body in receiver.requests]
        assert not any(b"Zanzibar" in body for body in bodies)
        shown_trace = turn_spans(content)[0].trace_id
        (shown_tool,) = [s for s in spans if s.name == "agent_sdk.tool" and s.trace_id == shown_trace]
        assert json.loads(shown_tool.attributes["agent_sdk.tool.arguments"]) == {"city": "Timbuktu"}
        assert all(headers.get("x-collector-key") == "k-123" for _, headers, _ in receiver.requests)
        assert not any("x-operator-key" in headers for _, headers, _ in receiver.requests)
        assert not any(b"Quietville" in body or off.encode() in body for body in bodies)
    finally:
        shutdown_all()
        receiver.close()
        for slug in (lab, content, off):  # other tests list and validate this AGENTS_DIR
            shutil.rmtree(live_agents_dir / slug, ignore_errors=True)


def test_the_environment_names_the_collector_for_agents_without_an_endpoint(client_for, alice, settings, monkeypatch):
    receiver = Receiver()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-operator-key=op-secret")
    settings.PLATFORM = {
        **settings.PLATFORM,
        "OTEL_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
        "OTEL_METRICS_ENDPOINT": "",  # traces only
        "OTEL_SERVICE_NAME": "ops-platform",
    }
    try:
        client = client_for(alice)
        assert client.get("/weather/v1/health").status_code == 200
        assert client.get("/weather/v1/session/ses_nope").status_code == 404
        receiver.wait_until(lambda: len(receiver.spans()) >= 2)
        spans = receiver.spans()
        assert {(s.name, s.attributes["http.response.status_code"]) for s in spans} == {
            ("agent_sdk.http", 200),
            ("agent_sdk.http", 404),
        }
        assert {s.resource["service.name"] for s in spans} == {"ops-platform"}
        assert all(s.parent_id == "" and s.attributes["agent_sdk.agent"] == "weather" for s in spans)
        assert all(headers.get("x-operator-key") == "op-secret" for _, headers, _ in receiver.requests)
        assert {path for path, _, _ in receiver.requests} == {"/v1/traces"}
    finally:
        shutdown_all()
        receiver.close()
