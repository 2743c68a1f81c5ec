"""Memory across sessions (``agents.sdk.memory``) with a real worker, through the HTTP
API: a live session's completed turn is journaled by the memory hook; the next session
finds the journal read-only at ``/memory`` and its prompt names it; an eval session reads and writes
nothing; another tenant on the same shared agent sees none of it (the ``diarist`` agent)."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SLUG = "diarist"
JOURNAL = "/memory/journal.md"


def recall(client: Any) -> dict[str, str]:
    """The agent's memory/ files in the caller's tenant (its ``recall`` tool, called directly)."""
    response = client.post(f"/{SLUG}/v1/tools/recall", {"input": {}}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["result"]


def hooks_done(client: Any, turn_id: str, timeout: float = 30.0) -> None:
    """Wait for the witness hook's line on /v1/logs: it runs after the memory hook."""
    deadline = time.monotonic() + timeout
    while not any(
        f"turn {turn_id} ended" in line["message"] for line in client.get(f"/{SLUG}/v1/logs").json()["lines"]
    ):
        assert time.monotonic() < deadline, f"the hooks never saw the end of {turn_id}"
        time.sleep(0.05)


def results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event["data"] for event in events if event["type"] == "action.result"]


def test_a_journal_written_by_one_session_is_read_by_the_next_and_by_no_one_else(live, alice, mallory):
    diary, other = live(alice, SLUG), live(mallory, SLUG)
    rehearsal = diary.start("the rehearsal code is quokka", purpose="eval")
    first = diary.start("the door is blue\n/call recall {}", title="Door colour")
    for started in (rehearsal, first):
        diary.wait_for(started["sessionId"], "turn.completed")
        hooks_done(diary.client, started["turnId"])
    journal = recall(diary.client)[JOURNAL]
    assert journal.startswith("## ") and f" · {first['sessionId']} · Door colour\n" in journal
    assert "> the door is blue\n> /call recall {}" in journal and "> done: recall -> {}" in journal
    assert "Tools: recall" in journal and "quokka" not in journal  # eval sessions keep no journal
    assert recall(other.client) == {}

    # Alice's next session finds the journal; Mallory's (another tenant, the same shared agent) does not.
    second = diary.start("/system")
    theirs = other.start(f'/call Read {{"path": "{JOURNAL}"}}')
    [prompt] = [
        e["data"]["result"]
        for e in diary.wait_for(second["sessionId"], "turn.completed")
        if e["type"] == "turn.completed"
    ]
    assert f"/memory holds notes from earlier sessions (read-only): {JOURNAL}." in prompt
    calls = f'/call Read {{"path": "{JOURNAL}"}}\n/call Write {{"path": "{JOURNAL}", "content": "forged"}}'
    assert diary.follow_up(second["sessionId"], calls).status_code == 202
    read, write = results(diary.wait_for(second["sessionId"], "turn.completed", count=2))
    assert not read["isError"] and "the door is blue" in read["output"]
    assert write["isError"] and write["output"] == {"error": f"read-only mount: {JOURNAL}"}
    forged = diary.client.post(
        f"/{SLUG}/v1/session", {"message": "hi", "workspaceFiles": {"memory/journal.md": "forged"}}, format="json"
    )
    assert forged.status_code == 400 and "reserved" in forged.json()["message"]

    # An eval session of Alice's gets no copy: a case's result does not drift with the journal.
    probe = diary.start(f'/call Read {{"path": "{JOURNAL}"}}', purpose="eval")
    [unseen] = results(diary.wait_for(probe["sessionId"], "turn.completed"))
    assert unseen["isError"] and unseen["output"] == {"error": f"not found: {JOURNAL}"}

    [missing] = results(other.wait_for(theirs["sessionId"], "turn.completed"))
    assert missing["isError"] and missing["output"] == {"error": f"not found: {JOURNAL}"}
    hooks_done(other.client, theirs["turnId"])
    own = recall(other.client)[JOURNAL]  # Mallory's tenant keeps a journal of its own
    assert theirs["sessionId"] in own and first["sessionId"] not in own and "door" not in own
    assert "the door is blue" in recall(diary.client)[JOURNAL]
