"""Crash points for the fault tests (RELIABILITY.md §1): named lines where the
process dies as if it had been sent SIGKILL, when a test arms them.

``PLATFORM_CRASH_POINTS`` names a folder (it is unset outside fault tests, and
then a crash point costs one environment lookup). A file in it named after a
point arms that point once: the first process to reach the line removes the
file and exits at once with status 137, without cleanup, as a killed process
would. The points are ``after-<event type>`` in ``sessions_app.sink``
(the worker's event sink): the event is committed, nothing after it has happened;
and ``before-settle`` in ``sessions_app.turn_worker``: for a turn that ended, inside the
transaction that writes its end, records it and settles its session (so nothing of that
is committed); for a parked turn, after its record is committed and before its session
is settled.
"""

from __future__ import annotations

import os


def crash_point(name: str) -> None:
    """Die here (exit 137, no cleanup) if a test armed ``name``."""
    folder = os.environ.get("PLATFORM_CRASH_POINTS")
    if not folder:
        return
    try:
        os.unlink(os.path.join(folder, name))  # one process wins the file: one crash per arming
    except FileNotFoundError:
        return
    os._exit(137)
