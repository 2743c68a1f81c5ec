"""Browser tests: headless Chromium (Debian's ``chromium``) driven by Playwright against
a real daphne serving the test database, with turns run by the real Celery worker.

Every test gets a fresh page that records console errors and uncaught exceptions
and fails the test if any appeared. ``screenshot(name)`` writes a PNG under
``test-output/screenshots/`` (``BROWSER_OUTPUT`` moves it) so a person can see each step.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_platform.tests.daphne import serve

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUTPUT = Path(os.environ.get("BROWSER_OUTPUT", ROOT / "test-output" / "screenshots"))
PHONE = {"width": 390, "height": 844}
PAGE_TIMEOUT_MS = 15_000
# Agents only the browser tests serve: a renderer written by a hostile tenant, a tree
# with errors, an agent with MCP connections.
BROWSER_AGENT_TREES = Path(__file__).resolve().parent / "agent_trees"


@pytest.fixture(scope="session")
def browser_agents_dir(live_agents_dir: Path) -> Path:
    """The live AGENTS_DIR with the browser tests' own agents beside the others."""
    for tree in BROWSER_AGENT_TREES.iterdir():
        folder = live_agents_dir / tree.name
        if (tree / "agent").is_dir() and not folder.exists():
            # Copied, not linked: a symlink in AGENTS_DIR that leads out of it is not served.
            shutil.copytree(tree, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return live_agents_dir


def _serve(worker: Any, agents_dir: Path, tmp_path_factory: Any, *, dev: bool) -> Iterator[str]:
    """daphne on the test database, its turns sent to the live worker's queue."""
    env = {
        "AGENTS_DIR": str(agents_dir),
        "PLATFORM_DEV": "1" if dev else "0",
        "PLATFORM_TASK_QUEUE": worker.queue,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # Plain HTTP on loopback: cookies cannot be Secure here.
        "SECURE_COOKIES": "0",
    }
    for server in serve(tmp_path_factory, env):
        yield server.url


@pytest.fixture(scope="session")
def web_server(celery_worker_process, browser_agents_dir, tmp_path_factory) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` in dev mode: loopback visitors are the local developer."""
    yield from _serve(celery_worker_process, browser_agents_dir, tmp_path_factory, dev=True)


@pytest.fixture(scope="session")
def deployed_server(celery_worker_process, browser_agents_dir, tmp_path_factory) -> Iterator[str]:
    """The same, with dev mode off: every visitor needs a token or a signed-in user."""
    yield from _serve(celery_worker_process, browser_agents_dir, tmp_path_factory, dev=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running on this thread; the tests' own ORM
    # calls are plain synchronous ones between page steps. Only while a browser runs: set
    # at import, it would reach every other test of the run. One browser per module, not
    # per run: the suite's pytest-xdist processes run other files after a browser file,
    # and with Playwright still started every asyncio.run and async_to_sync there fails.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session", autouse=True)
def _fresh_output_folder() -> None:
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True, exist_ok=True)


class PageErrors(list[str]):
    """Console errors and uncaught exceptions a page reported."""


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE_CONTEXT = {"viewport": PHONE, "has_touch": True, "is_mobile": True}


def _page(browser: Any, base_url: str, errors: PageErrors, **context_args: Any) -> Iterator[Any]:
    """A page in a fresh browser context that records console errors and uncaught
    exceptions; the test fails at teardown if there were any."""
    from playwright.sync_api import expect

    context = browser.new_context(base_url=base_url, **context_args)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    # Assertions wait as long as actions do: the playground is ready once /v1/info has
    # answered, which can wait for an agent's MCP server to start, past expect's 5 s
    # default on a slow machine (a clean-clone CI run failed so).
    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    page.on(
        "console",
        lambda message: message.type == "error" and errors.append(f"console: {message.text} at {message.location}"),
    )
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    yield page
    context.close()
    assert list(errors) == [], errors


@pytest.fixture
def page(browser, web_server, live, page_errors) -> Iterator[Any]:
    """A desktop-sized page on the dev-mode server."""
    yield from _page(browser, web_server, page_errors, **DESKTOP)


@pytest.fixture
def deployed_page(browser, deployed_server, live, page_errors) -> Iterator[Any]:
    """A desktop-sized page on the deployed (non-dev) server."""
    yield from _page(browser, deployed_server, page_errors, **DESKTOP)


@pytest.fixture
def phone_page(browser, web_server, live, page_errors) -> Iterator[Any]:
    """A phone-sized page (390 x 844, touch) on the dev-mode server."""
    yield from _page(browser, web_server, page_errors, **PHONE_CONTEXT)


@pytest.fixture
def screenshot(request) -> Callable[[Any, str], Path]:
    """``screenshot(page, "step")`` -> test-output/screenshots/<test>--<step>.png"""

    def take(page: Any, step: str) -> Path:
        path = OUTPUT / f"{request.node.name}--{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


UNLABELLED_CONTROLS_JS = """
() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter(el => el.offsetParent !== null)
  .filter(el => {
    const name = (el.getAttribute('aria-label') || el.getAttribute('title') || '').trim();
    if (name) return false;
    if (el.getAttribute('aria-labelledby')) return false;
    if (el.labels && el.labels.length) return false;
    if (el.tagName === 'BUTTON' && el.textContent.trim()) return false;
    // A submit/button input is named by its value (Django's admin "Save" buttons).
    if (['submit', 'button', 'reset'].includes(el.type) && (el.value || '').trim()) return false;
    return true;
  })
  .map(el => el.outerHTML.slice(0, 120))
"""


def assert_controls_labelled(page: Any) -> None:
    """Every visible control has an accessible name (label, aria-label or text)."""
    assert page.evaluate(UNLABELLED_CONTROLS_JS) == []


def assert_fits_width(page: Any) -> None:
    """Nothing forces a horizontal scroll at the page's width."""
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"page is {overflow}px wider than the viewport"
