"""``mcp``: ``/v1/mcp``'s ``ask`` as an MCP client sees it (issue 15): one JSON-RPC
``tools/call`` POST per question on one keep-alive connection, answered once the turn
(the ``test`` model's echo) has completed. New sessions first, then follow-ups in one
session (admission ``preempt``), to set beside the turn overhead rows, which time the
same turn through ``POST /v1/session`` and its stream.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from harness import BenchError
from table import Row, ms, percentile
from turns import AGENT, Stack


def _ask(api: Any, arguments: dict[str, Any], request_id: int) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": arguments},
    }
    answer = api.expect(200, "POST", f"/{AGENT}/v1/mcp", body)
    result = answer.get("result") if isinstance(answer, dict) else None
    outcome = (result or {}).get("structuredContent") or {}
    if (result or {}).get("isError") or outcome.get("status") != "completed":
        raise BenchError(f"ask did not complete: {answer}")
    return dict(outcome)


def bench_mcp_ask(stack: Stack, asks: int) -> list[Row]:
    """``asks`` new-session asks, then ``asks`` follow-up asks in one session."""
    api = stack.api()
    fresh, follow_ups = [], []
    try:
        session_id = ""
        for index in range(asks):
            sent = time.time()
            outcome = _ask(api, {"message": "hello"}, index)
            fresh.append(ms(time.time() - sent))
            session_id = outcome["sessionId"]
        for index in range(asks):
            sent = time.time()
            _ask(api, {"message": "again", "sessionId": session_id}, asks + index)
            follow_ups.append(ms(time.time() - sent))
    finally:
        api.close()
    return [
        Row("/v1/mcp ask (new session) p50", statistics.median(fresh), "ms"),
        Row("/v1/mcp ask (new session) p99", percentile(fresh, 99), "ms"),
        Row("/v1/mcp ask (follow-up) p50", statistics.median(follow_ups), "ms"),
        Row("/v1/mcp ask (follow-up) p99", percentile(follow_ups, 99), "ms"),
    ]
