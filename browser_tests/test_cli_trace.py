"""The playground's Open trace reads what ``agent run --json`` prints (one trace format,
NDJSON: one event per line, as the stream route sends them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect

from browser_tests.test_playground import open_playground


def test_a_trace_printed_by_agent_run_json_opens_in_the_playground(page, tmp_path, screenshot):
    # As a user runs it (a process of its own: Playwright holds this thread's event loop).
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    printed = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "agent",
            "run",
            "weather",
            "--message",
            '/call get_weather {"city": "Oslo"}',
            "--json",
        ],
        cwd=Path(__file__).resolve().parents[1],
        env={**env, "PLATFORM_VAR_DIR": str(tmp_path / "var"), "AGENT_DEFAULT_MODEL": "test"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    trace = tmp_path / "run.ndjson"
    trace.write_text(printed)
    lines = len(printed.splitlines())
    open_playground(page, "weather")
    page.get_by_role("tab", name="Sessions").click()
    page.get_by_label("Open trace (NDJSON)").set_input_files(str(trace))
    expect(page.locator("#session-label")).to_contain_text("run.ndjson")
    expect(page.locator("#notice")).to_have_text(f"{lines} events from run.ndjson.")
    expect(page.locator(".tool-call[data-tool='get_weather']")).to_contain_text("Oslo")
    expect(page.locator(".bubble.agent .text").last).to_contain_text("done: get_weather ->")
    expect(page.locator(".turn-end.ok")).to_contain_text("turn completed")
    screenshot(page, "cli-trace-opened")
