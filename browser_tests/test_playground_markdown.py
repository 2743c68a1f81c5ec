"""Replies rendered as Markdown in the playground: headings, lists and code blocks with a
working Copy button; a reply carrying script is rendered inert; the Sessions tab shows
each session's title and first message."""

from __future__ import annotations

from playwright.sync_api import expect

from browser_tests.test_playground import open_playground, post_json, send

# The test model echoes the message ("echo: <lines>"), so the reply is this Markdown.
MARKDOWN = "Here it is:\n# Packing list\n- a raincoat\n- **boots**\n```python\nprint('dry')\n```"


def test_a_reply_renders_as_markdown_with_copyable_code(page, screenshot):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_playground(page)
    send(page, MARKDOWN)
    expect(page.locator(".turn-end.ok")).to_be_visible()
    reply = page.locator(".bubble.agent .text").last
    expect(reply.locator("h1")).to_have_text("Packing list")
    expect(reply.locator("ul > li")).to_have_text(["a raincoat", "boots"])
    expect(reply.locator("li strong")).to_have_text("boots")
    code = reply.locator(".code-block pre code.language-python")
    expect(code).to_have_text("print('dry')")
    copy = reply.get_by_role("button", name="Copy python code")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").strip() == "print('dry')"
    screenshot(page, "markdown-reply")


def test_a_reply_with_script_is_rendered_inert(page, screenshot):
    open_playground(page)
    hostile = (
        "Careful: [click me](javascript:window.__pwned='link') and ![pixel](data:image/png;base64,AAAA)\n"
        "<script>window.__pwned = 'script'</script>\n"
        '<img src="data:image/png;base64,AAAA" onerror="window.__pwned = \'img\'">\n'
        '<p id="notice" style="position:fixed">spoofed notice</p>'
    )
    send(page, hostile)
    expect(page.locator(".turn-end.ok")).to_be_visible()
    reply = page.locator(".bubble.agent .text").last
    # The HTML the reply wrote is shown as text; nothing of it became an element.
    expect(reply).to_contain_text("<script>window.__pwned = 'script'</script>")
    expect(reply).to_contain_text("onerror=")
    reply.get_by_text("click me").click()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#transcript script, #transcript [onerror], #transcript [style], #transcript [id]").count() == 0
    # Markdown's own link and image stay, the link without its javascript: URL.
    assert reply.locator("a").get_attribute("href") is None
    expect(reply.locator("img[alt='pixel']")).to_have_count(1)
    expect(page.locator("#notice")).to_be_hidden()  # the page's own, not the reply's
    screenshot(page, "inert-reply")


def test_the_sessions_tab_shows_titles_and_first_messages(page, web_server):
    created = post_json(web_server, "/lab/v1/session", {"message": "where is my parcel?", "title": "parcel"})
    open_playground(page)
    page.get_by_role("tab", name="Sessions").click()
    page.get_by_label("Filter by session id").fill(created["sessionId"])
    row = page.locator(f"tr[data-session='{created['sessionId']}']")
    expect(row.locator("td").nth(1)).to_have_text("parcel")
    expect(row.locator("td.first-message")).to_have_text("where is my parcel?")
