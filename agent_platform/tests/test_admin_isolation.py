"""Tenant staff see their own tenant's rows in the admin, and nothing else."""

from __future__ import annotations

import pytest
from django.contrib.admin import site
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from agent_platform.models import ApiToken, Principal
from agent_platform.signals import TENANT_STAFF_GROUP
from agent_platform.tests.factories import admin_url, issue_token
from agents.events import EventType
from agents.models import Revision
from agents.secrets import set_secret
from sessions_app.eventlog import append_event
from sessions_app.models import (
    ABAssignment,
    Approval,
    Artifact,
    EvalRun,
    KVEntry,
    LogLine,
    Reminder,
    ScheduleFire,
    Session,
    StoredFile,
    WebhookDelivery,
    WebhookSubscription,
)
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(django_user_model):
    """An admin client logged in as a staff account linked to a principal of ``principal.tenant``."""

    def make(principal: Principal) -> Client:
        user = django_user_model.objects.create_user(username=f"{principal.name}-staff", is_staff=True)
        user.groups.add(Group.objects.get(name=TENANT_STAFF_GROUP))
        principal.user = user
        principal.save()
        client = Client()
        client.force_login(user)
        return client

    return make


def _rows_for(principal: Principal, agent) -> Session:
    """One row of every tenant-scoped model, each showing the tenant's slug or session id."""
    tenant = principal.tenant
    session = SessionFactory(principal=principal, agent=agent, title=f"{tenant.slug} session")
    turn = TurnFactory(session=session)
    append_event(session.id, EventType.SESSION_STARTED, turn_id=turn.id)
    issue_token(principal, f"{tenant.slug} deploy token")
    Approval.objects.create(
        session=session, turn=turn, call_id=f"call-{tenant.slug}", tool_name="close", args_sha256="0"
    )
    Artifact.objects.create(session=session, kind="report", name=f"{tenant.slug}-report.pdf", content=b"%PDF")
    ABAssignment.objects.create(session=session, agent=agent, experiment="tone", arm="warm")
    deployed = AgentFactory(slug=f"{tenant.slug}-deployed", tenant=tenant, source="deployment", path="")
    Revision.objects.create(agent=deployed, hash="0" * 64, status="ready", archive="x")
    Reminder.objects.create(session=session, message="ping", fire_at=timezone.now())
    KVEntry.objects.create(tenant=tenant, agent=agent, key=f"{tenant.slug}-key", value=1)
    StoredFile.objects.create(
        tenant=tenant, agent=agent, session=session, path=f"{tenant.slug}/notes.md", content=b"", etag="e"
    )
    EvalRun.objects.create(tenant=tenant, agent=agent, principal=principal)
    LogLine.objects.create(level="INFO", logger="test", message=f"{tenant.slug} log line", tenant=tenant)
    ScheduleFire.objects.create(
        agent=agent, tenant=tenant, schedule_id=f"{tenant.slug}-digest", scheduled_for=timezone.now()
    )
    own_agent = AgentFactory(slug=f"{tenant.slug}-bot", tenant=tenant, source="deployment")
    set_secret(own_agent, f"{tenant.slug.upper()}_TOKEN", f"{tenant.slug}-secret-value")
    url = f"https://{tenant.slug}.example.com/hook"
    subscription = WebhookSubscription.objects.create(tenant=tenant, url=url, events=["*"])
    WebhookDelivery.objects.create(
        target=f"subscription:{subscription.pk}",
        subscription=subscription,
        url=url,
        session=session,
        event_index=0,
        event_type="session.started",
        payload={},
    )
    return session


@pytest.fixture
def two_tenants(alice, mallory):
    agent = AgentFactory(slug="weather")
    return _rows_for(alice, agent), _rows_for(mallory, agent)


SCOPED_APPS = {"agent_platform", "agents", "sessions_app"}
MODEL_PAGES = sorted(
    f"{model._meta.app_label}/{model._meta.model_name}"
    for model in site._registry
    if model._meta.app_label in SCOPED_APPS
)


