"""With the database unreachable, routes answer 503 JSON, never a 500 page."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", ["/healthz", "/weather/v1/health", "/api/v1/me", "/weather/v1/sessions"])
def test_routes_answer_503_json_while_the_database_is_down(database_down, route):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer apt_anything")
    response = client.get(route)
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"
    assert response["Retry-After"] == "5"
