"""The playground in a real browser: chat, tool calls, approvals, replays, traces,
the agent's surface, custom tool rendering, at desktop and phone width."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from playwright.sync_api import expect

from agents.discovery.diagnostics import IMPORT_FAILED, NO_INSTRUCTIONS
from browser_tests.conftest import assert_controls_labelled, assert_fits_width


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def open_playground(page, slug: str = "lab", query: str = "") -> None:
    page.goto(f"/{slug}/playground{query}")
    expect(page.locator("body[data-ready='1']")).to_be_attached()
    expect(page.locator("#agent-model")).to_contain_text("model test")


def post_json(base_url: str, path: str, body: dict) -> dict:
    """A script's call to the API from loopback (dev mode: the local developer)."""
    request = urllib.request.Request(
        base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_a_message_streams_its_reply_with_usage(page, screenshot):
    open_playground(page)
    send(page, "/stream 40")
    reply = page.locator(".bubble.agent .text").last
    expect(page.locator(".turn-end.ok")).to_contain_text("turn completed")
    expect(reply).to_contain_text("t0 t1 t2")
    expect(reply).to_contain_text("t39")
    expect(page.locator(".turn-end.ok")).to_contain_text("tokens")
    expect(page.locator("#session-label")).to_contain_text("ses_")
    assert_controls_labelled(page)
    screenshot(page, "streamed-reply")

    # A follow-up in the same session.
    send(page, "and again")
    expect(page.locator(".bubble.agent .text").last).to_have_text("echo: and again")
    expect(page.locator(".turn-end.ok")).to_have_count(2)

    # Fork from the end of the first turn: a new session with that prefix, which goes on alone.
    original = page.locator("#session-label").text_content()
    page.locator(".turn-end.ok").first.get_by_role("button", name="Fork from here").click()
    expect(page.locator("#session-label")).not_to_have_text(original or "")
    expect(page.locator(".note.session").first).to_contain_text(f"forked from {original}")
    expect(page.locator(".turn-end.ok")).to_have_count(1)
    send(page, "on the fork")
    expect(page.locator(".bubble.agent .text").last).to_have_text("echo: on the fork")
    expect(page.locator(".turn-end.ok")).to_have_count(2)
    screenshot(page, "forked-session")


def test_a_call_turn_shows_the_tool_call_inline(page, screenshot):
    open_playground(page)
    send(page, '/call remember {"key": "colour", "value": "teal"}\n/call recall {"nope": 1}')
    expect(page.locator(".turn-end.ok")).to_be_visible()
    remember = page.locator(".tool-call[data-tool='remember']")
    expect(remember.locator(".tool-name")).to_have_text("remember")
    expect(remember.locator(".tool-args pre")).to_contain_text('"colour"')
    expect(remember.locator(".tool-output pre")).to_have_text("kept colour")
    expect(remember.locator(".badge")).to_have_text("done")
    failed = page.locator(".tool-call[data-tool='recall']")
    expect(failed).to_have_class("tool-call is-error")
    expect(failed.locator(".tool-output")).to_contain_text("error")
    expect(page.locator(".bubble.agent .text").last).to_contain_text("done: remember -> ")
    screenshot(page, "tool-call-inline")

    # The raw events pane shows the same records the stream carried.
    page.get_by_label("Raw events").check()
    expect(page.locator("#raw-events")).to_contain_text('"type":"action.result"')
    screenshot(page, "raw-events")


def test_approving_a_parked_call_finishes_the_turn(page, screenshot):
    open_playground(page)
    send(page, '/call close_issue {"issue": 7}')
    card = page.locator(".tool-call[data-tool='close_issue']")
    expect(card.locator(".badge")).to_have_text("needs approval")
    expect(page.locator("#turn-state")).to_have_text("waiting for approval")
    screenshot(page, "approval-requested")
    card.get_by_role("button", name="Approve close_issue").click()
    expect(card.locator(".decision")).to_contain_text("approved")
    expect(card.locator(".tool-output pre")).to_have_text("closed #7")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    screenshot(page, "approval-resolved")


def test_denying_a_parked_call_tells_the_model(page):
    open_playground(page)
    send(page, '/call close_issue {"issue": 8}')
    card = page.locator(".tool-call[data-tool='close_issue']")
    card.get_by_role("button", name="Deny close_issue").click()
    expect(card.locator(".decision")).to_contain_text("denied")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    expect(card).to_have_class("tool-call is-error")


def test_stop_interrupts_the_running_turn(page):
    open_playground(page)
    send(page, '/call wait {"seconds": 30}')
    expect(page.locator("#stop")).to_be_enabled()
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".turn-end.failed")).to_contain_text("turn interrupted")
    expect(page.locator("#stop")).to_be_disabled()


