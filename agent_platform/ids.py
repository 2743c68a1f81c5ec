"""Random, prefixed identifiers for rows that are addressed by id in URLs.

Ids are random rather than sequential, so one does not reveal how many others
exist or let a caller guess its neighbours.
"""

from __future__ import annotations

import base64
import secrets


def new_id(prefix: str) -> str:
    """``prefix_`` followed by 26 lowercase base32 characters (128 random bits).

    >>> new_id("ses").startswith("ses_")
    True
    """
    raw = base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()
    return f"{prefix}_{raw}"
