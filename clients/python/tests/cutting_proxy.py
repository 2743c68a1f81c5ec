"""A TCP proxy in front of a test server that drops event streams mid-body: what a
proxy's idle timeout or a restarting load balancer does to a long-lived response.

Each connection carries one request (the proxy asks for ``Connection: close``), so
every stream request is seen, recorded and, while ``cuts`` remain, cut after
``cut_after`` bytes of its body.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field


@dataclass
class CuttingProxy:
    upstream_port: int
    cut_after: int = 400
    cuts: int = 1
    requests: list[bytes] = field(default_factory=list)  # each request's head, as received
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stream_requests(self) -> list[bytes]:
        return [head for head in self.requests if b"/stream" in head.split(b"\r\n", 1)[0]]

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
            head = b"\r\n".join([*lines, b"Connection: close"])
            with self._lock:
                self.requests.append(head)
                cut = b"/stream" in lines[0] and self.cuts > 0
                if cut:
                    self.cuts -= 1
            upstream.sendall(head + b"\r\n\r\n" + rest)
            threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
            self._answer(upstream, client, self.cut_after if cut else None)

    def _answer(self, upstream: socket.socket, client: socket.socket, cut_after: int | None) -> None:
        received, body_at = b"", -1
        while True:
            chunk = upstream.recv(65536)
            if not chunk:
                return
            if cut_after is None:
                client.sendall(chunk)
                continue
            received += chunk
            if body_at < 0 and b"\r\n\r\n" in received:
                body_at = received.index(b"\r\n\r\n") + 4
            if body_at >= 0 and len(received) - body_at >= cut_after:
                client.sendall(received[: body_at + cut_after])
                client.shutdown(socket.SHUT_RDWR)
                return
            if body_at >= 0:
                # Forward what is below the cut as it comes (the client sees events before it).
                client.sendall(received)
                received, body_at, cut_after = b"", 0, cut_after - (len(received) - body_at)


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        return
