"""Deployed trees for the sandbox tests: written into the live AGENTS_DIR (which the live
worker serves) and registered as a tenant's deployment. Tree creation is this one fixture,
so that it can move to the revision store without touching the tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from agents.models import Agent, AgentSource
from agents.sandbox import bwrap_path
from agents.tests.trees import write_tree

_numbers = itertools.count()


@pytest.fixture
def deployed(live_agents_dir) -> Callable[..., str]:
    """``deployed(principal, files)`` -> the slug of a new deployment of ``files`` by the principal's tenant."""
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap (apt-get install bubblewrap)")

    def make(principal, files: dict[str, str]) -> str:
        slug = f"deployed-{next(_numbers)}"
        folder = write_tree(live_agents_dir / slug, files)
        Agent.objects.create(slug=slug, tenant=principal.tenant, source=AgentSource.DEPLOYMENT, path=str(folder))
        return slug

    return make
