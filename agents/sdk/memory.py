"""Memory across sessions: a hook that keeps a journal of the agent's turns.

``agent init`` writes ``agent/hooks/memory.py`` with ``hook = memory_hook()``; delete
that file to opt out. On each ``turn.completed`` of a live session the hook appends one
Markdown entry (UTC time, session id, title, the user message, the final reply, the
tools called) to the agent's deployment-scoped files under ``memory/``
(``ctx.host.files``, ``scope="deployment"``: per agent and per tenant). New session
workspaces show ``memory/`` read-only, and the prompt names it.

Example::

    # agent/hooks/memory.py
    from agents.sdk.memory import memory_hook

    hook = memory_hook(path="journal.md", max_entry_chars=2000)

A turn's message and tool calls arrive as events before its ``turn.completed``; the
hook keeps them in ``ctx.host.kv`` under ``agents.sdk.memory/<session>/<turn>`` until the
turn ends (a key per turn: a follow-up's message may arrive before the turn it
preempted has failed).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agents.runtime.fs.base import NotFoundError, WriteFailedError
from agents.sdk._context import KV, Files, HookContext
from agents.sdk._definitions import Hook
from agents.sdk._errors import DefinitionError

__all__ = ["memory_hook"]

# The folder of the agent's deployment-scoped files that workspaces show as memory/.
MEMORY_DIR = "memory"
PENDING_PREFIX = "agents.sdk.memory/"
# A journal append is read, add, write-if-unchanged: retried when another session wrote first.
APPEND_ATTEMPTS = 8
DROPPED = "\n\n(earlier entries were dropped to keep the journal under {limit} characters)\n"


def _journal_path(path: str) -> str:
    """``memory/<path>``, for a relative path that stays inside ``memory/``.

    Raises:
        DefinitionError: for an absolute, empty or escaping path.
    """
    if not isinstance(path, str) or not path.strip() or path.startswith("/") or "\\" in path or "\x00" in path:
        raise DefinitionError(f"memory_hook path must be a relative file path like 'journal.md', not {path!r}")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise DefinitionError(f"memory_hook path {path!r} must stay inside memory/ (no '..')")
    return "/".join([MEMORY_DIR, *parts])


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DefinitionError(f"memory_hook {name} must be a positive integer, not {value!r}")
    return value


def _quote(text: str) -> str:
    """A block quote: whatever the text holds (``## `` lines included), it stays inside its entry."""
    return "\n".join(f"> {line}" if line else ">" for line in (text.strip() or "(empty)").splitlines())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def journal_entry(
    *, at: str, session_id: str, title: str, message: str, reply: str, tools: list[str], max_chars: int
) -> str:
    """One entry, at most ``max_chars`` characters: the message and the reply are cut
    (marked ``…``) to fit, the reply getting what the message leaves over."""
    title = " ".join(title.split())  # one line: a title cannot start a heading of its own
    heading = f"## {_utc(at)} · {session_id}" + (f" · {title}" if title else "")
    tools_line = f"Tools: {', '.join(tools)}" if tools else "Tools: none"

    def render(budget: int) -> str:
        asked = _clip(message.strip(), budget // 2)
        answered = _clip(reply.strip(), budget - len(asked))
        return f"{heading}\n\nUser:\n\n{_quote(asked)}\n\nReply:\n\n{_quote(answered)}\n\n{tools_line}\n"

    budget = max_chars
    entry = render(budget)
    while len(entry) > max_chars and budget > 0:  # quoting adds "> " per line: shrink until it fits
        budget = max(budget - (len(entry) - max_chars), 0)
        entry = render(budget)
    return _clip(entry, max_chars)


def _utc(at: str) -> str:
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        moment = datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def trimmed(journal: str, limit: int) -> str:
    """The journal's newest whole entries within ``limit`` characters (with a note that older went)."""
    if len(journal) <= limit:
        return journal
    note = DROPPED.format(limit=limit)
    if limit <= len(note):
        return journal[len(journal) - limit :]
    tail = journal[len(journal) - (limit - len(note)) :]
    start = tail.find("\n## ")
    return note.lstrip("\n") + (tail[start + 1 :] if start >= 0 else tail)


def memory_hook(
    *,
    path: str = "journal.md",
    max_entry_chars: int = 2000,
    include_eval: bool = False,
    max_journal_chars: int = 200_000,
) -> Hook:
    """A hook that appends one journal entry per completed turn to ``memory/<path>``
    among the agent's deployment-scoped files (kept per tenant).

    Entries are written for ``live`` sessions only (``include_eval=True`` adds eval
    sessions); dry runs write nothing. Each entry is cut to ``max_entry_chars``; once
    the journal passes ``max_journal_chars`` its oldest entries are dropped.

    Example::

        hook = memory_hook()  # agent/hooks/memory.py

    Raises:
        DefinitionError: for a path that is absolute or leaves ``memory/``, or a limit
            that is not a positive integer.
    """
    journal = _journal_path(path)
    entry_limit = _positive(max_entry_chars, "max_entry_chars")
    journal_limit = _positive(max_journal_chars, "max_journal_chars")
    if not isinstance(include_eval, bool):
        raise DefinitionError(f"memory_hook include_eval must be True or False, not {include_eval!r}")

    def pending(event: dict[str, Any], ctx: HookContext) -> tuple[str, KV] | None:
        """The turn's key and ``ctx.host.kv``, or None when this session keeps no journal."""
        session, turn = ctx.session, event.get("turnId")
        purposes = ("live", "eval") if include_eval else ("live",)
        if ctx.host is None or not turn or session.purpose not in purposes or session.dry_run:
            return None
        return f"{PENDING_PREFIX}{session.id}/{turn}", ctx.host.kv

    async def notes_of(kv: KV, key: str) -> dict[str, list[str]]:
        notes: dict[str, list[str]] = await kv.get(key) or {"messages": [], "tools": []}
        return notes

    async def on_message(event: dict[str, Any], ctx: HookContext) -> None:
        if (found := pending(event, ctx)) is None:
            return
        key, kv = found
        notes = await notes_of(kv, key)
        # Coalesced follow-ups drain into one turn: each of their messages is kept.
        notes["messages"].append(str(event.get("data", {}).get("text", "")))
        await kv.put(key, notes)

    async def on_actions(event: dict[str, Any], ctx: HookContext) -> None:
        if (found := pending(event, ctx)) is None:
            return
        key, kv = found
        notes = await notes_of(kv, key)
        for call in event.get("data", {}).get("calls", []):
            name = call.get("toolName") if isinstance(call, dict) else None
            if isinstance(name, str) and name not in notes["tools"]:
                notes["tools"].append(name)
        await kv.put(key, notes)

    async def on_completed(event: dict[str, Any], ctx: HookContext) -> None:
        if (found := pending(event, ctx)) is None or ctx.host is None:
            return
        key, kv = found
        notes = await notes_of(kv, key)
        entry = journal_entry(
            at=str(event.get("at", "")),
            session_id=ctx.session.id,
            title=ctx.session.title,
            message="\n\n".join(notes["messages"]),
            reply=str(event.get("data", {}).get("result") or ""),
            tools=notes["tools"],
            max_chars=entry_limit,
        )
        await _append(ctx.host.files, journal, entry, journal_limit)
        await kv.delete(key)

    async def on_failed(event: dict[str, Any], ctx: HookContext) -> None:
        if (found := pending(event, ctx)) is not None:
            key, kv = found
            await kv.delete(key)

    return Hook(
        {
            "message.received": on_message,
            "actions.requested": on_actions,
            "turn.completed": on_completed,
            "turn.failed": on_failed,
        }
    )


async def _append(files: Files, path: str, entry: str, limit: int) -> None:
    """Add ``entry`` to the journal, compare-and-swap on its etag (another session's
    hook may be appending at the same moment).

    Raises:
        WriteFailedError: other sessions kept writing first, ``APPEND_ATTEMPTS`` times.
    """
    for _ in range(APPEND_ATTEMPTS):
        try:
            data, etag = await files.read(path, scope="deployment")
            text = data.decode("utf-8", "replace")
        except NotFoundError:
            # No journal yet: written unconditionally (two first entries at the same instant may keep one).
            text, etag = "", None
        joined = f"{text.rstrip()}\n\n{entry}" if text.strip() else entry
        try:
            await files.write(path, trimmed(joined, limit), etag=etag, scope="deployment")
            return
        except WriteFailedError:
            continue
    raise WriteFailedError(path)
