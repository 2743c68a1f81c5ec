"""``define_agent(retention_days=...)``: a whole number of days >= 0, refused otherwise
when ``agent.py`` is imported."""

from __future__ import annotations

import pytest

from agents.sdk import DefinitionError, define_agent


@pytest.mark.parametrize("days", [-1, 1.5, "30", True])
def test_a_retention_that_is_not_whole_days_is_refused(days):
    with pytest.raises(DefinitionError, match="retention_days must be a whole number of days"):
        define_agent(retention_days=days)


def test_retention_days_default_to_the_tenants_and_zero_means_forever():
    assert define_agent().retention_days is None
    assert define_agent(retention_days=0).retention_days == 0
    assert define_agent(retention_days=30).retention_days == 30
