"""Daphne refuses request bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` while they arrive.

Daphne (Twisted) receives a whole request body before the ASGI application runs, and
then queues all of it for the application at once, so an application-level check comes
too late to keep a 100 MB upload out of the server's memory. Daphne has no option for
this; ``install()`` swaps in a request class that answers 413 as soon as the declared
length, or the count of bytes received so far, passes the cap. It then closes its side
only (a half-close) and reads and drops whatever the client still sends, for at most
``LINGER_SECONDS``: closing outright with the body unread would reset the connection,
and a client still sending would see a broken pipe instead of the 413.
``agent_platform.asgi`` installs it, so both ``daphne ...asgi:application`` and
``manage.py agent serve`` get it; ``agent_platform.body_limit`` stays as the check for
any other ASGI server.
"""

from __future__ import annotations

from typing import Any

from daphne import http_protocol
from django.conf import settings

from agent_platform.body_limit import TOO_LARGE, body_limit_for

_RESPONSE = (
    b"HTTP/1.1 413 Content Too Large\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: " + str(len(TOO_LARGE)).encode() + b"\r\n"
    b"Connection: close\r\n\r\n" + TOO_LARGE
)
# The largest WebSocket frame a client may send (bytes): daphne is told so, and the stream
# consumer closes a bigger one with 1009 (the stream is one-way anyway).
MAX_INBOUND_FRAME = 64 * 1024
# How long a refused request's connection stays open to read (and drop) the rest of its body.
LINGER_SECONDS = 5.0

_DaphneRequest: Any = http_protocol.WebRequest


class BodyLimitedRequest(_DaphneRequest):
    """Daphne's request, cut off with 413 once its body passes the cap."""

    refused = False
    received = 0
    limit: int | None = None

    def gotLength(self, length: int | None) -> None:
        super().gotLength(length)
        # The request line was read before the headers: the channel holds its path until the body ends.
        raw = getattr(self.channel, "_path", b"") or b""
        self.limit = body_limit_for(raw.split(b"?", 1)[0].decode("latin-1"))
        limit = self.limit
        if limit is not None and length is not None and length > limit:
            self._refuse()

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        limit = self.limit if self.limit is not None else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and self.received > limit:
            self._refuse()
            return
        super().handleContentChunk(data)

    def process(self) -> Any:
        if self.refused:
            return None
        return super().process()

    def _refuse(self) -> None:
        self.refused = True
        # No "100 Continue" after the answer: the client must not send the body.
        self.requestHeaders.removeHeader(b"expect")
        transport = self.channel.transport
        transport.write(_RESPONSE)
        transport.loseWriteConnection()
        # Imported here: importing the reactor installs one, and daphne installs its own first.
        from twisted.internet import reactor

        # (the module's reactor is typed as the interface, whose methods take self)
        reactor.callLater(LINGER_SECONDS, self.channel.loseConnection)  # type: ignore[arg-type]


def install() -> None:
    """Make daphne's HTTP factory build ``BodyLimitedRequest`` (idempotent)."""
    http_protocol.WebRequest = BodyLimitedRequest
