from __future__ import annotations

import pytest

from agent_platform.models import ApiToken
from agent_platform.tests.factories import issue_token

pytestmark = pytest.mark.django_db


def test_a_principal_lists_only_its_own_tokens(alice, bob, mallory, client_for):
    issue_token(bob, "bob's")
    issue_token(mallory, "mallory's")
    response = client_for(alice).get("/api/v1/tokens")
    assert response.status_code == 200
    names = [token["name"] for token in response.json()["tokens"]]
    assert names == ["test"]


def test_a_new_token_is_shown_once_and_works(alice, client_for):
    client = client_for(alice)
    created = client.post("/api/v1/tokens", {"name": "deploy"}, format="json")
    assert created.status_code == 201
    token = created.json()["token"]
    assert token.startswith(created.json()["prefix"])
    listed = client.get("/api/v1/tokens").json()["tokens"]
    assert token not in str(listed)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/me").json()["principal"] == "alice"


def test_a_token_name_of_the_wrong_type_is_400(alice, client_for):
    response = client_for(alice).post("/api/v1/tokens", {"name": {"nested": 1}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"
    assert "name" in response.json()["message"]


def test_malformed_json_is_400_and_a_form_body_is_415(alice, client_for):
    client = client_for(alice)
    broken = client.post("/api/v1/tokens", "{not json", content_type="application/json")
    assert broken.status_code == 400
    assert broken.json()["error"] == "parse_error"
    form = client.post("/api/v1/tokens", "name=x", content_type="application/x-www-form-urlencoded")
    assert form.status_code == 415


def test_an_oversized_body_is_413(alice, client_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    response = client_for(alice).post("/api/v1/tokens", {"name": "x" * 5000}, format="json")
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"


def test_revoking_another_tenants_token_is_404_and_leaves_it_working(alice, mallory, client_for):
    token = issue_token(mallory)
    prefix = ApiToken.objects.get(principal=mallory).prefix
    assert client_for(alice).delete(f"/api/v1/tokens/{prefix}").status_code == 404
    assert ApiToken.objects.get(prefix=prefix).revoked_at is None
    other = client_for(mallory)
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert other.get("/api/v1/me").status_code == 200


def test_revoking_ones_own_token_is_204(alice, client_for):
    client = client_for(alice)
    prefix = client.post("/api/v1/tokens", {}, format="json").json()["prefix"]
    assert client.delete(f"/api/v1/tokens/{prefix}").status_code == 204
    assert ApiToken.objects.get(prefix=prefix).revoked_at is not None


def test_one_token_is_shown_by_its_prefix_and_anothers_is_404(alice, mallory, client_for):
    client = client_for(alice)
    prefix = client.post("/api/v1/tokens", {"name": "mine"}, format="json").json()["prefix"]
    shown = client.get(f"/api/v1/tokens/{prefix}")
    assert shown.status_code == 200
    assert shown.json()["name"] == "mine" and "token" not in shown.json()
    assert client_for(mallory).get(f"/api/v1/tokens/{prefix}").status_code == 404


def test_the_token_list_comes_a_page_at_a_time_newest_first(alice, client_for):
    client = client_for(alice)
    for n in range(4):
        client.post("/api/v1/tokens", {"name": f"t{n}"}, format="json")
    seen, url = [], "/api/v1/tokens?limit=2"
    while url:
        page = client.get(url).json()
        assert len(page["tokens"]) <= 2
        seen += [token["name"] for token in page["tokens"]]
        url = page["next"]
    assert seen == ["t3", "t2", "t1", "t0", "test"]