def test_every_platform_model_is_in_the_admin():
    assert len(MODEL_PAGES) == 20


@pytest.mark.parametrize("page", MODEL_PAGES)
def test_staff_lists_show_only_their_tenants_rows(staff_client, alice, two_tenants, page):
    ours, theirs = two_tenants
    response = staff_client(alice).get(f"/admin/{page}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "umbrella" not in html
    assert theirs.id not in html
    assert "mallory" not in html
    if page != "agents/agent":  # the shared agent has no tenant in its row
        assert "acme" in html or ours.id in html


@pytest.mark.parametrize("page", MODEL_PAGES)
def test_a_superuser_sees_every_tenants_rows(admin_client, two_tenants, page):
    html = admin_client.get(f"/admin/{page}/").content.decode()
    if page != "agents/agent":
        assert ("umbrella" in html or two_tenants[1].id in html) and ("acme" in html or two_tenants[0].id in html)


def test_staff_see_their_own_sessions_in_the_list(staff_client, alice, two_tenants):
    ours, _ = two_tenants
    response = staff_client(alice).get("/admin/sessions_app/session/")
    assert response.status_code == 200
    assert ours.id in response.content.decode()


def test_another_tenants_session_page_is_not_found_for_staff(staff_client, alice, two_tenants):
    _, theirs = two_tenants
    response = staff_client(alice).get(admin_url(theirs, "change"), follow=True)
    html = response.content.decode()
    assert "umbrella session" not in html
    assert "doesn\u2019t exist" in html or "doesn't exist" in html


def test_staff_cannot_edit_another_tenants_session_by_posting(staff_client, alice, two_tenants):
    _, theirs = two_tenants
    staff_client(alice).post(admin_url(theirs, "change"), {"title": "pwned", "status": "failed"})
    theirs.refresh_from_db()
    assert theirs.title == "umbrella session"


def test_foreign_key_choices_offer_only_the_tenants_rows(staff_client, alice, bob, two_tenants):
    html = staff_client(alice).get("/admin/agent_platform/apitoken/add/").content.decode()
    assert "acme/alice" in html and "acme/bob" in html
    assert "umbrella/mallory" not in html


def test_a_staff_account_without_a_principal_sees_no_rows(django_user_model, two_tenants):
    user = django_user_model.objects.create_user(username="drifter", is_staff=True)
    user.groups.add(Group.objects.get(name=TENANT_STAFF_GROUP))
    client = Client()
    client.force_login(user)
    html = client.get("/admin/sessions_app/session/").content.decode()
    assert "0 sessions" in html


def test_events_are_read_only_in_the_admin(staff_client, alice, two_tenants):
    client = staff_client(alice)
    assert client.get("/admin/sessions_app/event/add/").status_code == 403


def test_a_token_added_in_the_admin_is_shown_once_and_works(staff_client, alice):
    client = staff_client(alice)
    response = client.post(
        "/admin/agent_platform/apitoken/add/",
        {"principal": alice.pk, "name": "from admin", "scopes": '["read"]', "expires_at_0": "", "expires_at_1": ""},
        follow=True,
    )
    html = response.content.decode()
    row = ApiToken.objects.get(name="from admin")
    assert row.scopes == ["read"] and row.expires_at is None
    start = html.index(row.prefix)
    token = html[start : start + 47]
    assert token.startswith("apt_")
    assert row.principal == alice
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/v1/me").json()["principal"] == "alice"
    assert api.post("/api/v1/tokens", {}, format="json").status_code == 403  # read only
    # The change page afterwards shows only the prefix.
    assert token not in client.get(admin_url(row, "change")).content.decode()


def test_a_token_with_an_unknown_scope_is_refused_in_the_admin(staff_client, alice):
    response = staff_client(alice).post(
        "/admin/agent_platform/apitoken/add/", {"principal": alice.pk, "name": "bad", "scopes": '["admin"]'}
    )
    assert response.status_code == 200  # the form again, with the error
    assert "A non-empty list of read, sessions, manage." in response.content.decode()
    assert not ApiToken.objects.filter(name="bad").exists()
