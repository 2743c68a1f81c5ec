from __future__ import annotations

from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_covers_the_api_routes():
    response = APIClient().get("/api/schema")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = set(schema["paths"])
    for route in [
        "/api/v1/me",
        "/api/v1/tokens",
        "/api/v1/agents",
        "/{agent_slug}/v1/health",
        "/{agent_slug}/v1/sessions",
        "/{agent_slug}/v1/session/{session_id}",
        "/{agent_slug}/v1/session/{session_id}/events",
        "/{agent_slug}/v1/session/{session_id}/fork",
    ]:
        assert route in paths, route


def test_the_schema_generates_without_warnings():
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert "openapi" in out.getvalue()


def test_the_schema_is_openapi_3_1_and_lists_the_artifact_routes():
    out = StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    assert schema["openapi"].startswith("3.1")
    assert {"/{agent_slug}/v1/artifacts", "/{agent_slug}/v1/artifacts/{artifact_id}/content"} <= set(schema["paths"])


def test_every_operation_documents_the_errors_the_platform_can_answer():
    schema = yaml.safe_load(APIClient().get("/api/schema").content)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"401", "503"} <= codes, (method, path)
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
