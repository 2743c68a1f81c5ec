"""``GET /api/v1/usage``: turns, tokens and cost per agent and day (UTC) for the caller's
tenant, filtered by agent and days, a page at a time; another tenant's only for a superuser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from agent_platform.tests.factories import PrincipalFactory, TenantFactory
from sessions_app.models import Session, Turn, TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db

DAY = datetime(2025, 3, 10, 15, 0, tzinfo=UTC)


def turn(session: Session, *, at=DAY, status=TurnStatus.COMPLETED, tokens=(0, 0), cost=None) -> Turn:
    usage = {"inputTokens": tokens[0], "outputTokens": tokens[1], "cacheReadTokens": 1, "reasoningTokens": 2}
    return TurnFactory(session=session, status=status, created_at=at, usage=usage, cost=cost)


@pytest.fixture
def recorded(alice, bob, mallory):
    """acme: weather on two days (alice and bob), triage on one; umbrella: weather, costly."""
    weather, triage = AgentFactory(slug="weather"), AgentFactory(slug="triage")
    mine = SessionFactory(principal=alice, agent=weather)
    turn(mine, tokens=(100, 20), cost=Decimal("0.010"))
    turn(SessionFactory(principal=bob, agent=weather), status=TurnStatus.FAILED, tokens=(50, 5), cost=Decimal("0.002"))
    turn(mine, at=DAY - timedelta(days=1), tokens=(7, 3))  # no cost recorded
    turn(SessionFactory(principal=alice, agent=triage), tokens=(1000, 300), cost=Decimal("0.5"))
    turn(SessionFactory(principal=mallory, agent=weather), tokens=(7777, 7777), cost=Decimal("42"))


def rows(client, query: str = "") -> list[dict]:
    response = client.get(f"/api/v1/usage{query}")
    assert response.status_code == 200, response.content
    return response.json()["usage"]


def test_usage_is_per_agent_and_day_newest_first_for_the_whole_tenant(recorded, alice, client_for):
    found = rows(client_for(alice))
    assert [(row["day"], row["agent"]) for row in found] == [
        ("2025-03-10", "triage"),
        ("2025-03-10", "weather"),
        ("2025-03-09", "weather"),
    ]
    weather = found[1]
    assert weather == {
        "day": "2025-03-10",
        "agent": "weather",
        "turns": 2,
        "failedTurns": 1,
        "inputTokens": 150,
        "outputTokens": 25,
        "cacheReadTokens": 2,
        "cacheWriteTokens": 0,
        "reasoningTokens": 4,
        "costUsd": 0.012,
    }
    assert found[2]["costUsd"] == 0


def test_usage_filters_by_agent_and_by_days(recorded, alice, client_for):
    client = client_for(alice)
    assert {row["agent"] for row in rows(client, "?agent=weather")} == {"weather"}
    assert [row["day"] for row in rows(client, "?agent=weather&from=2025-03-10")] == ["2025-03-10"]
    assert [row["day"] for row in rows(client, "?agent=weather&to=2025-03-09")] == ["2025-03-09"]
    assert rows(client, "?from=2025-03-11") == []
    assert rows(client, "?from=2025-03-10&to=2025-03-09") == []  # an empty range, not an error
    assert rows(client, "?agent=no-such-agent") == []


def test_usage_pages_with_a_next_link_and_no_row_twice(recorded, alice, client_for):
    client = client_for(alice)
    page = client.get("/api/v1/usage?limit=1").json()
    seen = []
    while True:
        assert len(page["usage"]) == 1
        seen.append((page["usage"][0]["day"], page["usage"][0]["agent"]))
        if page["next"] is None:
            break
        page = client.get(page["next"]).json()
    assert seen == [(row["day"], row["agent"]) for row in rows(client)]


@pytest.mark.parametrize(
    "query",
    ["?from=yesterday", "?to=2025-02-30", "?from=2025-3-1", "?limit=0", "?limit=201", "?limit=x", "?agent="],
)
def test_a_bad_filter_or_limit_is_400(alice, client_for, query):
    response = client_for(alice).get(f"/api/v1/usage{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


@pytest.mark.parametrize("cursor", [b"p=not-a-day", b"p=2025-02-30", b"o=x", b"p=" + b"9" * 300, b"p=2025-03-10%00"])
def test_a_cursor_this_api_did_not_write_is_404_not_a_server_error(alice, client_for, cursor):
    import base64

    for encoded in [base64.b64encode(cursor).decode(), "nope", "%C3%A9"]:
        response = client_for(alice).get(f"/api/v1/usage?cursor={encoded}")
        assert response.status_code == 404, (cursor, encoded)
        assert response.json()["error"] == "invalid_cursor"


def test_another_tenants_usage_is_403_for_a_tenant_and_shown_to_a_superuser(recorded, alice, mallory, client_for):
    refused = client_for(mallory).get("/api/v1/usage?tenant=acme")
    assert refused.status_code == 403 and refused.json()["error"] == "superuser_required"
    assert client_for(mallory).get("/api/v1/usage?tenant=no-such").status_code == 403  # the same answer
    own = rows(client_for(mallory))
    assert own == rows(client_for(mallory), "?tenant=umbrella")  # naming one's own tenant is allowed
    assert [(row["turns"], row["inputTokens"]) for row in own] == [(1, 7777)]  # none of acme's turns
    operator = PrincipalFactory(tenant=TenantFactory(slug="ops"), name="root")
    operator.user = User.objects.create_superuser("root", password=None)  # no password: no slow hashing
    operator.save()
    assert {row["agent"] for row in rows(client_for(operator), "?tenant=acme")} == {"weather", "triage"}
    assert rows(client_for(operator)) == []  # by default its own tenant
    missing = client_for(operator).get("/api/v1/usage?tenant=no-such")
    assert missing.status_code == 404 and missing.json()["error"] == "tenant_not_found"
