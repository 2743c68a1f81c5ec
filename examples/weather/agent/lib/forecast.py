"""A small, fixed weather table, so the example is deterministic and needs no network."""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass
from typing import Any, Literal

Units = Literal["c", "f"]

CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy")


@dataclass(frozen=True)
class Conditions:
    """Weather at one place and time, temperatures in Celsius."""

    city: str
    condition: str
    temperature: float
    humidity: int
    wind_kph: int


# city (lower case) -> today's conditions
TABLE: dict[str, Conditions] = {
    c.city.lower(): c
    for c in (
        Conditions("Lyon", "sunny", 21.0, 48, 12),
        Conditions("Paris", "partly cloudy", 18.5, 60, 15),
        Conditions("London", "light rain", 14.0, 82, 20),
        Conditions("Berlin", "cloudy", 16.0, 70, 18),
        Conditions("Madrid", "sunny", 27.5, 30, 9),
        Conditions("Oslo", "windy", 9.0, 75, 32),
        Conditions("New York", "showers", 19.0, 77, 22),
        Conditions("Tokyo", "partly cloudy", 23.0, 65, 11),
    )
}


def known_cities() -> list[str]:
    """The cities the table covers, sorted."""
    return sorted(c.city for c in TABLE.values())


def lookup(city: str) -> Conditions:
    """Today's conditions for ``city`` (case-insensitive).

    Raises:
        KeyError: for a city outside the table; the message lists the known ones.
    """
    try:
        return TABLE[city.strip().lower()]
    except KeyError:
        raise KeyError(f"no weather data for {city!r}; known cities: {', '.join(known_cities())}") from None


def forecast(city: str, days: int) -> list[Conditions]:
    """``days`` daily forecasts after today, derived deterministically from today's conditions."""
    today = lookup(city)
    seed = zlib.crc32(today.city.encode())
    days_out = []
    for day in range(1, days + 1):
        step = (seed >> (day % 24)) + day
        days_out.append(
            Conditions(
                city=today.city,
                condition=CONDITIONS[step % len(CONDITIONS)],
                temperature=round(today.temperature + (step % 7) - 3, 1),
                humidity=min(100, max(10, today.humidity + (step % 11) - 5)),
                wind_kph=max(0, today.wind_kph + (step % 9) - 4),
            )
        )
    return days_out


def convert(temperature_c: float, units: Units) -> float:
    """A Celsius temperature in the requested units, rounded to one decimal."""
    return round(temperature_c * 9 / 5 + 32, 1) if units == "f" else round(temperature_c, 1)


def as_report(conditions: Conditions, units: Units) -> dict[str, Any]:
    """The JSON the tools return: temperature converted, units named."""
    report = asdict(conditions)
    report["temperature"] = convert(conditions.temperature, units)
    report["units"] = "°F" if units == "f" else "°C"
    return report
