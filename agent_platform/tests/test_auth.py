from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_platform.models import ApiToken
from agent_platform.tests.factories import issue_token

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"


def test_a_valid_token_names_its_principal_and_tenant(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(alice)}")
    response = client.get(ME)
    assert response.status_code == 200
    assert response.json()["tenant"] == "acme"
    assert response.json()["principal"] == "alice"


def test_no_token_is_401_with_a_bearer_challenge():
    response = APIClient().get(ME)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"] == "not_authenticated"


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer a b", "Basic dXNlcjpwYXNz", "Token apt_x", "Bearer apt_forgedforgedforgedforged"],
)
def test_a_malformed_or_forged_authorization_header_is_401(header, alice):
    issue_token(alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(ME)
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_failed"


def test_a_revoked_token_is_401(alice):
    token = issue_token(alice)
    ApiToken.objects.get(principal=alice).revoke()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(ME).status_code == 401


def test_only_the_hash_and_a_visible_prefix_are_stored(alice):
    token = issue_token(alice)
    row = ApiToken.objects.get(principal=alice)
    assert token.startswith(row.prefix)
    assert len(row.prefix) < len(token) // 3
    stored = [str(value) for value in ApiToken.objects.filter(pk=row.pk).values().first().values()]
    assert all(token not in value for value in stored)


def test_using_a_token_records_when_it_was_last_used(alice):
    token = issue_token(alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    before = timezone.now()
    client.get(ME)
    assert ApiToken.objects.get(principal=alice).last_used_at >= before


class TestDevMode:
    @pytest.fixture(autouse=True)
    def dev_mode(self, settings):
        settings.PLATFORM = {**settings.PLATFORM, "DEV": True}

    def test_a_loopback_call_without_a_token_is_the_local_dev_principal(self):
        response = APIClient(REMOTE_ADDR="127.0.0.1").get(ME)
        assert response.status_code == 200
        assert response.json() == {"tenant": "local", "principal": "dev", "tokenPrefix": None}

    def test_ipv6_loopback_counts_as_local(self):
        assert APIClient(REMOTE_ADDR="::1").get(ME).status_code == 200

    def test_a_call_from_another_address_still_needs_a_token(self):
        assert APIClient(REMOTE_ADDR="10.1.2.3").get(ME).status_code == 401

    def test_a_forwarded_call_through_a_local_proxy_still_needs_a_token(self):
        client = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
        assert client.get(ME).status_code == 401

    def test_a_token_given_in_dev_mode_is_still_checked(self, alice):
        client = APIClient(REMOTE_ADDR="127.0.0.1")
        client.credentials(HTTP_AUTHORIZATION="Bearer apt_wrong")
        assert client.get(ME).status_code == 401
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(alice)}")
        assert client.get(ME).json()["principal"] == "alice"


def test_outside_dev_mode_a_loopback_call_without_a_token_is_401():
    assert APIClient(REMOTE_ADDR="127.0.0.1").get(ME).status_code == 401


def test_a_token_in_use_is_refused_as_soon_as_it_is_revoked(alice):
    token = issue_token(alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(ME).status_code == 200  # remembered from here on
    ApiToken.objects.get(principal=alice).revoke()
    assert client.get(ME).status_code == 401


def test_a_remembered_token_is_not_looked_up_again(alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(alice)}")
    client.get(ME)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(ME).status_code == 200
    assert not [query for query in queries if "apitoken" in query["sql"]]


def test_a_remembered_token_is_looked_up_again_after_its_time(alice, settings, monkeypatch):
    from agent_platform import auth

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(alice)}")
    assert client.get(ME).status_code == 200
    ApiToken.objects.filter(principal=alice).update(revoked_at=timezone.now())  # behind this process's back
    later = auth._clock() + settings.PLATFORM.get("TOKEN_CACHE_SECONDS", 5) + 1
    monkeypatch.setattr(auth, "_clock", lambda: later)
    assert client.get(ME).status_code == 401
