"""Small charts as inline SVG, drawn on the server: no script and nothing to fetch.

Each chart scales with its container (``viewBox``), names itself for screen
readers (``role="img"`` with a title and description), and gives every bar a
``<title>`` tooltip with its exact value. Colours come from CSS classes
``series-0``, ``series-1``, ... in ``platform.css``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import count

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH = 480
FONT = 13
# Tick labels and axis room.
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 26, 24
MAX_X_LABELS = 8
BAR_ROW = 26
BAR_LABEL_WIDTH = 110
BAR_VALUE_ROOM = 70

_ids = count(1)


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


Format = Callable[[float], str]


def plain_number(value: float) -> str:
    """``1234`` -> ``1,234``; ``2.5`` -> ``2.5``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def compact_number(value: float) -> str:
    """Axis labels: ``1500`` -> ``1.5k``, ``2000000`` -> ``2M``."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%" if value * 100 == round(value * 100) else f"{value * 100:.1f}%"


def seconds(value: float) -> str:
    """``0.25`` -> ``250 ms``; ``3.5`` -> ``3.5 s``."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.3g} s"


def dollars(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def nice_step(value: float, *, integer: bool) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= ``value``."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if value <= m * magnitude * (1 + 1e-9))
    return max(step, 1.0) if integer else step


def axis_ticks(largest: float, *, integer: bool = True, top: float | None = None, ticks: int = 4) -> list[float]:
    """Tick values from 0 to a round top at or above ``largest``."""
    if top is not None:
        return [top * i / ticks for i in range(ticks + 1)]
    step = nice_step(largest / ticks, integer=integer)
    steps = max(1, math.ceil(largest / step - 1e-9))
    return [step * i for i in range(steps + 1)]


def _svg(height: float, title: str, description: str, body: list[str]) -> SafeString:
    uid = f"chart-{next(_ids)}"
    head = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height:.0f}" role="img" '
        f'aria-labelledby="{uid}-title {uid}-desc" font-size="{FONT}" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{uid}-title">{escape(title)}</title><desc id="{uid}-desc">{escape(description)}</desc>'
    )
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308  (every text above is escaped)


def _legend(series: Sequence[Series]) -> list[str]:
    parts, x = [], LEFT
    for number, item in enumerate(series):
        parts.append(f'<rect class="series-{number}" x="{x}" y="6" width="10" height="10"/>')
        parts.append(f'<text x="{x + 14}" y="15">{escape(item.name)}</text>')
        x += 24 + 7 * len(item.name)
    return parts


def column_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    value_format: Format = plain_number,
    axis_format: Format = compact_number,
    integer: bool = True,
    top: float | None = None,
    height: int = 200,
) -> SafeString:
    """Vertical bars per label (e.g. per day), one bar per series side by side.

    A ``None`` value draws no bar (e.g. a failure rate on a day with no turns).
    """
    largest = max((v for s in series for v in s.values if v is not None), default=0)
    ticks = axis_ticks(largest, integer=integer, top=top)
    ceiling = ticks[-1] or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - TOP - BOTTOM
    body = _legend(series)
    for tick in ticks:
        y = TOP + plot_h * (1 - tick / ceiling)
        body.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        body.append(
            f'<text class="tick" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{escape(axis_format(tick))}</text>'
        )
    group = plot_w / max(len(labels), 1)
    bar = group * 0.8 / max(len(series), 1)
    label_every = math.ceil(len(labels) / MAX_X_LABELS) if labels else 1
    for index, label in enumerate(labels):
        x0 = LEFT + group * index + group * 0.1
        for number, item in enumerate(series):
            value = item.values[index]
            if value is None:
                continue
            bar_h = plot_h * value / ceiling
            tip = f"{label} {item.name}: {value_format(value)}"
            body.append(
                f'<rect class="series-{number}" x="{x0 + bar * number:.1f}" y="{TOP + plot_h - bar_h:.1f}" '
                f'width="{max(bar - 1, 1):.1f}" height="{bar_h:.1f}"><title>{escape(tip)}</title></rect>'
            )
        if index % label_every == 0:
            cx = LEFT + group * (index + 0.5)
            body.append(f'<text class="tick" x="{cx:.1f}" y="{height - 6}" text-anchor="middle">{escape(label)}</text>')
    body.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    description = "; ".join(
        f"{s.name}: "
        + ", ".join(
            f"{label} {'n/a' if v is None else value_format(v)}" for label, v in zip(labels, s.values, strict=True)
        )
        for s in series
    )
    return _svg(height, title, description, body)


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    value_format: Format = plain_number,
) -> SafeString:
    """Horizontal bars per label (e.g. per agent), one bar per series, each with its value."""
    rows = max(len(labels), 1)
    height = TOP + rows * BAR_ROW * max(len(series), 1) + 8
    largest = max((v for s in series for v in s.values if v is not None), default=0) or 1
    plot_w = WIDTH - BAR_LABEL_WIDTH - BAR_VALUE_ROOM
    bar = BAR_ROW - 6
    body = _legend(series) if len(series) > 1 else []
    for index, label in enumerate(labels):
        y0 = TOP + index * BAR_ROW * len(series)
        short = label if len(label) <= 16 else label[:15] + "…"
        body.append(
            f'<text x="{BAR_LABEL_WIDTH - 6}" y="{y0 + bar * len(series) / 2 + 4:.1f}" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
        )
        for number, item in enumerate(series):
            value = item.values[index] or 0
            y = y0 + number * BAR_ROW
            width = plot_w * value / largest
            body.append(
                f'<rect class="series-{number}" x="{BAR_LABEL_WIDTH}" y="{y:.1f}" width="{max(width, 1):.1f}" '
                f'height="{bar}"><title>{escape(f"{label} {item.name}: {value_format(value)}")}</title></rect>'
            )
            body.append(
                f'<text class="value" x="{BAR_LABEL_WIDTH + width + 4:.1f}" y="{y + bar / 2 + 4:.1f}">'
                f"{escape(value_format(value))}</text>"
            )
    description = "; ".join(
        f"{label}: " + ", ".join(f"{s.name} {value_format(s.values[i] or 0)}" for s in series)
        for i, label in enumerate(labels)
    )
    return _svg(height, title, description, body)
