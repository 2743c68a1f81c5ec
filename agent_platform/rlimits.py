"""The serving process holds one socket per open stream: let it hold as many as the
system allows.

Linux starts processes with a soft limit of 1,024 open files (systemd and Docker keep
that default for programs that still use ``select()``), far below the hard limit;
at that soft limit daphne stops accepting connections at about the thousandth open
event stream. Everything in the serving process waits on sockets with epoll
(asyncio, psycopg, redis-py), so it may raise its soft limit to the hard one.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def raise_open_files_limit() -> int:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit; returns the soft
    limit now in force (0 where the platform has no such limit)."""
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
