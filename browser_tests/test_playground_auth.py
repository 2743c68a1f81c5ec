"""The playground off loopback dev mode: a typed bearer token, or staff signed in
through Django's own login acting as their principal."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from agent_platform.tests.factories import issue_token
from browser_tests.conftest import assert_controls_labelled
from sessions_app.models import Session


def test_a_token_typed_into_the_page_is_used_for_the_api_and_the_stream(deployed_page, alice, screenshot):
    page = deployed_page
    page.goto("/lab/playground")
    expect(page.locator("#notice")).to_have_text("Enter an API token to use this agent.")
    assert_controls_labelled(page)
    screenshot(page, "token-asked")
    page.get_by_label("API token").fill(issue_token(alice))
    page.get_by_role("button", name="Use token").click()
    expect(page.locator("#agent-model")).to_contain_text("model test")
    page.get_by_label("Message").fill("with a token")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".bubble.agent .text")).to_have_text("echo: with a token")
    screenshot(page, "token-chat")
    assert Session.objects.get().principal == alice


def test_staff_sign_in_with_django_login_and_act_as_their_principal(deployed_page, alice, screenshot):
    user = get_user_model().objects.create_user("alice-staff", password="correct horse", is_staff=True)
    alice.user = user
    alice.save()
    page = deployed_page
    page.goto("/admin/login/?next=/lab/playground")
    page.get_by_label("Username").fill("alice-staff")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/lab/playground")
    expect(page.locator("#acting-as")).to_have_text("acting as acme/alice")
    expect(page.locator("#token-form")).to_be_hidden()
    page.get_by_label("Message").fill('/call close_issue {"issue": 3}')
    page.get_by_role("button", name="Send").click()
    card = page.locator(".tool-call[data-tool='close_issue']")
    card.get_by_role("button", name="Approve close_issue").click()
    expect(card.locator(".decision")).to_contain_text("approved by alice")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    screenshot(page, "staff-chat")
    assert Session.objects.get().principal == alice
