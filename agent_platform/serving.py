"""How a serving process is set up to hold many open streams at once.

Most open streams are idle for hours (a chat waiting for its user), so a server
process holds thousands of them: each is a socket and a few hundred long-lived Python
objects. ``agent_platform.asgi`` calls ``prepare()`` when the application loads, so
``daphne ... agent_platform.asgi:application`` and ``manage.py agent serve`` get it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

logger = logging.getLogger(__name__)

# The cyclic garbage collector's thresholds in a serving process (CPython's defaults are
# 700, 10, 10). Every second daphne copies its connection table into a list of tuples
# that lives a few milliseconds; with the defaults, collections of the young generations
# run while that list exists and move its tuples into the old generation, so that
# generation's counter fills within a minute and a full collection follows, which with
# 10,000 open streams (millions of objects) stopped the event loop for 1 to 3 s every
# ~50 s. Collecting the young generations less often lets such short-lived objects die
# young: no full collection came in two minutes of 10,000 idle streams, and the young
# collections take a few milliseconds (bench/idle_streams.py).
GC_THRESHOLDS = (20_000, 50, 10)


def raise_open_files_limit() -> int:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit; returns the soft
    limit now in force (0 where the platform has no such limit).

    Linux starts processes with a soft limit of 1,024 open files (systemd and Docker keep
    that default for programs that still use ``select()``), far below the hard limit; at
    that soft limit daphne stops accepting connections at about the thousandth open
    stream. Everything in the serving process waits on sockets with epoll (asyncio,
    psycopg, redis-py), so it may raise its soft limit to the hard one.
    """
    try:
        import resource
    except ImportError:  # not a Unix
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as error:
            logger.warning("cannot raise the open-files limit from %s to %s: %s", soft, hard, error)
            return soft
        return hard
    return soft


def _malloc_trim() -> None:
    """Hand the C allocator's free memory back to the system (glibc's ``malloc_trim``;
    nothing elsewhere)."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc
        trim = None
    if trim is not None:
        trim(0)


def give_memory_back() -> None:
    """Free what many closed streams left behind, and give it back to the system.

    The C allocator keeps memory that freed objects leave (to reuse it), so a process
    that held 10,000 streams kept its RSS after they closed. No full garbage collection
    first: with thousands of streams still open one stops the event loop for a second.
    """
    _malloc_trim()


def prepare() -> None:
    """As many open sockets as the system allows, and garbage collection that does not
    stop the event loop for seconds when many streams are open."""
    raise_open_files_limit()
    gc.set_threshold(*GC_THRESHOLDS)
