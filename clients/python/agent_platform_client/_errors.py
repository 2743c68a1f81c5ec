"""What the client raises."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """The base of every error this client raises."""


class ApiError(ClientError):
    """The platform answered with an error: ``status`` (400, 401, 403, 404, 409, ...),
    ``code`` and ``message`` from its ``{"error", "message"}`` body.

    Example::

        try:
            client.decide("triage", session_id, call_id, "approve")
        except ApiError as error:
            if error.status == 409: ...  # decided already
    """

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class StreamLost(ClientError):
    """A stream could not be resumed: it dropped ``attempts`` times in a row without a
    new event. ``last_index`` is the last index received (-1: none)."""

    def __init__(self, last_index: int, attempts: int, cause: BaseException | None) -> None:
        super().__init__(f"the stream dropped {attempts} times in a row after index {last_index}: {cause}")
        self.last_index = last_index
        self.attempts = attempts
