"""Upload-to-active time of a deployment (docs/deployments.md): a generated agent with 200
tools (bench/discovery.py's), packed as a .tar.gz and, each run with different
instructions so that it is a new revision, uploaded (streamed to disk, unpacked, hashed,
stored, validated in a clean child process), activated, and asked for once on its new
revision (the web process unpacks nothing then, but discovers the tree on that first
request). Through the distributed form's daphne, as a tenant's staff member would."""

from __future__ import annotations

import http.client
import json
import statistics
import tarfile
import time
from pathlib import Path
from typing import Any

from discovery import generate
from harness import TIMEOUT, BenchError, manage
from table import Row, ms
from turns import Stack

SLUG = "deploy-bench"
TOOLS = 200


def _call(port: int, token: str, method: str, path: str, body: bytes | None, kind: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": kind}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def bench_deploy(stack: Stack, work: Path, runs: int) -> list[Row]:
    manage(["tenant", "add-staff", "bench-run", "bench-deployer"], stack.env)
    token = manage(["token", "create", "bench-run", "bench-deployer"], stack.env).strip().splitlines()[-1].strip()
    created = _call(
        stack.port, token, "POST", "/api/v1/agents", json.dumps({"slug": SLUG}).encode(), "application/json"
    )
    if created[0] != 201:
        raise BenchError(f"POST /api/v1/agents answered {created}")
    folder = work / "deploy-agent"
    generate(folder, tools=TOOLS, skills=0, hooks=0)
    uploads, activations, firsts, totals = [], [], [], []
    for n in range(runs):
        (folder / "agent" / "instructions.md").write_text(f"Benchmark agent, revision {n}.")
        archive = work / f"deploy-{n}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(folder / "agent", arcname="agent")
        body = archive.read_bytes()
        began = time.perf_counter()
        status, revision = _call(
            stack.port, token, "POST", f"/api/v1/agents/{SLUG}/deployments", body, "application/gzip"
        )
        uploaded = time.perf_counter()
        if status != 201:
            raise BenchError(f"the upload answered {status}: {revision}")
        path = f"/api/v1/agents/{SLUG}/deployments/{revision['id']}/activate"
        status, _ = _call(stack.port, token, "POST", path, None, "application/json")
        activated = time.perf_counter()
        if status != 200:
            raise BenchError(f"the activation answered {status}")
        status, tool = _call(stack.port, token, "GET", f"/{SLUG}/v1/tools/tool_0", None, "application/json")
        served = time.perf_counter()
        if status != 200:
            raise BenchError(f"the new revision's first request answered {status}: {tool}")
        uploads.append(ms(uploaded - began))
        activations.append(ms(activated - uploaded))
        firsts.append(ms(served - activated))
        totals.append(ms(served - began))
    size = len(body) // 1024
    return [
        Row(f"deploy {TOOLS} tools ({size} KiB tar.gz): upload + validation p50", statistics.median(uploads), "ms"),
        Row(f"deploy {TOOLS} tools: activate p50", statistics.median(activations), "ms"),
        Row(f"deploy {TOOLS} tools: first request on the new revision p50", statistics.median(firsts), "ms"),
        Row(f"deploy {TOOLS} tools: upload to active and served p50", statistics.median(totals), "ms"),
    ]
