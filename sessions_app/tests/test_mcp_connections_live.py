"""MCP connections on a real worker (DESIGN §9.7), through the example agents: the
weather agent's model calls its stdio almanac server as ``almanac__sun_times``; the
triage agent's ``labels`` hook calls its host-only labeller through ``ctx.host.mcp``."""

from __future__ import annotations

import time

from sessions_app.models import KVEntry
from sessions_app.tests.live import assert_gapless, types


def test_a_model_call_and_a_hooks_host_call_reach_their_stdio_servers(live):
    weather = live(slug="weather")
    started = weather.start('/call almanac__sun_times {"city": "Oslo"}')
    events = weather.wait_for(started["sessionId"], "turn.completed")
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["toolName"] == "almanac__sun_times" and not result["isError"], result
    assert result["output"] == {"city": "Oslo", "sunrise": "08:46", "sunset": "15:15"}
    assert_gapless(events)

    triage = live(slug="triage")
    report = triage.start("The login page is broken.\nSeverity: high")["sessionId"]
    deadline = time.monotonic() + 20
    while not KVEntry.objects.filter(key=f"labels/{report}").exists():
        assert time.monotonic() < deadline, types(triage.events(report))
        time.sleep(0.1)
    assert KVEntry.objects.get(key=f"labels/{report}").value == ["auth", "crash"]
    # The model was never offered the host-only server's tools.
    triage.wait_for(report, "turn.completed")
    tools = triage.client.get("/triage/v1/tools").json()
    assert not any(tool["name"].startswith("labels__") for tool in tools["tools"])
    assert tools["connectionErrors"] == []