def test_a_follow_up_preempts_the_running_turn(page):
    open_playground(page)
    send(page, '/call wait {"seconds": 30}')
    expect(page.locator(".tool-call[data-tool='wait']")).to_be_visible()
    send(page, "never mind")
    expect(page.locator(".turn-end.failed")).to_contain_text("turn interrupted")
    expect(page.locator(".bubble.agent .text").last).to_have_text("echo: never mind")


def test_a_past_session_replays_from_the_start(page, web_server, screenshot):
    created = post_json(web_server, "/lab/v1/session", {"message": "from a script", "title": "scripted"})
    session_id = created["sessionId"]
    open_playground(page)
    page.get_by_role("tab", name="Sessions").click()
    page.get_by_label("Filter by session id").fill(session_id)
    row = page.locator(f"tr[data-session='{session_id}']")
    expect(row).to_contain_text("scripted")
    expect(page.locator("#session-rows tr")).to_have_count(1)
    assert_controls_labelled(page)
    screenshot(page, "sessions-list")
    row.get_by_role("button", name=f"Open {session_id}").click()
    expect(page.locator("#session-label")).to_have_text(session_id)
    expect(page.locator(".bubble.user .text")).to_have_text("from a script")
    expect(page.locator(".bubble.agent .text")).to_have_text("echo: from a script")
    expect(page.locator(".note.session").first).to_contain_text("scripted")
    screenshot(page, "session-replayed")

    # The page's address names the session, so a reload (or the admin's link) reopens it.
    assert f"session={session_id}" in page.url
    page.reload()
    expect(page.locator(".bubble.agent .text")).to_have_text("echo: from a script")


def test_the_artifacts_tab_lists_what_the_agent_tagged_and_downloads_it(page, screenshot):
    open_playground(page, "archivist")
    send(page, '/call write_report {"title": "q1", "body": "# Q1 report"}')
    expect(page.locator(".turn-end.ok")).to_be_visible()
    page.get_by_role("tab", name="Artifacts").click()
    page.get_by_label("Kind").fill("report")
    page.get_by_role("button", name="Refresh").last.click()
    rows = page.locator("#artifact-rows tr[data-artifact]")
    expect(rows).to_have_count(2)  # q1.md from the tool, answer.md from commit
    expect(page.locator("#artifact-rows")).to_contain_text("q1.md")
    assert_controls_labelled(page)
    screenshot(page, "artifacts-tab")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download q1.md").click()
    assert download.value.suggested_filename == "q1.md"
    assert Path(download.value.path()).read_bytes() == b"# Q1 report"


def test_an_uploaded_trace_is_rendered(page, tmp_path, screenshot):
    events = [
        {"type": "session.started", "index": 0, "sessionId": "ses_x", "data": {"mode": "chat"}},
        {"type": "message.received", "index": 1, "sessionId": "ses_x", "turnId": "t1", "data": {"text": "hi"}},
        {"type": "turn.started", "index": 2, "sessionId": "ses_x", "turnId": "t1", "data": {}},
        {"type": "reasoning.appended", "index": 3, "sessionId": "ses_x", "turnId": "t1", "data": {"text": "look it "}},
        {"type": "reasoning.appended", "index": 3, "sessionId": "ses_x", "turnId": "t1", "data": {"text": "up"}},
        {
            "type": "actions.requested",
            "index": 3,
            "sessionId": "ses_x",
            "turnId": "t1",
            "data": {"calls": [{"callId": "c1", "toolName": "lookup", "args": {"q": 1}}]},
        },
        {
            "type": "action.result",
            "index": 4,
            "sessionId": "ses_x",
            "turnId": "t1",
            "data": {"callId": "c1", "toolName": "lookup", "output": "found", "isError": False},
        },
        {"type": "message.appended", "index": 5, "sessionId": "ses_x", "turnId": "t1", "data": {"text": "all good"}},
        {"type": "turn.completed", "index": 6, "sessionId": "ses_x", "turnId": "t1", "data": {}},
    ]
    trace = tmp_path / "trace.ndjson"
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\nnot json\n")
    open_playground(page)
    page.get_by_role("tab", name="Sessions").click()
    page.get_by_label("Open trace (NDJSON)").set_input_files(str(trace))
    expect(page.locator("#session-label")).to_contain_text("trace.ndjson")
    expect(page.locator(".tool-call[data-tool='lookup'] .tool-output pre")).to_have_text("found")
    expect(page.locator(".bubble.agent .text")).to_have_text("all good")
    expect(page.locator(".bubble.reasoning .text")).to_have_text("look it up")
    expect(page.locator("#notice")).to_contain_text("9 events; lines 10")
    screenshot(page, "trace-opened")


