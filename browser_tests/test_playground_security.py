"""An agent's playground renderer, written by a hostile tenant, tries to run script in
the page and read the bearer token the playground keeps in ``sessionStorage``: the
server's allow-list (``agent_platform.renderers``) leaves every script vector behind, and
the Content-Security-Policy would refuse one that got through."""

from __future__ import annotations

from playwright.sync_api import expect

from agent_platform.renderers import sanitize_renderer
from agent_platform.tests.factories import issue_token

# Markup that a second parse may read differently (mXSS), and plain script vectors.
VECTORS = [
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<svg></p><style><a id="</style><img src=x onerror=alert(1)>">',
    "<form><math><mtext></form><form><mglyph><style></math><img src=x onerror=alert(1)>",
    '<a href="&#106;avascript:alert(1)">x</a><a href="java\tscript:alert(1)">y</a>',
    '<img src="x" alt="a" onerror="alert(1)"><iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "<svg><script>alert(1)</script></svg><object data=x></object><embed src=x>",
    '<p style="color: red" onclick="x()">p</p><style>*{}</style><template><img onerror=x></template>',
    "<title><img src=x onerror=alert(1)></title><textarea><img src=x onerror=alert(1)></textarea>",
    "<xmp><img src=x onerror=alert(1)></xmp><plaintext><img src=x onerror=alert(1)>",
    '<div id="notice" name="x" data-field="args.a">d</div><!-- <img src=x onerror=alert(1)> -->',
]

# What the page's own parser makes of HTML: every element name and attribute name.
PARSED_JS = """
(fragments) => fragments.map((html) => {
  const template = document.createElement("template");
  template.innerHTML = html;
  const nodes = [...template.content.querySelectorAll("*")];
  return {
    elements: nodes.map((node) => node.localName),
    attributes: nodes.flatMap((node) => [...node.attributes].map((a) => `${a.name}=${a.value}`)),
  };
})
"""

FORBIDDEN_ELEMENTS = {"script", "style", "iframe", "object", "embed", "svg", "math", "form", "template", "noscript"}
FORBIDDEN_ELEMENTS_CSS = ", ".join(sorted(FORBIDDEN_ELEMENTS))


def test_a_hostile_renderer_cannot_read_the_token(deployed_page, alice, screenshot):
    page = deployed_page
    token = issue_token(alice)
    page.goto("/hostile/playground")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Use token").click()
    expect(page.locator("#agent-model")).to_contain_text("model test")
    title = page.title()

    page.get_by_label("Message").fill('/call show {"text": "hello"}')
    page.get_by_role("button", name="Send").click()
    card = page.locator(".tool-call[data-tool='show'] .show-card")
    expect(card.locator("strong")).to_have_text("hello")
    expect(card.locator("[data-show='output']")).to_have_text("true")
    expect(page.locator(".turn-end.ok")).to_be_visible()
    page.locator("summary", has_text="more").click()  # ontoggle would fire here
    page.locator(".steal-link").click()  # and a javascript: link here
    page.wait_for_timeout(300)
    screenshot(page, "hostile-renderer")

    assert page.title() == title
    assert "stolen" not in page.url
    assert token not in page.content()
    # Nothing that could carry script reached the page, and the page's ids are its own.
    assert card.locator(FORBIDDEN_ELEMENTS_CSS).count() == 0
    handlers = card.evaluate("c => [c, ...c.querySelectorAll('*')].flatMap(e => e.getAttributeNames())")
    assert not [name for name in handlers if name.startswith("on")]
    assert card.locator("a").get_attribute("href") is None
    assert page.locator("[id='notice']").count() == 1
    # What the renderer may do, it still does: its layout and its fields.
    assert card.get_attribute("style") == "display:flex;gap:.5rem"


def test_what_the_server_keeps_the_browser_parses_as_inert(page):
    """The sanitiser writes HTML out again; the browser's own parser, reading it back,
    finds no script carrier and no handler in it (and the CSP reports nothing)."""
    page.goto("/weather/playground")
    expect(page.locator("body[data-ready='1']")).to_be_attached()
    kept = [sanitize_renderer(html) for html in VECTORS]
    for html, out, parsed in zip(VECTORS, kept, page.evaluate(PARSED_JS, kept), strict=True):
        assert not FORBIDDEN_ELEMENTS & set(parsed["elements"]), (html, out)
        assert not [a for a in parsed["attributes"] if a.startswith(("on", "id=", "name="))], (html, out)
        assert "javascript" not in out.lower(), (html, out)


def test_the_content_security_policy_refuses_inline_script_that_got_in(page, page_errors):
    """The second wall: HTML put into the page past the sanitiser still runs no script."""
    page.goto("/weather/playground")
    expect(page.locator("body[data-ready='1']")).to_be_attached()
    title = page.title()
    violations = page.evaluate(
        """() => new Promise((resolve) => {
          const seen = [];
          document.addEventListener("securitypolicyviolation", (e) => seen.push(e.effectiveDirective));
          const box = document.createElement("div");
          box.innerHTML = '<img src="data:,x" onerror="document.title = sessionStorage.length">';
          document.body.append(box);
          const script = document.createElement("script");
          script.textContent = "document.title = 'inline ran'";
          document.body.append(script);
          setTimeout(() => resolve(seen), 500);
        })"""
    )
    assert page.title() == title
    assert set(violations) >= {"script-src-attr", "script-src-elem"}
    # The browser reports each refusal on the console; these two were this test's own.
    page_errors[:] = [line for line in page_errors if "Content Security Policy" not in line]
