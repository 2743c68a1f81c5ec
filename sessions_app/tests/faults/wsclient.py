"""A minimal WebSocket client (RFC 6455) on a plain socket, for the fault tests.

Plain sockets let a test do what libraries hide: shrink the receive buffer, stop
reading altogether, or read a frame at a time. Server frames are read as they
come (text, close, ping); the client only ever sends a close frame.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from collections.abc import Iterator
from typing import Any

TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    pass


class WebSocket:
    """``WebSocket(port, "/ws/faults/session/ses_...?startIndex=0", token)``."""

    def __init__(self, port: int, path: str, token: str, *, rcvbuf: int | None = None, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect, so the TCP window is small from the start
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.close_code: int | None = None
        self.close_reason = ""
        try:
            self._handshake(port, path, token)
        except BaseException:
            self.sock.close()
            raise

    def _handshake(self, port: int, path: str, token: str) -> None:
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
            ).encode()
        )
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0] + b" ":
            raise HandshakeRefused(head.decode(errors="replace"))

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def _take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._fill()
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def frame(self) -> tuple[int, bytes]:
        """The next whole message: (opcode, payload)."""
        opcode, payload = None, b""
        while True:
            first, second = self._take(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack(">H", self._take(2))
            elif length == 127:
                (length,) = struct.unpack(">Q", self._take(8))
            data = self._take(length)
            if opcode is None or first & 0x0F:
                opcode = first & 0x0F
            payload += data
            if first & 0x80:  # FIN
                return opcode, payload

    def records(self) -> Iterator[dict[str, Any]]:
        """Event records until the server closes (``close_code`` then says how)."""
        while True:
            opcode, payload = self.frame()
            if opcode == TEXT:
                yield json.loads(payload)
            elif opcode == CLOSE:
                self.close_code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.close_reason = payload[2:].decode(errors="replace")
                return

    def close(self) -> None:
        """Send a close frame (masked, as a client must) and drop the connection."""
        try:
            mask = os.urandom(4)
            body = struct.pack(">H", 1000)
            masked = bytes(byte ^ mask[n % 4] for n, byte in enumerate(body))
            self.sock.sendall(bytes([0x80 | CLOSE, 0x80 | len(body)]) + mask + masked)
        except OSError:
            pass
        finally:
            self.sock.close()
