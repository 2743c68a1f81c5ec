"""The agents index at ``/`` in a real browser."""

from browser_tests.conftest import assert_controls_labelled, assert_fits_width


def test_index_lists_the_served_agents(page, screenshot):
    page.goto("/")
    rows = page.locator("table tbody tr")
    slugs = rows.locator("td:first-child").all_inner_texts()
    assert {"weather", "triage", "support", "lab"} <= {slug.strip() for slug in slugs}
    assert_controls_labelled(page)
    screenshot(page, "index")


def test_index_fits_a_phone(phone_page, screenshot):
    phone_page.goto("/")
    assert phone_page.locator("h1").inner_text() == "Agents"
    assert_fits_width(phone_page)
    screenshot(phone_page, "index-phone")
