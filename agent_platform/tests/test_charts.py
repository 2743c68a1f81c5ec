"""Server-side SVG charts: scaled axes, one bar per value, escaped text, accessible names."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET  # our own output, not untrusted input

import pytest

from agent_platform.charts import Series, axis_ticks, bar_chart, column_chart, compact_number, dollars, percent

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314  (the chart we just drew)


@pytest.mark.parametrize(
    ("largest", "ticks"),
    [(0, [0, 1]), (3, [0, 1, 2, 3]), (5, [0, 2, 4, 6]), (98, [0, 25, 50, 75, 100]), (1300, [0, 500, 1000, 1500])],
)
def test_axis_ticks_are_round_and_reach_the_largest_value(largest, ticks):
    assert axis_ticks(largest) == ticks


def test_a_fixed_top_splits_evenly():
    assert axis_ticks(0.3, integer=False, top=1.0) == [0, 0.25, 0.5, 0.75, 1.0]


def test_number_formats():
    assert compact_number(1500) == "1.5k" and compact_number(2_000_000) == "2M" and compact_number(7) == "7"
    assert percent(0.5) == "50%" and percent(1 / 3) == "33.3%"
    assert dollars(12.5) == "$12.50" and dollars(0.0123) == "$0.0123" and dollars(0) == "$0.00"


def test_a_column_chart_draws_one_bar_per_value_scaled_to_the_axis():
    svg = column_chart("Turns", ["a", "b", "c"], [Series("turns", [1, 3, None])])
    root = parse(svg)
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert [r.find(f"{SVG}title").text for r in bars] == ["a turns: 1", "b turns: 3"]
    heights = [float(r.get("height")) for r in bars]
    assert heights[1] == pytest.approx(3 * heights[0])
    assert root.get("role") == "img"
    labelled_by = root.get("aria-labelledby").split()
    assert [root.find(f"{SVG}title").get("id"), root.find(f"{SVG}desc").get("id")] == labelled_by
    assert "c n/a" in root.find(f"{SVG}desc").text


def test_a_bar_chart_labels_each_bar_with_its_value():
    svg = bar_chart("Cost", ["weather", "triage"], [Series("cost", [0.5, 0.25])], value_format=dollars)
    root = parse(svg)
    values = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "value"]
    assert values == ["$0.5000", "$0.2500"]
    widths = [float(r.get("width")) for r in root.iter(f"{SVG}rect")]
    assert widths[0] == pytest.approx(2 * widths[1])


def test_text_in_charts_is_escaped():
    svg = column_chart("<b>x</b>", ["<script>"], [Series("a&b", [1])])
    assert "<script>" not in svg and "<b>" not in svg
    parse(svg)  # still well-formed


def test_each_chart_has_its_own_ids():
    first, second = (column_chart("t", ["a"], [Series("s", [1])]) for _ in range(2))
    assert re.search(r'id="(chart-\d+)-title"', first)[1] != re.search(r'id="(chart-\d+)-title"', second)[1]
