"""A local HTTP server that speaks to the real provider SDKs.

It records each request's JSON body and answers with the next scripted ``Reply``:
an SSE stream (sent chunked, optionally cut off mid-body) or an error status with
a JSON body. Point an SDK's base URL at ``server.url``.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` that is not a str is JSON-encoded."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


@dataclass
class Reply:
    status: int = 200
    frames: list[bytes] = field(default_factory=list)  # the SSE body, one chunk per frame
    error: Any = None  # the JSON body of an error status
    cut: bool = False  # drop the connection before the body is complete
    delay: float = 0.0  # seconds to wait before answering
    stall: float = 0.0  # seconds to wait after the frames, before ending the body


def stream(*frames: bytes, cut: bool = False) -> Reply:
    return Reply(frames=list(frames), cut=cut)


def failure(status: int, body: Any) -> Reply:
    return Reply(status=status, error=body)


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]


class WireServer:
    """``with WireServer() as server: server.script(reply, ...)``; ``server.requests`` holds what came in."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self, request: Received) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not self.replies:
                return failure(599, {"error": {"message": f"no scripted reply for request {len(self.requests)}"}})
            return self.replies.popleft()

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out, stop early or close their pool hang up on us; that is the point.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked bodies, so a stream can be cut off mid-body

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = server.next_reply(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if reply.delay:
                time.sleep(reply.delay)
            try:
                if reply.status != 200:
                    self._send_json(reply.status, reply.error)
                else:
                    self._send_stream(reply)
            except ConnectionError:
                self.close_connection = True  # the client gave up first (a timeout test)

        def _send_json(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _send_stream(self, reply: Reply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for frame in reply.frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            if reply.stall:
                time.sleep(reply.stall)
            if reply.cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler
