"""Retention: bounded tables stay bounded."""

from __future__ import annotations

from sessions_app.models import LogLine


def prune_log_lines(keep: int) -> int:
    """Delete all but the newest ``keep`` log lines; returns how many were deleted."""
    newest_dropped = list(LogLine.objects.order_by("-id").values_list("id", flat=True)[keep : keep + 1])
    if not newest_dropped:
        return 0
    deleted, _ = LogLine.objects.filter(id__lte=newest_dropped[0]).delete()
    return deleted
