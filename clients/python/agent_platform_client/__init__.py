"""The Python client of Agent Platform, sync (``Client``) and async (``AsyncClient``).

Example::

    from agent_platform_client import Client

    with Client("http://127.0.0.1:8000", token="apt_...") as client:
        turn = client.run("weather", "Weather in Lyon?")
        print(turn.status, turn.reply)
"""

from __future__ import annotations

from agent_platform_client._async import AsyncClient
from agent_platform_client._errors import ApiError, ClientError, StreamLost
from agent_platform_client._events import Event, SseMessage, SseParser, StreamFormat, TurnResult, parse_sse
from agent_platform_client._shared import Accepted, Admission, Decision
from agent_platform_client._sync import Client

__version__ = "0.1.0"

__all__ = [
    "Accepted",
    "Admission",
    "ApiError",
    "AsyncClient",
    "Client",
    "ClientError",
    "Decision",
    "Event",
    "SseMessage",
    "SseParser",
    "StreamFormat",
    "StreamLost",
    "TurnResult",
    "__version__",
    "parse_sse",
]
