"""A local Slack Web API speaking Slack's protocol, and Slack's side of the Events API:
signed deliveries (``sign``). The fake records each ``chat.postMessage``; a channel id
starting ``CFAIL`` answers ``{"ok": false, "error": "channel_not_found"}`` and one
starting ``C500`` an HTTP 500, so a test picks its failure by the channel it uses."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-token"
BOT_USER = "U0BOT"


def sign(body: bytes, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Slack's signature headers for ``body`` (as the test client's extra kwargs)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ts, "HTTP_X_SLACK_SIGNATURE": f"v0={digest}"}


def event_callback(
    event_id: str,
    *,
    channel: str,
    text: str,
    ts: str,
    thread_ts: str | None = None,
    kind: str = "app_mention",
    **extra: Any,
) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "user": "U0ALICE", "text": text, "ts": ts, "channel": channel, **extra}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return {
        "token": "legacy",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": event,
        "authorizations": [{"team_id": "T1", "user_id": BOT_USER, "is_bot": True}],
    }


@dataclass
class FakeSlack:
    calls: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def posts(self, channel: str) -> list[dict[str, Any]]:
        with self.lock:
            return [call for call in self.calls if call["body"].get("channel") == channel]

    def wait_for_posts(self, channel: str, count: int = 1, timeout: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.posts(channel)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"no {count} post(s) to {channel} within {timeout} s: {self.posts(channel)}")


def serve(fake: FakeSlack) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            call = {
                "method": self.path.rsplit("/", 1)[-1],
                "authorization": self.headers.get("Authorization"),
                "body": body,
            }
            with fake.lock:
                fake.calls.append(call)
            channel = str(body.get("channel", ""))
            if channel.startswith("C500"):
                self._answer(500, {"ok": False, "error": "internal_error"})
            elif channel.startswith("CFAIL"):
                self._answer(200, {"ok": False, "error": "channel_not_found"})
            elif call["authorization"] != f"Bearer {BOT_TOKEN}":
                self._answer(200, {"ok": False, "error": "invalid_auth"})
            else:
                self._answer(200, {"ok": True, "channel": channel, "ts": f"{time.time():.6f}"})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
