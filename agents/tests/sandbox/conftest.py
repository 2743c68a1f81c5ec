"""Deployed trees for the sandbox tests: uploaded as a tenant's deployment (the revision
store the live worker reads too) and activated. Tree creation is this one fixture."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from agents.sandbox import bwrap_path
from agents.tests.deploying import deployed_agent
from agents.tests.trees import write_tree


@pytest.fixture
def deployed(tmp_path_factory) -> Callable[..., str]:
    """``deployed(principal, files)`` -> the slug of an active deployment of ``files`` by the
    principal's tenant."""
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap (apt-get install bubblewrap)")

    def make(principal, files: dict[str, str]) -> str:
        slug = "deployed-" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
        folder = tmp_path_factory.mktemp("tree") / slug
        write_tree(folder, files)
        deployed_agent(principal.tenant, slug, folder)
        return slug

    return make
