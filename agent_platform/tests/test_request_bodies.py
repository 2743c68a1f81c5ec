"""Malformed, mistyped, deep, huge and unstorable bodies get a clear 4xx on every write
route, and nothing is created (RELIABILITY.md §1 row 12; the oversized cases over a
real socket are in test_body_limit_daphne.py)."""

from __future__ import annotations

import json

import pytest

from agent_platform.models import ApiToken
from sessions_app.models import Session, Turn

pytestmark = pytest.mark.django_db

WRITE_ROUTES = ["/weather/v1/session", "/weather/v1/tools/get_weather", "/api/v1/tokens"]

MALFORMED = {
    "truncated": '{"message": "hi"',
    "trailing garbage": '{"message": "hi"} x',
    "single quotes": "{'message': 'hi'}",
    "NaN": '{"message": "hi", "n": NaN}',
    "bare word": "hello",
    "invalid UTF-8": b'{"message": "\xff\xfe"}',
}

UNSTORABLE = {
    "NUL in a value": {"message": "a\x00b"},
    "NUL in a key": {"message": "hi", "workspaceFiles": {"a\x00b": "x"}},
    "lone surrogate in a key": '{"message": "hi", "workspaceFiles": {"a\\ud800": "x"}}',
    "lone surrogate in nested input": '{"input": {"city": "\\udc00"}}',
    "deep nesting": '{"message": "hi", "input": ' + "[" * 70 + "]" * 70 + "}",
    "very deep nesting": "[" * 100_000 + "]" * 100_000,
}

HUGE_WITHIN_LIMIT = {
    "message as a huge array": {"message": list(range(100_000))},
    "too many workspace files": {"message": "hi", "workspaceFiles": {f"f{i}.txt": "" for i in range(101)}},
    "huge tool input array": {"input": {"city": ["Lyon"] * 100_000}},
    "a long workspace file name": {"message": "hi", "workspaceFiles": {"a" * 64: "x"}},
}


def _nothing_created(alice) -> None:
    assert not Session.objects.exists()
    assert not Turn.objects.exists()
    assert ApiToken.objects.filter(principal=alice).count() == 1  # the client's own


def _body(value: object) -> str | bytes:
    return value if isinstance(value, (str, bytes)) else json.dumps(value)


@pytest.mark.parametrize("route", WRITE_ROUTES)
@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_json_is_400_parse_error(alice, client_for, route, name):
    response = client_for(alice).post(route, MALFORMED[name], content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "parse_error"
    _nothing_created(alice)


@pytest.mark.parametrize("route", WRITE_ROUTES)
@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", "text/xml"]
)
def test_a_body_that_is_not_json_is_415(alice, client_for, route, content_type):
    response = client_for(alice).post(route, "message=hi", content_type=content_type)
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"
    _nothing_created(alice)


@pytest.mark.parametrize("route", WRITE_ROUTES)
@pytest.mark.parametrize("name", UNSTORABLE)
def test_unstorable_or_too_deep_json_is_400_not_500(alice, client_for, route, name):
    response = client_for(alice).post(route, _body(UNSTORABLE[name]), content_type="application/json")
    assert response.status_code == 400, response.content
    assert "Traceback" not in response.content.decode()
    _nothing_created(alice)


@pytest.mark.parametrize("route", WRITE_ROUTES)
@pytest.mark.parametrize("name", HUGE_WITHIN_LIMIT)
def test_huge_json_within_the_size_limit_is_refused_by_validation(alice, client_for, route, name):
    body = _body(HUGE_WITHIN_LIMIT[name])
    assert len(body) < 1024 * 1024
    response = client_for(alice).post(route, body, content_type="application/json")
    # The token route ignores fields it does not know; everything else must refuse.
    if route == "/api/v1/tokens":
        assert response.status_code == 201
        return
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"] == "invalid"
    assert not Session.objects.exists() and not Turn.objects.exists()


@pytest.mark.parametrize("route", WRITE_ROUTES)
def test_a_body_over_the_limit_is_413(alice, client_for, route, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    body = json.dumps({"message": "x" * 5000, "input": {"city": "x" * 5000}, "name": "x" * 5000})
    response = client_for(alice).post(route, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"error": "body_too_large", "message": "The request body is too large."}
    _nothing_created(alice)


def test_a_workspace_path_must_be_canonical(alice, client_for):
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi", "workspaceFiles": {"notes//a.md": "x"}}, format="json"
    )
    assert response.status_code == 400
    assert "send 'notes/a.md'" in response.json()["message"]


@pytest.mark.parametrize("value", ["", "é", "a\tb", "x" * 201])
def test_an_idempotency_key_outside_printable_ascii_is_400(alice, client_for, value):
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY=value
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["message"]
    assert not Session.objects.exists()


@pytest.mark.parametrize("query", ["limit=", "limit=1&limit=2", "limit=-1", "limit=1e3", "limit=%EF%BC%91"])
def test_a_query_integer_must_be_one_plain_non_negative_number(alice, client_for, query):
    response = client_for(alice).get(f"/weather/v1/sessions?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"
