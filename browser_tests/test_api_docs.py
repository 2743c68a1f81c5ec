"""The API docs (Swagger UI and Redoc for /api/schema) in a real browser: served from this
origin under the platform's Content-Security-Policy, without console errors (the page
fixture fails a test on any), and linked from the index and the playground."""

from __future__ import annotations


def test_swagger_ui_renders_the_schema_from_the_index_link(page, screenshot):
    page.goto("/")
    page.get_by_role("link", name="API docs").click()
    page.wait_for_url("**/api/docs/")
    page.locator(".swagger-ui .info .title").filter(has_text="Agent Platform API").wait_for()
    stream = page.locator(".opblock-summary-path", has_text="/{agent_slug}/v1/session/{session_id}/stream")
    stream.first.wait_for()
    screenshot(page, "swagger")


def test_redoc_renders_the_schema(page, screenshot):
    page.goto("/api/docs/redoc/")
    page.locator("h1", has_text="Agent Platform API").wait_for()
    page.get_by_text("/{agent_slug}/v1/session/{session_id}/stream").first.wait_for(state="attached")
    screenshot(page, "redoc")


def test_the_playground_links_to_the_api_docs(page):
    page.goto("/weather/playground")
    assert page.get_by_role("link", name="API docs").get_attribute("href") == "/api/docs/"
