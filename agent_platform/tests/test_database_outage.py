"""With the database unreachable, routes answer 503 JSON, never a 500 page."""

from __future__ import annotations

import socket

import pytest
from django.db import connection
from rest_framework.test import APIClient


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def database_down():
    if connection.vendor != "postgresql":
        pytest.skip("simulated by pointing the Postgres connection at a closed port")
    original = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = unused_port()
    yield
    connection.close()
    connection.settings_dict["PORT"] = original


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", ["/healthz", "/weather/v1/health", "/api/v1/me", "/weather/v1/sessions"])
def test_routes_answer_503_json_while_the_database_is_down(database_down, route):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer apt_anything")
    response = client.get(route)
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"
    assert response["Retry-After"] == "5"
