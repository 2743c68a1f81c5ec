"""docs/deployments.md's step-by-step commands work as written: read from its first
plain code block, run in order by one bash against a real server (daphne on the test
database, turns on the live worker) with a tenant staff token in ``$TOKEN``."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_platform.tests.daphne import Daphne, serve_live
from agent_platform.tests.factories import issue_token, staff_user_for
from agents.tests.deploying import TREES

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "deployments.md"
MARK = "@@@ next command @@@"


def page_commands() -> list[str]:
    """The commands of the page's first code block without a language (comments left out)."""
    block, inside = [], False
    for line in PAGE.read_text().splitlines():
        if line.startswith("```"):
            if inside:
                return block
            inside = line == "```"
            continue
        if inside and line.strip() and not line.startswith("#"):
            block.append(line)
    return block


@pytest.fixture(scope="module")
def daphne(celery_worker_process, live_agents_dir, tmp_path_factory) -> Iterator[Daphne]:
    store = json.dumps({"location": str(celery_worker_process.var_dir / "deployments")})
    yield from serve_live(
        tmp_path_factory,
        celery_worker_process,
        live_agents_dir,
        "/healthz",
        PLATFORM_DEPLOYMENT_STORAGE_OPTIONS=store,
    )


def test_the_deployment_guide_runs_as_written(daphne, live, alice, tmp_path):
    commands = page_commands()
    assert any("/activate" in command for command in commands) and any("-F archive=@" in c for c in commands)
    staff_user_for(alice)
    shutil.copytree(TREES / "v1", tmp_path / "helpdesk", ignore=shutil.ignore_patterns("__pycache__"))
    script = f"\necho '{MARK}'\n".join(c.replace("localhost:8000", f"127.0.0.1:{daphne.port}") for c in commands)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "TOKEN": issue_token(alice)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(out) for out in done.stdout.split(MARK) if out.strip()]
    assert not [out for out in outputs if "error" in out], outputs
    created, first_activation, session, second_activation, listed, rolled_back = outputs
    assert created["slug"] == "helpdesk" and first_activation["active"]
    assert session["sessionId"].startswith("ses_")
    assert second_activation["id"] != first_activation["id"]
    assert [d["id"] for d in listed["deployments"]] == [second_activation["id"], first_activation["id"]]
    assert rolled_back["id"] == first_activation["id"] and rolled_back["active"]


def test_daphne_takes_an_upload_larger_than_a_json_body_and_still_caps_json(daphne, live, alice, tmp_path):
    """The body cap of deployment uploads is PLATFORM_DEPLOY_MAX_BYTES (20 MiB), every other
    route keeps PLATFORM_MAX_BODY_BYTES (1 MiB): both in daphne itself and behind it."""
    import os
    import urllib.error
    import urllib.request

    staff_user_for(alice)
    token = issue_token(alice)
    tree = tmp_path / "big"
    shutil.copytree(TREES / "v1", tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "agent" / "lib").mkdir()
    (tree / "agent" / "lib" / "noise.bin").write_bytes(os.urandom(1_500_000))  # incompressible
    from agents.tests.deploying import tar_gz

    body = tar_gz(tree)
    assert len(body) > 1024 * 1024

    def post(path: str, data: bytes, kind: str) -> int:
        request = urllib.request.Request(
            daphne.url + path, data=data, headers={"Authorization": f"Bearer {token}", "Content-Type": kind}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    assert post("/api/v1/agents", json.dumps({"slug": "bigbot"}).encode(), "application/json") == 201
    assert post("/api/v1/agents/bigbot/deployments", body, "application/gzip") == 201
    assert post("/api/v1/tokens", json.dumps({"name": "x" * 1_200_000}).encode(), "application/json") == 413