def test_subagent_work_nests_under_its_call(page, screenshot):
    open_playground(page, "support")
    send(page, '/subagent refunds /call issue_refund {"order_id": "A1001", "amount": 5, "reason": "damaged"}')
    outer = page.locator(".tool-call.subagent[data-tool='refunds']")
    inner = outer.locator(".nested .tool-call[data-tool='issue_refund']")
    expect(inner.locator(".badge")).to_have_text("needs approval")
    screenshot(page, "subagent-approval")
    inner.get_by_role("button", name="Approve issue_refund").click()
    expect(inner.locator(".decision")).to_contain_text("approved")
    expect(outer.locator(".nested .bubble.agent").first).to_contain_text("done: issue_refund")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    expect(outer.locator(":scope > .tool-output")).to_contain_text("done: issue_refund")
    screenshot(page, "subagent-nested")


def test_a_tool_renderer_replaces_the_default_view(page, screenshot):
    open_playground(page, "weather")
    send(page, '/call get_weather {"city": "Lyon"}')
    card = page.locator(".tool-call[data-tool='get_weather']")
    expect(card.locator(".weather-card")).to_contain_text("Lyon")
    expect(card.locator(".weather-card")).to_contain_text("sunny")
    expect(card.locator(".tool-output")).to_be_hidden()
    screenshot(page, "custom-tool-renderer")


def test_the_surface_tab_shows_what_was_discovered(page, screenshot):
    open_playground(page, "weather")
    page.get_by_role("tab", name="Surface").click()
    surface = page.locator("#surface")
    expect(surface).to_contain_text("Tools (")
    expect(surface).to_contain_text("get_weather")
    expect(surface).to_contain_text("Skills (")
    expect(surface).to_contain_text("Hooks (")
    expect(surface).to_contain_text("Diagnostics (0)")
    surface.locator("details summary").first.click()
    expect(surface.locator("details pre").first).to_contain_text('"city"')
    screenshot(page, "surface")


def test_run_now_on_the_surface_tab_runs_a_schedule_and_opens_its_session(page):
    # Dev mode (the web_server fixture): schedules run only when asked.
    open_playground(page, "clock")
    page.get_by_role("tab", name="Surface").click()
    surface = page.locator("#surface")
    expect(surface).to_contain_text("Schedules (3)")
    page.get_by_role("button", name="Run minutely now").click()
    expect(page.locator("#notice")).to_contain_text("Schedule minutely started ses_")
    expect(page.locator("#transcript")).to_contain_text("Say the minute check is done.")


def test_logs_evals_and_abs_tabs(page):
    open_playground(page)
    page.get_by_role("tab", name="Logs").click()
    expect(page.locator("#tab-logs")).to_be_visible()
    expect(page.locator("#logs-status")).to_contain_text("No lines yet")
    expect(page.locator("#logs")).to_be_hidden()
    page.get_by_role("tab", name="Evals").click()
    expect(page.locator("#evals")).not_to_be_empty()
    page.get_by_role("tab", name="A/Bs").click()
    expect(page.locator("#abs")).not_to_be_empty()


