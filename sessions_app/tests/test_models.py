"""Constraints that keep stored state consistent whatever code writes it."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from agent_platform.tests.factories import PrincipalFactory
from sessions_app.maintenance import prune_log_lines
from sessions_app.models import EvalRun, EvalRunStatus, FileScope, LogLine, Session, StoredFile
from sessions_app.tests.factories import AgentFactory, SessionFactory

pytestmark = pytest.mark.django_db


def test_session_ids_are_random_and_prefixed():
    first, second = SessionFactory(), SessionFactory()
    assert first.id.startswith("ses_") and second.id.startswith("ses_")
    assert first.id != second.id


def test_a_session_always_belongs_to_its_principals_tenant(alice, mallory):
    session = Session(principal=alice, agent=AgentFactory())
    session.save()
    assert session.tenant == alice.tenant
    with pytest.raises(ValueError, match="tenant"):
        Session(principal=alice, tenant=mallory.tenant, agent=AgentFactory()).save()


def test_a_continuation_key_names_one_session_per_agent_principal_and_channel(alice, mallory):
    agent = AgentFactory()
    SessionFactory(agent=agent, principal=alice, channel="slack", continuation_key="T1/C1/171.1")
    SessionFactory(agent=agent, principal=alice, channel="slack", continuation_key="")
    SessionFactory(agent=agent, principal=alice, channel="slack", continuation_key="")
    SessionFactory(agent=agent, principal=mallory, channel="slack", continuation_key="T1/C1/171.1")
    SessionFactory(agent=agent, principal=alice, channel="web", continuation_key="T1/C1/171.1")
    with pytest.raises(IntegrityError), transaction.atomic():
        SessionFactory(agent=agent, principal=alice, channel="slack", continuation_key="T1/C1/171.1")


def test_a_session_scoped_file_needs_a_session_and_a_deployment_file_must_not_have_one():
    session = SessionFactory()
    common = {"tenant": session.tenant, "agent": session.agent, "content": b"x", "etag": "1"}
    with pytest.raises(IntegrityError), transaction.atomic():
        StoredFile.objects.create(scope=FileScope.SESSION, path="a.txt", **common)
    with pytest.raises(IntegrityError), transaction.atomic():
        StoredFile.objects.create(scope=FileScope.DEPLOYMENT, session=session, path="a.txt", **common)
    StoredFile.objects.create(scope=FileScope.DEPLOYMENT, path="a.txt", **common)
    with pytest.raises(IntegrityError), transaction.atomic():
        StoredFile.objects.create(scope=FileScope.DEPLOYMENT, path="a.txt", **common)


def test_one_active_eval_run_per_agent_and_tenant():
    principal = PrincipalFactory()
    agent = AgentFactory()
    EvalRun.objects.create(tenant=principal.tenant, agent=agent, status=EvalRunStatus.COMPLETED)
    EvalRun.objects.create(tenant=principal.tenant, agent=agent, status=EvalRunStatus.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        EvalRun.objects.create(tenant=principal.tenant, agent=agent, status=EvalRunStatus.QUEUED)
    EvalRun.objects.create(tenant=PrincipalFactory().tenant, agent=agent, status=EvalRunStatus.QUEUED)


def test_pruning_keeps_the_newest_log_lines():
    LogLine.objects.bulk_create(LogLine(level="INFO", logger="t", message=str(n)) for n in range(10))
    assert prune_log_lines(keep=4) == 6
    assert sorted(LogLine.objects.values_list("message", flat=True)) == ["6", "7", "8", "9"]
    assert prune_log_lines(keep=4) == 0
