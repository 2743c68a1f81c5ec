"""``ctx.host.github``: the GitHub pack's REST API client.

One small client over the platform's guarded HTTP client (``agents.runtime.outbound``)
rather than an SDK such as githubkit: every call to ``api_url`` must go through the
outbound policy (SSRF guard, ``PLATFORM['OUTBOUND_ALLOW']``), and the pack needs a handful
of endpoints (comments, reactions, check runs), not a second HTTP stack. The token is
resolved by name on each call (``agents.secrets``), so it is never stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from agents.config import outbound_policy
from agents.models import Agent
from agents.runtime.outbound import guarded_client
from agents.secrets import aresolve

API_VERSION = "2022-11-28"
# A call runs on a worker between two events of the session: a slow GitHub must not hold it long.
TIMEOUT_SECONDS = 10.0


class GitHubError(Exception):
    """GitHub answered a call with an error status; ``str()`` carries GitHub's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"GitHub answered {status}: {message}")
        self.status = status


def _error_message(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("message", body)) if isinstance(body, dict) else str(body)[:200]


@dataclass(frozen=True)
class GitHubClient:
    """The API client of one agent's GitHub pack channel (``channel`` is its name).

    Example::

        await ctx.host.github.comment("acme/app", 42, "Looks good to me.")
        runs = await ctx.host.github.request("GET", "/repos/acme/app/commits/abc123/check-runs")
    """

    agent: Agent
    channel: str
    options: Mapping[str, Any]

    @property
    def api_url(self) -> str:
        return str(self.options["api_url"])

    @property
    def bot_name(self) -> str:
        return str(self.options["bot_name"])

    async def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"agent-platform/{self.bot_name}",
        }
        name = self.options.get("token")
        token = await aresolve(name, agent=self.agent) if name else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    async def request(self, method: str, path: str, json: Any = None) -> Any:
        """Call ``api_url + path``; returns the parsed JSON answer (None when empty).

        Raises:
            GitHubError: GitHub answered 4xx/5xx.
            OutboundRefused: the outbound policy refuses ``api_url``.
            httpx2.HTTPError: the call did not get through.
        """
        url = self.api_url + (path if path.startswith("/") else f"/{path}")
        async with guarded_client(outbound_policy(), timeout=TIMEOUT_SECONDS) as client:
            response = await client.request(method.upper(), url, json=json, headers=await self._headers())
        if response.status_code >= 400:
            raise GitHubError(response.status_code, _error_message(response))
        return response.json() if response.content else None

    async def comment(self, owner_repo: str, number: int, body: str) -> dict[str, Any]:
        """Post a comment on an issue or pull request; returns GitHub's comment (with ``id``)."""
        answer: dict[str, Any] = await self.request(
            "POST", f"/repos/{owner_repo}/issues/{number}/comments", {"body": body}
        )
        return answer

    async def edit_comment(self, owner_repo: str, comment_id: int, body: str) -> dict[str, Any]:
        answer: dict[str, Any] = await self.request(
            "PATCH", f"/repos/{owner_repo}/issues/comments/{comment_id}", {"body": body}
        )
        return answer

    async def react(self, owner_repo: str, comment_id: int, content: str = "eyes", *, review: bool = False) -> None:
        """A reaction on an issue comment, or on a review comment with ``review=True``."""
        kind = "pulls" if review else "issues"
        await self.request("POST", f"/repos/{owner_repo}/{kind}/comments/{comment_id}/reactions", {"content": content})

    async def create_check_run(self, owner_repo: str, head_sha: str, **fields: Any) -> dict[str, Any]:
        answer: dict[str, Any] = await self.request(
            "POST", f"/repos/{owner_repo}/check-runs", {"name": self.bot_name, "head_sha": head_sha, **fields}
        )
        return answer

    async def update_check_run(self, owner_repo: str, check_run_id: int, **fields: Any) -> dict[str, Any]:
        answer: dict[str, Any] = await self.request("PATCH", f"/repos/{owner_repo}/check-runs/{check_run_id}", fields)
        return answer