def test_the_evals_tab_runs_a_tag_opens_a_cases_session_follows_and_cancels_a_run(
    page, web_server, page_errors, screenshot
):
    # The judge test agent's cases: tag "bad" holds a failing, a raising, a timing-out and
    # a flaky case; "hang" sleeps until cancelled.
    open_playground(page, slug="judge")
    page.get_by_role("tab", name="Evals").click()
    wrong = page.locator(".eval-case[data-case='bad/wrong']")
    expect(wrong).to_contain_text("gates that fail")
    expect(wrong.locator(".tag")).to_have_text("bad")
    expect(page.locator(".eval-case[data-case='ok/tool'] .tag")).to_have_text(["smoke", "tools"])
    expect(page.locator("#eval-history-rows")).to_contain_text("No runs yet.")
    assert_controls_labelled(page)

    # One tag: a bar with counts, then each case's result with its failing gate or error.
    page.get_by_label("Tag").select_option("bad")
    page.get_by_role("button", name="Run tag").click()
    run = page.locator("#eval-run")
    bar = run.get_by_role("progressbar", name="Cases done")
    expect(run.locator("h2")).to_contain_text("tag bad")
    expect(run.locator("h2 .badge")).to_have_text("completed", timeout=30_000)
    expect(bar).to_have_attribute("max", "4")
    expect(bar).to_have_attribute("value", "4")
    counts = "4 of 4 cases done · 1 failed, 1 flaky, 1 error, 1 timeout"
    expect(run.locator("#eval-progress-text")).to_have_text(counts)
    failed = run.locator(".eval-result[data-case='bad/wrong']")
    expect(failed.locator(".badge")).to_have_text("failed")
    expect(failed.locator(".eval-assertions li")).to_have_count(2)
    expect(failed.locator(".eval-assertions li").first).to_contain_text("check")
    expect(failed.locator(".eval-assertions li").last).to_contain_text("called")
    expect(failed.locator(".eval-assertions li").last).to_contain_text("add")
    expect(run.locator(".eval-result[data-case='bad/boom'] .eval-error")).to_contain_text("the case itself broke")
    expect(run.locator(".eval-result[data-case='bad/slow'] .badge")).to_have_text("timeout")
    expect(run.locator(".eval-result[data-case='bad/flaky'] .open-session")).to_have_count(2)
    expect(run.get_by_role("button", name="Cancel run")).to_be_hidden()
    assert_controls_labelled(page)
    screenshot(page, "evals-tag-run")

    # A case's session opens in the chat view, replayed.
    failed.locator(".open-session").click()
    expect(page.locator("#tab-chat")).to_be_visible()
    expect(page.locator("#session-label")).to_contain_text("ses_")
    expect(page.locator(".bubble.user .text")).to_have_text("hello")
    expect(page.locator(".bubble.agent .text")).to_have_text("echo: hello")

    # One case, followed while it runs (it sleeps until cancelled), then cancelled.
    page.get_by_role("tab", name="Evals").click()
    expect(run.locator("h2")).to_contain_text("tag bad")  # the shown run stays shown
    page.get_by_role("button", name="Run case hang").click()
    expect(run.locator("h2")).to_contain_text("case hang")
    expect(run.locator("h2 .badge")).to_have_text("running")
    expect(bar).to_have_attribute("max", "1")
    expect(bar).to_have_attribute("value", "0")
    expect(run.locator("#eval-progress-text")).to_have_text("0 of 1 cases done · 1 pending")
    expect(page.get_by_role("button", name="Run all evals")).to_be_disabled()
    screenshot(page, "evals-running")
    run.get_by_role("button", name="Cancel run").click()
    expect(run.locator("h2 .badge")).to_have_text("cancelled")
    expect(run.locator(".eval-result[data-case='hang'] .badge")).to_have_text("cancelled")
    expect(run.get_by_role("button", name="Cancel run")).to_be_hidden()

    # A run started elsewhere (a script, the CLI): a start from the tab is refused (409);
    # the tab says so, follows the run that is going, and can cancel it.
    hanging = post_json(web_server, "/judge/v1/dev/evals/runs", {"tags": ["hang"]})
    page.get_by_role("button", name="Run all evals").click()
    expect(page.locator("#notice")).to_contain_text(f"A run of this agent is already going ({hanging['runId']})")
    expect(run.locator("h2")).to_contain_text(hanging["runId"])
    expect(run.locator("h2")).to_contain_text("tag hang")
    expect(run.locator("h2 .badge")).to_have_text("running")
    run.get_by_role("button", name="Cancel run").click()
    expect(run.locator("h2 .badge")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Run all evals")).to_be_enabled()
    expect(page.locator("#notice")).to_be_hidden()

    # The history, newest first; a past run shows its results again.
    rows = page.locator("#eval-history-rows tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("tag hang")
    expect(rows.nth(0)).to_have_attribute("aria-current", "true")
    expect(rows.nth(1)).to_contain_text("case hang")
    expect(rows.nth(1)).to_contain_text("cancelled")
    expect(rows.nth(2)).to_contain_text("tag bad")
    expect(rows.nth(2)).to_contain_text("completed")
    rows.nth(2).get_by_role("button").click()
    expect(run.locator("h2")).to_contain_text("tag bad")
    expect(failed.locator(".eval-assertions li")).to_have_count(2)
    expect(rows.nth(2)).to_have_attribute("aria-current", "true")
    screenshot(page, "evals-history")
    page_errors[:] = [line for line in page_errors if "status of 409" not in line]


def test_help_lists_the_commands(page):
    open_playground(page)
    page.get_by_label("Message").fill("/")
    expect(page.locator("#command-list")).to_contain_text("/help")
    page.get_by_label("Message").press("Tab")
    expect(page.get_by_label("Message")).to_have_value("/help ")
    page.get_by_label("Message").press("Enter")
    expect(page.locator(".note.help")).to_contain_text("/help")


def test_the_playground_works_at_phone_width(phone_page, screenshot):
    open_playground(phone_page)
    send(phone_page, "hello from a phone")
    expect(phone_page.locator(".bubble.agent .text")).to_have_text("echo: hello from a phone")
    assert_fits_width(phone_page)
    assert_controls_labelled(phone_page)
    screenshot(phone_page, "phone-chat")


def test_a_channel_route_is_a_slash_command(page, screenshot):
    open_playground(page, "support")
    page.get_by_label("Message").fill("/a")
    expect(page.locator("#command-list")).to_contain_text("/ask")
    page.get_by_label("Message").press("Tab")
    page.get_by_label("Message").press_sequentially("where is my order A1001?")
    page.get_by_label("Message").press("Enter")
    expect(page.locator("#session-label")).to_contain_text("ses_")
    expect(page.locator(".bubble.user .text")).to_have_text("where is my order A1001?")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    expect(page.locator(".note.session")).to_contain_text("where is my order")
    screenshot(page, "slash-command-session")


def test_the_routes_and_surface_tabs_opened_before_the_agents_info_arrives_show_it_when_it_does(page):
    """A quick click after a reload: the tab is open before ``/v1/info`` has answered."""
    held = []
    page.route("**/support/v1/info", lambda route: held.append(route))  # answered only once the tab is open
    page.goto("/support/playground")
    while not held:
        page.wait_for_timeout(50)
    page.get_by_role("tab", name="Routes").click()
    held[0].continue_()
    route = page.locator(".route[data-route='/support/v1/channels/web/ask']")
    expect(route.get_by_label("Body for POST /ask")).to_be_visible()
    page.get_by_role("tab", name="Surface").click()
    expect(page.locator("#surface")).to_contain_text("model test")


def test_the_try_form_remembers_the_body_offers_curl_and_opens_the_session(page, screenshot):
    open_playground(page, "support")
    page.get_by_role("tab", name="Routes").click()
    route = page.locator(".route[data-route='/support/v1/channels/web/ask']")
    body = route.get_by_label("Body for POST /ask")
    expect(body).to_have_value('{\n  "question": "",\n  "conversation": null\n}')
    body.fill('{"question": "refund please", "conversation": "c-42"}')
    route.get_by_role("button", name="Try").click()
    expect(route.locator(".route-output")).to_contain_text("201")
    assert_controls_labelled(page)
    screenshot(page, "route-tried")

    route.get_by_role("button", name="Copy curl").click()
    expect(route.locator(".route-output")).to_contain_text("curl -X POST 'http://127.0.0.1:")
    sent = """-d '{"question":"refund please","conversation":"c-42"}'"""
    expect(route.locator(".route-output")).to_contain_text(
        f"/support/v1/channels/web/ask' -H 'Content-Type: application/json' {sent}"
    )

    route.get_by_role("button", name="Try").click()  # the same conversation continues
    expect(route.locator(".route-output")).to_contain_text("202")
    route.get_by_role("button", name="Open session").click()
    expect(page.locator(".bubble.user .text")).to_have_count(2)
    expect(page.locator(".bubble.agent .text").first).to_have_text("echo: refund please")

    page.reload()  # the last body is remembered per endpoint
    page.get_by_role("tab", name="Routes").click()
    expect(route.get_by_label("Body for POST /ask")).to_have_value(
        '{"question": "refund please", "conversation": "c-42"}'
    )


def test_routes_sharing_a_path_get_distinct_commands(page):
    open_playground(page, "lab")
    page.get_by_label("Message").fill("/help")
    page.get_by_label("Message").press("Enter")
    help_text = page.locator(".note.help")
    for command in ("/send", "/ops.ping.get", "/ops.ping.delete", "/send-and-say"):
        expect(help_text).to_contain_text(command)
    page.get_by_label("Message").fill("/ops.ping.get")
    page.get_by_label("Message").press("Enter")
    expect(page.locator(".note pre").last).to_contain_text('"channel": "ops"')


def test_the_surface_tab_shows_where_each_mcp_connection_goes(page, screenshot):
    open_playground(page, "wired")
    page.get_by_role("tab", name="Surface").click()
    connections = page.locator(".surface-section", has_text="MCP connections")
    expect(connections.locator("h2")).to_have_text("MCP connections (2)")
    search = connections.locator("li", has_text="search")
    expect(search.locator(".connection-target")).to_have_text("http://127.0.0.1:9/mcp")
    expect(search).to_contain_text("Search over streamable HTTP.")
    files = connections.locator("li", has_text="files")
    expect(files.locator(".connection-target")).to_have_text("files-mcp-server")
    expect(files).to_contain_text("host code only")
    screenshot(page, "mcp-connections")


def test_an_unknown_agents_playground_is_a_not_found_page(page, page_errors, screenshot):
    response = page.goto("/no-such-agent/playground")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    expect(page.locator("#not-found-message")).to_have_text("No agent is served at /no-such-agent/.")
    expect(page.get_by_role("link", name="agents index")).to_have_attribute("href", "/")
    screenshot(page, "unknown-agent")
    page_errors[:] = [line for line in page_errors if "status of 404" not in line]


def test_a_broken_agents_playground_shows_its_diagnostics_before_anyone_types(page, screenshot):
    page.goto("/broken/playground")
    expect(page.locator("body[data-ready='1']")).to_be_attached()
    panel = page.locator("#agent-diagnostics")
    expect(panel).to_be_visible()
    expect(panel.locator("h2")).to_have_text("broken is not served: its tree has 2 errors")
    missing = panel.locator(f"li[data-code='{NO_INSTRUCTIONS.id}']")
    expect(missing).to_contain_text(NO_INSTRUCTIONS.id)
    expect(missing.locator(".hint")).to_have_text(f"Hint: {NO_INSTRUCTIONS.hint}")
    failed = panel.locator(f"li[data-code='{IMPORT_FAILED.id}']")
    expect(failed).to_contain_text("lookup.py")
    expect(failed).to_contain_text("ten")
    expect(page.get_by_label("Message")).to_be_disabled()
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    assert_controls_labelled(page)
    screenshot(page, "broken-agent")


def test_a_broken_agents_diagnostics_show_before_a_token_is_typed(deployed_page, page_errors):
    deployed_page.goto("/broken/playground")
    expect(deployed_page.locator("body[data-ready='1']")).to_be_attached()
    panel = deployed_page.locator("#agent-diagnostics")
    expect(panel.locator(f"li[data-code='{NO_INSTRUCTIONS.id}'] .hint")).to_have_text(f"Hint: {NO_INSTRUCTIONS.hint}")
    # The health probe answered 503, as it should for a broken agent; Chromium logs that.
    page_errors[:] = [line for line in page_errors if "status of 503" not in line]
