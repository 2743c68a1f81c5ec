"""Shared test set-up: the personas every tenancy test uses, and API clients for them.

Personas: alice and bob belong to tenant ``acme``; mallory belongs to ``umbrella``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from agent_platform.models import Principal
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, issue_token


@pytest.fixture(autouse=True)
def _production_auth(settings):
    """Tests run as a deployed platform: no anonymous dev access unless a test asks for it."""
    settings.PLATFORM = {**settings.PLATFORM, "DEV": False}


@pytest.fixture
def alice(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="acme"), name="alice")


@pytest.fixture
def bob(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="acme"), name="bob")


@pytest.fixture
def mallory(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="umbrella"), name="mallory")


@pytest.fixture
def client_for(db) -> Callable[[Principal], APIClient]:
    """An API client that sends a fresh bearer token of the given principal."""

    def make(principal: Principal) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(principal)}")
        return client

    return make
