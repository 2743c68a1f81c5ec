"""The Slack pack's benchmark: a signed Events API delivery (an ``app_mention``) to the
time its session is visible on the NDJSON stream, and to the reply reaching Slack.

The agent is the weather example with a Slack pack (``slackbench`` in the bench AGENTS_DIR)
whose Web API is a fake Slack in this process, on loopback. Each sample is a new thread:
sign the body (as Slack does), POST it, then follow the session's stream as the ``slack``
principal that owns it (tenant ``local``), until ``turn.started``; the fake records when
``chat.postMessage`` arrives.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import shutil
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness import ROOT, TIMEOUT, BenchError, free_port
from table import Row, ms, percentile

AGENT = "slackbench"
SIGNING_SECRET = "bench-signing-secret"  # noqa: S105 - a throwaway secret for a throwaway stack
BOT_TOKEN = "xoxb-bench"  # noqa: S105
# The stack's environment: the pack's secrets, and loopback allowed for the fake Slack.
ENV = {
    "BENCH_SLACK_SIGNING_SECRET": SIGNING_SECRET,
    "BENCH_SLACK_BOT_TOKEN": BOT_TOKEN,
    "PLATFORM_OUTBOUND_ALLOW": "127.0.0.1",
}


def add_agent(folder: Path) -> int:
    """Put the Slack bench agent in the AGENTS_DIR ``folder``; the port its fake Slack must use."""
    port = free_port()
    target = folder / AGENT
    shutil.copytree(ROOT / "examples" / "weather", target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "agent" / "channels").mkdir(exist_ok=True)
    (target / "agent" / "channels" / "slack.py").write_text(
        "from agents.sdk import slack_channel\n\n"
        'channel = slack_channel(signing_secret="BENCH_SLACK_SIGNING_SECRET", bot_token="BENCH_SLACK_BOT_TOKEN", '
        f'api_url="http://127.0.0.1:{port}/api")\n'
    )
    return port


class FakeSlack:
    """``chat.postMessage`` on loopback: the time each thread's first reply arrived."""

    def __init__(self, port: int) -> None:
        self.replies: dict[str, float] = {}
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with fake.lock:
                    fake.replies.setdefault(str(body.get("thread_ts")), time.time())
                data = b'{"ok": true, "ts": "1.0"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply_at(self, thread_ts: str, timeout: float = TIMEOUT) -> float:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if thread_ts in self.replies:
                    return self.replies[thread_ts]
            time.sleep(0.002)
        raise BenchError(f"no reply posted in thread {thread_ts}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def signed_mention(n: int, thread_ts: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": "TBENCH",
            "event_id": f"EvBench{n}-{time.time_ns()}",
            "event": {"type": "app_mention", "user": "U1", "text": "<@UBOT> Berlin", "ts": thread_ts, "channel": "C1"},
            "authorizations": [{"user_id": "UBOT", "is_bot": True}],
        }
    ).encode()
    ts = str(int(time.time()))
    signature = hmac.new(SIGNING_SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={signature}",
    }
    return body, headers


def bench_slack(stack: Any, slack_token: str, fake_port: int, samples: int) -> list[Row]:
    """``samples`` signed mentions one after another, each a new thread and session."""
    fake = FakeSlack(fake_port)
    conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=TIMEOUT)
    api = stack.api(slack_token)
    answered, visible, started, replied = [], [], [], []
    try:
        for n in range(samples):
            thread_ts = f"{int(time.time())}.{n:06d}"
            body, headers = signed_mention(n, thread_ts)
            sent = time.time()
            conn.request("POST", f"/{AGENT}/v1/channels/slack/events", body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = {}
            if response.status != 200 or "sessionId" not in answer:
                raise BenchError(f"the Slack delivery got {response.status}: {raw[:300]!r}")
            answered.append(time.time() - sent)
            stream = api.stream(f"/{AGENT}/v1/session/{answer['sessionId']}/stream?startIndex=0")
            try:
                seen = stream.until(lambda r: r.type == "turn.started")
            finally:
                stream.close()
            visible.append(seen[0].at_client - sent)
            started.append(seen[-1].at_server - sent)
            replied.append(fake.reply_at(thread_ts) - sent)
    finally:
        conn.close()
        api.close()
        fake.close()
    return [
        Row("slack: signed delivery -> 200 p50", ms(statistics.median(answered)), "ms"),
        Row("slack: signed delivery -> 200 p99", ms(percentile(answered, 99)), "ms"),
        Row("slack: delivery -> session.started read on the stream p50", ms(statistics.median(visible)), "ms"),
        Row("slack: delivery -> session.started read on the stream p99", ms(percentile(visible, 99)), "ms"),
        Row("slack: delivery -> turn.started recorded p50", ms(statistics.median(started)), "ms"),
        Row("slack: delivery -> reply posted to Slack p50", ms(statistics.median(replied)), "ms"),
        Row("slack: delivery -> reply posted to Slack p99", ms(percentile(replied, 99)), "ms"),
    ]
