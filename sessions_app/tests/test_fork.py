"""Forking a session over HTTP, turns on a real worker: the fork's log starts with an exact
copy of the original's prefix, it continues on its own, and only the owner may fork."""

from __future__ import annotations

import pytest

from sessions_app.models import Turn, TurnStatus
from sessions_app.tests.live import assert_gapless, assert_turns_ended_once, types

pytestmark = pytest.mark.django_db(transaction=True)


def _without_fork_mark(event):
    data = {k: v for k, v in event["data"].items() if k != "forkedFrom"}
    return {**event, "sessionId": None, "turnId": bool(event.get("turnId")), "data": data}


def test_a_fork_copies_the_prefix_goes_on_alone_and_only_its_owner_may_make_one(live, alice, bob, mallory, client_for):
    client = live()
    original = client.start("first")["sessionId"]
    client.wait_for(original, "session.waiting")
    assert client.follow_up(original, "second").status_code == 202
    log = client.wait_for(original, "session.waiting", count=2)
    first_wait = types(log).index("session.waiting")
    fork_url = f"/lab/v1/session/{original}/fork"

    # Default fork point: the end of the last settled turn, so the whole log here.
    whole = client.client.post(fork_url, {}, format="json")
    assert whole.status_code == 201, whole.content
    copy = client.events(whole.json()["sessionId"])
    assert copy[0]["data"]["forkedFrom"] == {"sessionId": original, "index": len(log) - 1}
    assert [_without_fork_mark(e) for e in copy] == [_without_fork_mark(e) for e in log]
    assert {k: v for k, v in copy[0]["data"].items() if k != "forkedFrom"} == log[0]["data"]

    # At an index: events 0..N exactly, then the fork settles and takes its own follow-ups.
    response = client.client.post(fork_url, {"atIndex": first_wait}, format="json")
    assert response.status_code == 201, response.content
    fork = response.json()
    assert fork["continuationToken"].startswith("ct_")
    assert fork["sessionId"] not in (original, whole.json()["sessionId"])
    state = client.state(fork["sessionId"])
    assert state["status"] == "waiting" and state["forkedFrom"] == {"sessionId": original, "index": first_wait}
    assert client.state(original)["forkedFrom"] is None
    copied = client.events(fork["sessionId"])
    assert [_without_fork_mark(e) for e in copied] == [_without_fork_mark(e) for e in log[: first_wait + 1]]
    assert all(e["sessionId"] == fork["sessionId"] for e in copied)
    assert not {e["turnId"] for e in copied if e.get("turnId")} & {e["turnId"] for e in log if e.get("turnId")}
    # The fork's copied turn keeps its conversation: the history of the fork's next turn.
    [copied_turn] = Turn.objects.filter(session_id=fork["sessionId"])
    assert copied_turn.status == TurnStatus.COMPLETED and copied_turn.conversation
    assert client.follow_up(fork["sessionId"], "other way", admission="reject").status_code == 202
    forked_log = client.wait_for(fork["sessionId"], "session.waiting", count=2)
    assert_gapless(forked_log)
    assert_turns_ended_once(forked_log)
    assert forked_log[-2]["data"]["result"] == "echo: other way"
    assert client.events(original) == log  # the original is untouched

    # Cut inside a turn: the cut turn ends turn.failed in the fork, which then waits.
    inside = types(log).index("turn.started", first_wait)
    cut = client.client.post(fork_url, {"atIndex": inside}, format="json").json()["sessionId"]
    cut_log = client.events(cut)
    assert types(cut_log)[inside + 1 :] == ["turn.failed", "session.waiting"]
    assert_gapless(cut_log)
    assert_turns_ended_once(cut_log)

    # Bad fork points are 400; someone else's session is 403, an unknown one 404.
    for bad in [-1, len(log), "3", 1.5, True, None]:
        body = {"atIndex": bad} if bad is not None else []
        answer = client.client.post(fork_url, body, format="json")
        assert answer.status_code == 400 and answer.json()["error"] == "invalid", (bad, answer.content)
    for stranger in (bob, mallory):
        refused = client_for(stranger).post(fork_url, {}, format="json")
        assert refused.status_code == 403 and original not in refused.content.decode()
    assert client.client.post("/lab/v1/session/ses_nope/fork", {}, format="json").status_code == 404
    sessions = client.client.get("/lab/v1/sessions").json()["sessions"]
    assert len(sessions) == 4
    assert client_for(mallory).get("/lab/v1/sessions").json()["sessions"] == []
