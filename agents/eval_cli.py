"""``agent eval``: run an agent's eval cases in this process (``InProcessDriver``: no
server, no database) or through a running platform's routes (``--url``), print progress
on stderr, write JUnit XML, and answer the exit code (0 all passed, 1 not, 2 nothing
matched or bad usage)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from agents import eval_engine as engine
from agents.discovery import AgentSurface

Progress = Callable[[str], None]


class EvalUsageError(Exception):
    """Exit 2: nothing matched, or the server refused the request."""


def progress_line(result: dict[str, Any], done: int, total: int) -> str:
    duration = result.get("durationMs")
    took = f" {duration / 1000:.1f}s" if isinstance(duration, int) else ""
    why = f" - {result['error']}" if result.get("error") and result["status"] != engine.PASSED else ""
    return f"[{done}/{total}] {result['status']:<9} {result['id']}{took}{why}"


def run_in_process(surface: AgentSurface, filter_ids: list[str], tags: list[str], progress: Progress) -> dict[str, Any]:
    """Run the matching cases here; answers a snapshot shaped like the routes' one.

    Raises:
        EvalUsageError: no case matches.
    """
    case_ids = engine.select_cases(surface, filter_ids, tags)
    if not case_ids:
        raise EvalUsageError("no eval case matches the filters")
    created = datetime.now(UTC)
    finished: list[dict[str, Any]] = []

    def on_result(result: dict[str, Any]) -> None:
        finished.append(result)
        progress(progress_line(result, len(finished), len(case_ids)))

    progress(f"running {len(case_ids)} case(s) of {surface.slug} in this process")
    cases = asyncio.run(engine.run_cases(surface, case_ids, lambda case_id: engine.InProcessDriver(surface), on_result))
    return {
        "runId": f"local_{uuid.uuid4().hex[:12]}",
        "status": "completed",
        "createdAt": created.isoformat(),
        "finishedAt": datetime.now(UTC).isoformat(),
        "filterIds": filter_ids,
        "tags": tags,
        "summary": engine.summarize(cases),
        "cases": cases,
        "error": None,
    }


def _call(method: str, url: str, token: str | None, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - the operator's URL
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        try:
            return refused.code, json.loads(refused.read() or b"null")
        except ValueError:
            return refused.code, None


def run_remote(
    base_url: str,
    slug: str,
    token: str | None,
    filter_ids: list[str],
    tags: list[str],
    progress: Progress,
    poll_seconds: float = 0.3,
) -> dict[str, Any]:
    """Start a run through ``POST /<slug>/v1/dev/evals/runs`` and poll it to its end.

    Raises:
        EvalUsageError: the server answered 4xx (nothing matched, a run is running, bad token).
    """
    root = f"{base_url.rstrip('/')}/{slug}/v1/dev/evals/runs"
    body: dict[str, Any] = {"filterIds": filter_ids, "tags": tags}
    try:
        status, snapshot = _call("POST", root, token, body)
    except urllib.error.URLError as unreachable:
        raise EvalUsageError(f"cannot reach {base_url}: {unreachable.reason}") from unreachable
    if status != 202:
        message = (snapshot or {}).get("error", {}) if isinstance(snapshot, dict) else {}
        text = message.get("message") if isinstance(message, dict) else message
        raise EvalUsageError(f"the server answered {status}: {text or snapshot}")
    total = snapshot["summary"]["total"]
    progress(f"run {snapshot['runId']}: {total} case(s) of {slug} on {base_url}")
    shown: set[str] = set()
    while True:
        for case in snapshot["cases"]:
            if case["status"] in engine.FINISHED and case["id"] not in shown:
                shown.add(case["id"])
                progress(progress_line(case, len(shown), total))
        if snapshot["status"] != "running":
            return dict(snapshot)
        time.sleep(poll_seconds)
        status, snapshot = _call("GET", f"{root}/{snapshot['runId']}", token)
        if status != 200:
            raise EvalUsageError(f"the server answered {status} while polling the run")


def junit_xml(snapshot: dict[str, Any], suite: str) -> str:
    """One testcase per case, named by its id; a failure element per case that did not pass
    (``error`` for error and timeout, ``skipped`` for cancelled)."""
    cases = snapshot["cases"]
    summary = snapshot["summary"]
    failures = summary["failed"] + summary["flaky"]
    errors = summary["error"] + summary["timeout"]
    root = ElementTree.Element(
        "testsuites", name=f"agent eval {suite}", tests=str(len(cases)), failures=str(failures), errors=str(errors)
    )
    total = sum((case.get("durationMs") or 0) for case in cases) / 1000
    node = ElementTree.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(failures),
        errors=str(errors),
        skipped=str(summary["cancelled"] + summary["pending"]),
        time=f"{total:.3f}",
    )
    for case in cases:
        element = ElementTree.SubElement(
            node, "testcase", name=case["id"], classname=suite, time=f"{(case.get('durationMs') or 0) / 1000:.3f}"
        )
        status = case["status"]
        failed = [a["message"] for a in case.get("assertions", []) if not a["ok"]]
        text = "\n".join(failed or [case.get("error") or status])
        if status in (engine.FAILED, engine.FLAKY):
            ElementTree.SubElement(element, "failure", message=case.get("error") or status, type=status).text = text
        elif status in (engine.ERROR, engine.TIMEOUT):
            ElementTree.SubElement(element, "failure", message=case.get("error") or status, type=status).text = text
        elif status != engine.PASSED:
            ElementTree.SubElement(element, "skipped", message=status)
        if case.get("sessionIds"):
            ElementTree.SubElement(element, "system-out").text = "sessions: " + ", ".join(case["sessionIds"])
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def exit_code(snapshot: dict[str, Any]) -> int:
    """0 iff every selected case passed."""
    cases = snapshot["cases"]
    return 0 if cases and all(case["status"] == engine.PASSED for case in cases) else 1


def write_junit(path: Path, snapshot: dict[str, Any], suite: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(snapshot, suite))
