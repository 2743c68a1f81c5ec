"""Fixed carrier scans, so the extension runs offline and deterministically."""

from __future__ import annotations

from typing import Any

# The carrier a shop ships with, by the mount's ``region``.
CARRIERS = {"eu": "EuroParcel", "us": "US Parcel Service"}

SCANS: dict[str, list[dict[str, str]]] = {
    "EU123456": [
        {"date": "2026-11-20", "status": "picked up", "place": "Lyon"},
        {"date": "2026-11-21", "status": "in transit", "place": "Paris hub"},
        {"date": "2026-11-22", "status": "delivered", "place": "Paris"},
    ],
    "EU987654": [
        {"date": "2026-11-27", "status": "picked up", "place": "Lyon"},
        {"date": "2026-11-28", "status": "in transit", "place": "Frankfurt hub"},
    ],
}


def carrier_for(region: str) -> str:
    return CARRIERS.get(region, CARRIERS["eu"])


def track(tracking_number: str, region: str) -> dict[str, Any]:
    """The latest scan and the full history of a parcel, with the region's carrier.

    Raises:
        KeyError: for a tracking number the carrier does not know.
    """
    key = tracking_number.strip().upper()
    if key not in SCANS:
        raise KeyError(f"{carrier_for(region)} has no parcel {tracking_number!r}")
    history = SCANS[key]
    return {"trackingNumber": key, "carrier": carrier_for(region), "latest": history[-1], "history": history}
