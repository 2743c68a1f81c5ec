"""The channel ids the platform gives sessions it starts itself. An authored channel
cannot take one: its handlers would receive those sessions' events (discovery reports
``agents.E042``)."""

from __future__ import annotations

HTTP_CHANNEL = "http"  # the session API, the playground, MCP and forks
SCHEDULE_CHANNEL = "schedule"  # schedules and their reminders
A2A_CHANNEL = "a2a"  # the A2A server

PLATFORM_CHANNELS = frozenset({HTTP_CHANNEL, SCHEDULE_CHANNEL, A2A_CHANNEL})
