"""The playground's A/Bs tab in a real browser: arms, sessions, metric means with their
intervals, a plain-words verdict per arm and a chart, under the page's CSP (a refused
inline script or style would be a console error, and the page fixture fails on those)."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from agents.models import Agent
from browser_tests.test_playground import open_playground, post_json
from sessions_app.models import ABAssignment
from sessions_app.tests.factories import SessionFactory

# Sessions per arm and their "turns" values: fancy takes twice the turns (significant
# with 12 sessions an arm), terse about the same as plain (not yet).
SEEDED = {"plain": [2, 3] * 6, "fancy": [5, 6] * 6, "terse": [2, 4] * 6}


def test_the_abs_tab_shows_arms_intervals_verdicts_and_a_chart(page, web_server, alice, screenshot):
    # A real session too; its turn fails, so its metrics (which refuse failed sessions) stay empty.
    started = post_json(web_server, "/splits/v1/session", {"message": "/fail on purpose"})
    agent = Agent.objects.get(slug="splits")
    earlier = timezone.now() - timedelta(hours=1)  # older than the real one: it heads the sessions list
    for arm, values in SEEDED.items():
        for value in values:
            session = SessionFactory(agent=agent, principal=alice)
            ABAssignment.objects.create(
                session=session, agent=agent, experiment="tone", arm=arm, metrics={"turns": value}, assigned_at=earlier
            )

    open_playground(page, "splits")
    page.get_by_role("tab", name="A/Bs").click()
    experiment = page.locator("section.ab-experiment[data-experiment='tone']")
    expect(experiment.get_by_role("heading", name="tone")).to_be_visible()
    expect(experiment.locator("tr[data-arm]")).to_have_count(3)
    expect(experiment.locator("tr[data-arm='fancy'] td").nth(1)).to_have_text(re.compile(r"^1[23]$"))
    expect(experiment.locator("tr[data-arm='plain']")).to_contain_text("2.50 [")
    verdicts = experiment.locator("[data-metric='turns'] .ab-verdicts li")
    expect(verdicts).to_have_count(2)
    expect(verdicts.nth(0)).to_contain_text("fancy: +120% turns, significant")
    expect(verdicts.nth(1)).to_contain_text("terse: +20% turns, not yet significant")
    chart = experiment.locator("[data-metric='turns'] svg.ab-chart")
    expect(chart.locator("circle")).to_have_count(3)
    expect(chart.locator("line.ab-interval")).to_have_count(3)
    experiment.get_by_text("Newest sessions").click()
    expect(experiment.get_by_role("button", name=f"Open {started['sessionId']}")).to_be_visible()
    screenshot(page, "abs-tab")
