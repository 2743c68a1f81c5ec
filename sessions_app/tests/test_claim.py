"""Claiming a turn (``sessions_app.scheduling.claim_turn``): only a queued turn, or a
running one whose lease ran out, is claimed, once; the claimed turn comes back with
its session and agent exactly as the ORM reads them (on Postgres the claim is one
written-out statement)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Turn, TurnStatus
from sessions_app.scheduling import claim_turn
from sessions_app.tests.factories import TurnFactory

pytestmark = pytest.mark.django_db


def _values(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in type(row)._meta.concrete_fields}


def test_a_queued_turn_is_claimed_once_with_its_session_and_agent_as_the_orm_reads_them():
    queued = TurnFactory(attachments={"notes.md": "x"})

    claimed = claim_turn(queued.pk)

    assert claimed is not None
    expected = Turn.objects.select_related("session__agent").get(pk=queued.pk)
    assert _values(claimed) == _values(expected)
    assert (claimed.status, claimed.attempts) == (TurnStatus.RUNNING, 1)
    assert claimed.lease_until is not None and claimed.started_at is not None
    assert _values(claimed.session) == _values(expected.session)
    assert _values(claimed.session.agent) == _values(expected.session.agent)
    assert claim_turn(queued.pk) is None  # running under a live lease: not ours


def test_a_running_turn_whose_lease_ran_out_is_claimed_again_and_a_finished_one_never():
    lost = TurnFactory(status=TurnStatus.RUNNING, attempts=1, lease_until=timezone.now() - timedelta(seconds=1))
    done = TurnFactory(status=TurnStatus.COMPLETED)
    parked = TurnFactory(status=TurnStatus.PARKED)

    taken_up = claim_turn(lost.pk)

    assert taken_up is not None and taken_up.attempts == 2
    assert claim_turn(done.pk) is None
    assert claim_turn(parked.pk) is None
    assert claim_turn("turn_does_not_exist") is None
