"""A local stand-in for GitHub's REST API: it records every call and answers the few
endpoints the GitHub pack uses as GitHub does (ids for new comments, check runs and
reactions), and 404 ``Not Found`` otherwise."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = [
    re.compile(r"^/repos/[^/]+/[^/]+/check-runs$"),
    re.compile(r"^/repos/[^/]+/[^/]+/issues/\d+/comments$"),
    re.compile(r"^/repos/[^/]+/[^/]+/(issues|pulls)/comments/\d+/reactions$"),
]
EDITED = [
    re.compile(r"^/repos/[^/]+/[^/]+/check-runs/(\d+)$"),
    re.compile(r"^/repos/[^/]+/[^/]+/issues/comments/(\d+)$"),
]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    authorization: str
    body: dict[str, Any]
    answer: dict[str, Any]


class FakeGitHub:
    """``FakeGitHub()`` listens on a loopback port at once (``url``); ``start()`` serves."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._ids = itertools.count(1001)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                status, answer = fake._route(self.command, self.path, body)
                with fake._lock:
                    fake.calls.append(
                        Call(self.command, self.path, self.headers.get("Authorization", ""), body, answer)
                    )
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_PATCH = do_GET = _answer

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "POST" and any(pattern.match(path) for pattern in CREATED):
            return 201, {"id": next(self._ids), **body}
        for pattern in EDITED:
            found = pattern.match(path)
            if method == "PATCH" and found:
                return 200, {"id": int(found.group(1)), **body}
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def recorded(self, method: str, pattern: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method and re.search(pattern, c.path)]

    def wait_for(self, method: str, pattern: str, count: int = 1, timeout: float = 30) -> list[Call]:
        """The calls matching ``method`` and ``pattern`` once there are ``count`` of them."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.recorded(method, pattern)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"no {count}x {method} {pattern} within {timeout} s: {self.calls}")
            time.sleep(0.05)
