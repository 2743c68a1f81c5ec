"""The results of ``bench/run.py``: one row per measure, the printed table, the comparison."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Row:
    """One line of the table. ``limit`` and ``better`` make it a target; without them it is context."""

    measure: str
    value: float | None
    unit: str
    limit: float | None = None
    better: str = ""  # "lower" (value <= limit) or "higher" (value >= limit)

    @property
    def target(self) -> str:
        if self.limit is None:
            return ""
        return f"{'≤' if self.better == 'lower' else '≥'} {self.limit:,g}"

    @property
    def met(self) -> bool | None:
        if self.limit is None or self.value is None:
            return None
        return self.value <= self.limit if self.better == "lower" else self.value >= self.limit


def _number(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> float:
    return seconds * 1000


def print_table(rows: list[Row]) -> None:
    width = max([len("measure"), *(len(row.measure) for row in rows)])
    print(f"{'measure':<{width}}  {'value':>10}  {'unit':<9}  {'target':<9}  result")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 9}  {'-' * 9}  ------")
    for row in rows:
        value = "n/a" if row.value is None else _number(row.value)
        result = {True: "met", False: "MISSED", None: ""}[row.met]
        print(f"{row.measure:<{width}}  {value:>10}  {row.unit:<9}  {row.target:<9}  {result}".rstrip())


def print_comparison(rows: list[Row], old_path: Path) -> None:
    old = {row["measure"]: row for row in json.loads(old_path.read_text())["rows"]}
    width = max([len("measure"), *(len(row.measure) for row in rows)])
    print(f"\ncompared with {old_path}  (ratio = new / old)")
    print(f"{'measure':<{width}}  {'old':>10}  {'new':>10}  {'ratio':>6}")
    for row in rows:
        before = old.get(row.measure, {}).get("value")
        if before is None or row.value is None:
            ratio = "n/a"
        else:
            ratio = f"{row.value / before:.2f}" if before else "n/a"
        shown_old = "-" if before is None else _number(before)
        shown_new = "n/a" if row.value is None else _number(row.value)
        print(f"{row.measure:<{width}}  {shown_old:>10}  {shown_new:>10}  {ratio:>6}")
