"""The repository documents itself: ``docs/`` names every route, event type, SDK helper
and setting the code has, its links lead somewhere, and nothing points outside the
repository. Adding a route, an event type, a helper or a setting without documenting
it fails here, with what is missing."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.views.generic import RedirectView
from rest_framework.views import APIView

from agent_platform.conf import DEFAULTS
from agents import sdk
from agents.events import EventType
from agents.sdk import memory as sdk_memory
from sessions_app.routing import websocket_urlpatterns

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# How a URL parameter is written in docs/http.md. A new parameter name fails
# test_every_url_parameter_has_a_documented_spelling until it is added here.
PARAMETER_SPELLING = {
    "agent_slug": "<slug>",
    "session_id": ":id",
    "call_id": ":callId",
    "tool_name": ":name",
    "artifact_id": ":id",
    "prefix": ":prefix",
    "channel_name": "<channel>",
    "route_path": "<path>",
    "reminder_id": ":id",
    "schedule_id": ":id",
    "run_id": ":runId",
    "tenant_slug": "<tenant>",
}
METHODS = ("get", "post", "put", "patch", "delete")
# Characters that continue a path: a documented path must not be the prefix of a longer one.
PATH_CHAR = r"[\w/:<>.-]"


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def _spelled(pattern: str) -> str:
    """A URLconf pattern (a route or a regex) as the docs write it: ``/<slug>/v1/session/:id``."""

    def spelling(match: re.Match[str]) -> str:
        name = match["group"] or match["converter"]
        return PARAMETER_SPELLING.get(name, f"<?{name}>")

    # A regex's named groups, or a route's converters, in one pass.
    parameter = r"\(\?P<(?P<group>\w+)>[^)]*\)\??|<(?:\w+:)?(?P<converter>\w+)>"
    return "/" + re.sub(parameter, spelling, pattern).replace("^", "").replace("$", "")


def _methods(callback: object) -> list[str]:
    """The HTTP methods a class-based view answers (none known for a plain function)."""
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view is None or not issubclass(view, APIView) or issubclass(view, RedirectView):
        return []
    return [method.upper() for method in METHODS if callable(getattr(view, method, None))]


def _routes(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[tuple[str, list[str]]]:
    """Every route of the URLconf as (path as the docs spell it, methods); the admin
    site counts as one route."""
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if getattr(entry, "app_name", None) == "admin":
                yield _spelled(route), []
            else:
                yield from _routes(entry.url_patterns, route)
        else:
            yield _spelled(route), _methods(entry.callback)


def _mentions(text: str, path: str, method: str | None = None) -> bool:
    """Whether ``text`` names ``path`` (not as the start of a longer path), with
    ``method`` before it on the same line when given."""
    exact = rf"(?<!{PATH_CHAR}){re.escape(path)}(?!{PATH_CHAR})"
    if method is None:
        return re.search(exact, text) is not None
    return re.search(rf"(?m)^.*\b{method}\b.*{exact}", text) is not None


def _http_routes() -> list[tuple[str, list[str]]]:
    return list(_routes(get_resolver().url_patterns))


def test_every_url_parameter_has_a_documented_spelling():
    websocket = [(_spelled(str(p.pattern)), ["ws"]) for p in websocket_urlpatterns]
    unknown = [path for path, _ in _http_routes() + websocket if "<?" in path]
    assert not unknown, f"add these parameters to PARAMETER_SPELLING (and document the routes): {unknown}"


def test_every_http_route_and_method_is_in_the_http_reference():
    page = _page("http.md")
    missing = []
    for path, methods in _http_routes():
        if not _mentions(page, path):
            missing.append(path)
        missing += [f"{method} {path}" for method in methods if not _mentions(page, path, method)]
    assert not missing, f"docs/http.md does not document: {missing}"


def test_every_websocket_route_is_in_the_http_reference():
    # (The catch-all route, pattern "", is the 4404 close for every other path.)
    page = _page("http.md")
    missing = [
        f"ws {path}"
        for path in (_spelled(str(p.pattern)) for p in websocket_urlpatterns if str(p.pattern))
        if not _mentions(page, path, "ws")
    ]
    assert not missing, f"docs/http.md does not document: {missing}"


def test_the_route_check_catches_an_undocumented_route():
    """The guard is real: a route the page does not name is reported."""
    page = _page("http.md")
    assert _mentions(page, "/<slug>/v1/session/:id/stop", "POST")
    assert not _mentions(page, "/<slug>/v1/session/:id/rewind", "POST")
    assert not _mentions(page, "/<slug>/v1/session/:id/stop", "DELETE")
    assert not _mentions("`GET /<slug>/v1/session/:id/stop`", "/<slug>/v1/session/:id", "GET")


def test_every_event_type_is_in_the_http_reference():
    page = _page("http.md")
    missing = [str(event) for event in EventType if f"`{event}`" not in page]
    assert not missing, f"docs/http.md does not describe these event types: {missing}"


def test_every_sdk_name_is_in_the_authoring_reference():
    page = _page("authoring.md")
    names = [*sdk.__all__, *sdk_memory.__all__]  # and the public submodule agents.sdk.memory
    missing = [name for name in names if not re.search(rf"`{re.escape(name)}\b", page)]
    assert not missing, f"docs/authoring.md does not document: {missing}"


def _platform_keys() -> set[str]:
    from django.conf import settings

    return set(DEFAULTS) | set(settings.PLATFORM)


def test_every_platform_setting_is_in_the_configuration_page():
    page = _page("configuration.md")
    missing = sorted(key for key in _platform_keys() if f"`{key}`" not in page)
    assert not missing, f"docs/configuration.md does not document the PLATFORM keys: {missing}"


def _environment_variables() -> set[str]:
    """The variables settings.py reads through ``agent_platform.env`` (``env_int("NAME", ...)``)."""
    tree = ast.parse((ROOT / "agent_platform" / "settings.py").read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.startswith("env_")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def test_every_environment_variable_is_in_the_configuration_page():
    page = _page("configuration.md")
    variables = _environment_variables()
    assert {"DATABASE_URL", "PLATFORM_TURN_TIME_LIMIT"} <= variables  # the scan finds them
    missing = sorted(name for name in variables if f"`{name}`" not in page)
    assert not missing, f"docs/configuration.md does not document: {missing}"


def _tracked_files() -> list[Path]:
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / name for name in listed.decode().split("\0") if name]
    skipped = {".git", ".venv", "var", "node_modules", "test-output", "__pycache__"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skipped & set(p.relative_to(ROOT).parts)]


def test_no_tracked_file_points_outside_the_repository():
    outside = "../" + "shared"  # spelled apart so that this file does not match itself
    found = []
    for path in _tracked_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        found += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1) if outside in line]
    assert not found, f"these lines point outside the repository: {found}"


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_the_docs_name_no_document_outside_the_repository():
    found = [
        f"{page.relative_to(ROOT)}: {name}"
        for page in _pages()
        for name in ("DESIGN.md", "RELIABILITY.md", "ARCHITECTURE.md", "STYLE.md")
        if name in page.read_text()
    ]
    assert not found, f"the docs must say it themselves: {found}"


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.name)
def test_every_relative_link_of_the_docs_leads_to_a_file(page: Path):
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    broken = [t for t in targets if not re.match(r"\w+:", t) and not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"
