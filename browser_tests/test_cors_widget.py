"""The support example's help widget on the shop's own site (another origin): the browser's
CORS preflight and the real request to the channel route succeed, and the widget then
reads the session it started. A page of an origin nobody lists is refused by the browser.

The shop's site is a small HTTP server of this test on loopback, reached as
``http://localhost:<port>`` while the platform is ``http://127.0.0.1:<port>``: two
origins, both on loopback (Chromium refuses a public page's requests to loopback
whatever CORS says). Its port is random, so the origin is allowed by the tenant
(``Tenant.cors_origins``) on the tenant's own copy of the support agent; the example's
own ``cors_origins`` (a fixed origin) is tested in sessions_app/tests/test_channel_cors.py.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from agent_platform.tests.factories import issue_token
from agents.tests.deploying import deployed_agent

PAGE = b"<!doctype html><title>Shop</title><p>The shop's help widget</p>"


class ShopPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ShopPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def widget_agent(alice, browser_agents_dir, shop) -> str:
    """alice's tenant's own copy of the support agent, its tenant allowing the shop's origin."""
    alice.tenant.cors_origins = [shop]
    alice.tenant.save()
    deployed_agent(alice.tenant, "acme-help", browser_agents_dir / "support")
    return "acme-help"


ASK_JS = """async ([base, token, slug]) => {
  const headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"};
  const asked = await fetch(base + "/" + slug + "/v1/channels/web/ask", {
    method: "POST", headers, body: JSON.stringify({question: "Where is order 1042?"}),
  });
  const started = await asked.json();
  const state = await fetch(base + "/" + slug + "/v1/session/" + started.sessionId, {headers});
  return {status: asked.status, sessionId: started.sessionId, stateStatus: state.status, state: await state.json()};
}"""

REFUSED_JS = """async ([base, token]) => {
  try {
    await fetch(base + "/support/v1/channels/web/ask", {
      method: "POST", headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
      body: JSON.stringify({question: "hi"}),
    });
    return "read";
  } catch (error) {
    return "refused";
  }
}"""


def test_the_widget_calls_the_channel_route_from_the_shops_origin(
    deployed_page, deployed_server, alice, shop, widget_agent, screenshot
):
    deployed_page.goto(f"{shop}/")
    answer = deployed_page.evaluate(ASK_JS, [deployed_server, issue_token(alice), widget_agent])
    assert answer["status"] == 201
    assert answer["stateStatus"] == 200
    assert answer["state"]["sessionId"] == answer["sessionId"]
    screenshot(deployed_page, "shop")


def test_a_page_of_an_unlisted_origin_cannot_read_the_channel_route(
    deployed_page, deployed_server, alice, shop, page_errors
):
    deployed_page.goto(f"{shop}/")  # no tenant lists it, and the shared support agent lists another
    assert deployed_page.evaluate(REFUSED_JS, [deployed_server, issue_token(alice)]) == "refused"
    assert any("CORS" in error for error in page_errors)  # the browser's own report of the refusal
    page_errors.clear()  # the refusal is what this test wants
