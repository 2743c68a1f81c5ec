"""A/B assignment at session creation, through the session API: arms drawn by weight
(a chi-square bound over many sessions), ``ab.assigned`` right after
``session.started``, eval sessions not enrolled, and ``GET /v1/abs`` counting only the
caller's sessions (per principal, per tenant)."""

from __future__ import annotations

from collections import Counter

import pytest

from sessions_app.models import ABAssignment, Session
from sessions_app.records.ab import copy_assignments

pytestmark = pytest.mark.django_db

SESSIONS = 240
WEIGHTS = {"plain": 1, "fancy": 2, "terse": 1}
# The chi-square statistic with 2 degrees of freedom exceeds this with probability 1e-4.
CHI2_2DF_P_1E4 = 18.42


@pytest.fixture(autouse=True)
def _agents(settings, live_agents_dir):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}


def test_arms_are_drawn_by_weight_recorded_after_session_started_and_eval_sessions_are_left_out(alice, client_for):
    client = client_for(alice)
    arms = Counter()
    for n in range(SESSIONS):
        created = client.post("/splits/v1/session", {"message": "hi"}, format="json")
        assert created.status_code == 201, created.content
        if n < 3:  # the log's head, for a few of them
            events = client.get(f"/splits/v1/session/{created.json()['sessionId']}/events").json()["events"]
            assert [e["type"] for e in events[:3]] == ["session.started", "ab.assigned", "agent.bound"]
            assert set(events[1]["data"]) == {"experiment", "arm"} and events[1]["data"]["experiment"] == "tone"
    report = client.get("/splits/v1/abs").json()
    for row in report["sessions"]:
        arms[row["arm"]] += 1
    assert sum(arms.values()) == SESSIONS and set(arms) <= set(WEIGHTS)
    total = sum(WEIGHTS.values())
    chi2 = sum((arms[a] - SESSIONS * w / total) ** 2 / (SESSIONS * w / total) for a, w in WEIGHTS.items())
    assert chi2 < CHI2_2DF_P_1E4, (arms, chi2)
    (experiment,) = report["experiments"]
    assert experiment["name"] == "tone"
    assert [(a["arm"], a["weight"], a["sessions"]) for a in experiment["arms"]] == [
        (arm, float(weight), arms[arm]) for arm, weight in WEIGHTS.items()
    ]

    evaluated = client.post("/splits/v1/session", {"message": "hi", "purpose": "eval"}, format="json")
    assert evaluated.status_code == 201, evaluated.content
    eval_id = evaluated.json()["sessionId"]
    events = client.get(f"/splits/v1/session/{eval_id}/events").json()["events"]
    assert "ab.assigned" not in [e["type"] for e in events]
    assert eval_id not in {row["sessionId"] for row in client.get("/splits/v1/abs").json()["sessions"]}


def test_abs_counts_only_the_callers_sessions(alice, bob, mallory, client_for):
    mine = {}
    for person in (alice, bob, mallory):
        client = client_for(person)
        mine[person.pk] = {client.post("/splits/v1/session", {"message": "hi"}, format="json").json()["sessionId"]}
    for person in (alice, bob, mallory):
        report = client_for(person).get("/splits/v1/abs")
        assert report.status_code == 200
        body = report.json()
        assert {row["sessionId"] for row in body["sessions"]} == mine[person.pk]
        assert sum(arm["sessions"] for arm in body["experiments"][0]["arms"]) == 1
    # An agent without experiments answers an empty report, not a 404.
    assert client_for(alice).get("/weather/v1/abs").json() == {"experiments": [], "sessions": []}


def test_a_fork_keeps_its_originals_arm(alice, client_for):
    # The seam the fork route uses (its own tests drive POST .../fork).
    client = client_for(alice)
    original, fork = (
        Session.objects.get(pk=client.post("/splits/v1/session", {"message": "hi"}, format="json").json()["sessionId"])
        for _ in range(2)
    )
    ABAssignment.objects.filter(session=fork).delete()
    copy_assignments(original, fork)
    arms = {row["sessionId"]: row["arm"] for row in client.get("/splits/v1/abs").json()["sessions"]}
    assert arms[fork.pk] == arms[original.pk]
