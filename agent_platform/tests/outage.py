"""Simulated outages for tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection


@contextmanager
def database_unreachable() -> Iterator[None]:
    """The Postgres server unreachable: connections go to a closed port. A connection
    pool is set aside meanwhile (its open connections would still work), and started
    anew afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("simulated by pointing the Postgres connection at a closed port")
    settings_dict = connection.settings_dict
    original_port, original_options = settings_dict["PORT"], settings_dict["OPTIONS"]
    connection.close()
    connection.close_pool()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        settings_dict["PORT"] = sock.getsockname()[1]  # closed again when the block ends
    settings_dict["OPTIONS"] = {key: value for key, value in original_options.items() if key != "pool"}
    try:
        yield
    finally:
        connection.close()
        settings_dict["PORT"], settings_dict["OPTIONS"] = original_port, original_options
