"""How many SQL statements a turn's requests send: the create, the follow-up and the
stream's opening. Each statement is a round trip and Postgres work on every turn; a
change that adds one should be a decision, so these counts are exact (``BEGIN`` and
``COMMIT`` included: they are round trips too).

(In real transactions, as in production: inside pytest's test transaction every
``atomic`` block would add savepoint statements.)
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Session, Turn, TurnStatus
from sessions_app.quotas import _LOCK_SQL

TENANT_LOCK = " ".join(_LOCK_SQL.split())[:60]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _postgres():
    if connection.vendor != "postgresql":
        pytest.skip("the written-out statements are Postgres's")


@pytest.fixture
def client(alice, client_for):
    client = client_for(alice)
    # Once per process or agent: the token is looked up, then remembered; the agent's
    # folder gets its row.
    assert client.post("/weather/v1/session", {"message": "hi"}, format="json").status_code == 201
    return client


def statements(call):
    """The response, and the statements up to the request's commit (or all of them)."""
    with CaptureQueriesContext(connection) as queries:
        response = call()
    sent = [" ".join(query["sql"].split())[:60] for query in queries]
    if "COMMIT" in sent:
        head, tail = sent[: sent.index("COMMIT") + 1], sent[sent.index("COMMIT") + 1 :]
        # After the commit, at most the hook dispatch's look at the session (written out,
        # sessions_app.access.session_with_agent): made when some agent discovered in this
        # process has hooks (other tests' agents).
        assert len(tail) <= 1 and all(statement.startswith('SELECT s."id", s."tenant_id"') for statement in tail), tail
        return response, head
    return response, sent


def test_a_create_is_five_statements_and_a_transaction(client):
    response, sent = statements(lambda: client.post("/weather/v1/session", {"message": "hi"}, format="json"))
    assert response.status_code == 201, response.content
    # The agent; the session with its first turn; its first events (the indexes reserved in
    # the same statement); the tenant's lock and its quota counts (sessions_app.quotas: two
    # statements, as a count made in the lock's statement would not see what committed while
    # it waited), last: the lock is held only for the counts and the commit.
    assert len(sent) == 7 and sent[1] == "BEGIN" and sent[-1] == "COMMIT", sent
    assert sent[-3] == TENANT_LOCK, sent


def test_a_follow_up_is_seven_statements_and_a_transaction(client):
    session_id = client.post("/weather/v1/session", {"message": "hi"}, format="json").json()["sessionId"]
    Turn.objects.filter(session_id=session_id).update(status=TurnStatus.COMPLETED)  # no worker here: as one would
    url = f"/weather/v1/session/{session_id}"
    response, sent = statements(lambda: client.post(url, {"message": "more"}, format="json"))
    assert response.status_code == 202, response.content
    # The session with its agent; the lock and token rotation; the active turns; the new
    # turn; its message event; the tenant's lock and its quota counts, last.
    assert len(sent) == 9 and sent[1] == "BEGIN" and sent[-1] == "COMMIT", sent
    assert sent[-3] == TENANT_LOCK, sent
    assert Session.objects.get(pk=session_id).continuation_token == response.json()["continuationToken"]


def test_opening_a_stream_reads_the_session_once_before_it_streams(client):
    session_id = client.post("/weather/v1/session", {"message": "hi"}, format="json").json()["sessionId"]
    response, sent = statements(lambda: client.get(f"/weather/v1/session/{session_id}/stream?startIndex=0"))
    assert response.status_code == 200
    assert len(sent) == 1, sent  # the session with its agent; the log is read by the stream itself
    response.close()
