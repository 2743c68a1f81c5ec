"""Deployed trees for the sandbox tests: written into the live AGENTS_DIR (which the live
worker serves) and registered as a tenant's deployment. Tree creation is this one fixture,
so that it can move to the revision store without touching the tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from agents.models import Agent, AgentSource
from agents.sandbox import bwrap_path
from agents.tests.trees import write_tree


@pytest.fixture
def deployed(live_agents_dir) -> Callable[..., str]:
    """``deployed(principal, files)`` -> the slug of a deployment of ``files`` by the principal's
    tenant. The same files keep their folder (and slug) from test to test, so the processes
    that discovered them once (the live worker's sandbox runners) serve them again."""
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap (apt-get install bubblewrap)")

    def make(principal, files: dict[str, str]) -> str:
        slug = "deployed-" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
        folder = live_agents_dir / slug
        if not folder.is_dir():
            write_tree(folder, files)
        Agent.objects.create(slug=slug, tenant=principal.tenant, source=AgentSource.DEPLOYMENT, path=str(folder))
        return slug

    return make
