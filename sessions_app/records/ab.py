"""A/B experiments as records (DESIGN.md §9.4): which arm each session got, what its
``metrics`` said, and the per-arm report of ``GET /<slug>/v1/abs``.

- **Assignment** happens once, when a session is created (``assign``): each enabled
  experiment draws one arm by weight for a session whose purpose is not excluded by
  ``ab.config.py``. The draw is stored as an ``ABAssignment`` row in the session's own
  creation transaction and announced by ``ab.assigned`` right after ``session.started``;
  nothing changes it afterwards (follow-ups, restarts and redeploys read the row).
- **Samples** (``record_sample``): after each settled turn the experiment's
  ``metrics(sample)`` is called with the session's totals so far; its return replaces the
  session's values. It is observe-only, like a hook: a raise or a bad return is logged on
  the agent's ``/v1/logs`` and the sample skipped.
- **Report** (``report``): per arm, the sessions and each metric's mean with an
  always-valid 95% interval; per metric, each arm against the first one
  (``sessions_app.records.sequential``).
"""

from __future__ import annotations

import inspect
import logging
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from asgiref.sync import async_to_sync
from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from agents.discovery import AgentSurface
from agents.events import EventType
from agents.sdk import Experiment
from sessions_app.eventlog import NewEvent
from sessions_app.logs import agent_log_tags
from sessions_app.models import ABAssignment, Event, Session, Turn, TurnStatus
from sessions_app.records.sequential import Summary, difference_interval, mean_interval

logger = logging.getLogger("agent_platform.hooks")

# A metric's values are numbers; more names than this in one return are refused (a sample
# is a row, not a data lake).
MAX_METRICS = 50
MAX_METRIC_NAME_CHARS = 100
# The per-session list of /v1/abs: the newest this many.
MAX_SESSIONS_LISTED = 500

_rng = random.SystemRandom()


def experiments_for(surface: AgentSurface, purpose: str) -> dict[str, Experiment]:
    """The experiments a new session of ``purpose`` is enrolled in: none when ``ab.config.py``
    turns them off or excludes the purpose (``eval`` by default)."""
    config = surface.ab_config
    enabled = config.enabled if config is not None else True
    excluded = config.exclude_purposes if config is not None else ("eval",)
    if not enabled or purpose in excluded:
        return {}
    return {name: entry.value for name, entry in surface.experiments.items()}


def draw(experiment: Experiment, rng: random.Random = _rng) -> str:
    """One arm, chosen with probability proportional to its weight."""
    return rng.choices(experiment.arms, weights=experiment.weights, k=1)[0]


def assign(surface: AgentSurface, session: Session) -> tuple[list[ABAssignment], list[NewEvent]]:
    """The new session's assignment rows (unsaved) and their ``ab.assigned`` events, one
    per experiment in discovery order; both empty when it is not enrolled."""
    rows, recorded = [], []
    for name, experiment in experiments_for(surface, session.purpose).items():
        arm = draw(experiment)
        rows.append(ABAssignment(session=session, agent_id=session.agent_id, experiment=name, arm=arm))
        recorded.append(NewEvent(EventType.AB_ASSIGNED, {"experiment": name, "arm": arm}))
    return rows, recorded


def copy_assignments(original: Session, fork: Session) -> list[ABAssignment]:
    """Give ``fork`` the arms of ``original`` (a fork keeps its original's arm, DESIGN.md
    §9.12): the same rows, not a new draw, with no sample yet. Call it in the fork's
    creation transaction; the fork's copied log already holds the ``ab.assigned`` events."""
    rows = [
        ABAssignment(
            session=fork, agent_id=fork.agent_id, experiment=a.experiment, arm=a.arm, assigned_at=a.assigned_at
        )
        for a in ABAssignment.objects.filter(session=original)
    ]
    return ABAssignment.objects.bulk_create(rows)


# --- samples ----------------------------------------------------------------------------------


class BadMetrics(ValueError):
    """A ``metrics`` function returned something other than ``{name: number}``."""


def clean_metrics(value: Any) -> dict[str, float]:
    """The ``{metric: number}`` a ``metrics`` function returned, as floats.

    Raises:
        BadMetrics: not a mapping of short string names to finite numbers (bools refused).
    """
    if not isinstance(value, Mapping):
        raise BadMetrics(f"metrics must return a dict of numbers, not {type(value).__name__}")
    if len(value) > MAX_METRICS:
        raise BadMetrics(f"metrics returned {len(value)} values; at most {MAX_METRICS}")
    cleaned: dict[str, float] = {}
    for name, number in value.items():
        if not isinstance(name, str) or not name or len(name) > MAX_METRIC_NAME_CHARS:
            raise BadMetrics(f"metric name {name!r} must be a string of 1-{MAX_METRIC_NAME_CHARS} characters")
        if isinstance(number, bool) or not isinstance(number, int | float | Decimal):
            raise BadMetrics(f"metric {name!r} is {number!r}, not a number")
        as_float = float(number)
        if not math.isfinite(as_float):
            raise BadMetrics(f"metric {name!r} is {number!r}, not a finite number")
        cleaned[name] = as_float
    return cleaned


def sample_of(session: Session) -> dict[str, Any]:
    """The session's totals so far, without ``experiment`` and ``arm``: settled turns,
    failed ones, tokens, tool calls, cost and events."""
    turns = Turn.objects.filter(session=session, status__in=[TurnStatus.COMPLETED, TurnStatus.FAILED])
    totals = turns.aggregate(
        turns=Count("id"), failed=Count("id", filter=Q(status=TurnStatus.FAILED)), cost=Sum("cost")
    )
    input_tokens = output_tokens = 0
    for usage in turns.values_list("usage", flat=True):
        input_tokens += int((usage or {}).get("inputTokens", 0))
        output_tokens += int((usage or {}).get("outputTokens", 0))
    tool_calls = Event.objects.filter(session=session, type=EventType.ACTION_RESULT).count()
    events = Session.objects.filter(pk=session.pk).values_list("next_event_index", flat=True).first() or 0
    return {
        "sessionId": session.pk,
        "turns": totals["turns"],
        "failedTurns": totals["failed"],
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "toolCalls": tool_calls,
        "costUsd": float(totals["cost"] or 0),
        "events": events,
    }


def _call(function: Any, sample: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(function):
        return async_to_sync(function)(sample)
    result = function(sample)
    if inspect.isawaitable(result):
        return async_to_sync(_awaited)(result)
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def record_sample(session: Session, surface: AgentSurface) -> int:
    """Call each assigned experiment's ``metrics`` with the session's sample and keep what
    it returns; returns how many samples were kept. Call it after a turn settles, outside
    the settling transaction. Never raises for the author's mistakes: they are logged
    (on the agent's ``/v1/logs``) and that sample is skipped."""
    with_metrics = {name: e.value for name, e in surface.experiments.items() if e.value.metrics is not None}
    if not with_metrics:
        return 0
    assignments = [a for a in ABAssignment.objects.filter(session=session) if a.experiment in with_metrics]
    if not assignments:
        return 0
    base = sample_of(session)
    kept = 0
    with agent_log_tags(surface, agent_slug=session.agent.slug, tenant_id=session.tenant_id, session_id=session.pk):
        for assignment in assignments:
            sample = {**base, "experiment": assignment.experiment, "arm": assignment.arm}
            try:
                values = clean_metrics(_call(with_metrics[assignment.experiment].metrics, sample))
            except Exception:
                # Observe-only, as hooks are: the author's code cannot fail the session.
                logger.exception(
                    "A/B experiment %r: metrics(sample) failed for session %s; sample skipped",
                    assignment.experiment,
                    session.pk,
                )
                continue
            ABAssignment.objects.filter(pk=assignment.pk).update(metrics=values, sampled_at=timezone.now())
            kept += 1
    return kept


# --- the report -----------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _interval(bounds: tuple[float, float] | None) -> list[float] | None:
    return [bounds[0], bounds[1]] if bounds is not None else None


@dataclass(frozen=True)
class _Arm:
    name: str
    weight: float


def _arms(surface: AgentSurface, name: str, seen: Sequence[str]) -> list[_Arm]:
    """The experiment's arms as discovered (with weights), then arms only the records still
    name (an arm removed since: weight 0)."""
    entry = surface.experiments.get(name)
    arms = [_Arm(a, w) for a, w in zip(entry.value.arms, entry.value.weights, strict=True)] if entry else []
    known = {a.name for a in arms}
    return arms + [_Arm(a, 0.0) for a in seen if a not in known]


# (experiment, arm) -> sessions assigned; (experiment, arm, metric) -> summary of the samples.
Counts = dict[tuple[str, str], int]
Summaries = dict[tuple[str, str, str], Summary]


def report(surface: AgentSurface, sessions: QuerySet[Session]) -> dict[str, Any]:
    """The body of ``GET /<slug>/v1/abs`` over ``sessions`` (the caller's). The aggregates
    are sums the database computes (one row per arm and metric, however many sessions);
    only the newest ``MAX_SESSIONS_LISTED`` assignments are read row by row."""
    assignments = ABAssignment.objects.filter(session__in=sessions)
    counts: Counts = {
        (row["experiment"], row["arm"]): row["n"]
        for row in assignments.values("experiment", "arm").annotate(n=Count("id")).order_by()
    }
    summaries = _summaries(assignments)
    seen = {experiment for experiment, _ in counts}
    names = list(surface.experiments) + sorted(seen - set(surface.experiments))
    experiments = [_experiment(surface, name, counts, summaries) for name in names]
    newest = assignments.order_by("-assigned_at", "-pk").values_list(
        "session_id", "experiment", "arm", "assigned_at", "metrics"
    )[:MAX_SESSIONS_LISTED]
    listed = [
        {
            "sessionId": session_id,
            "experiment": experiment,
            "arm": arm,
            "assignedAt": _iso(assigned_at),
            "metrics": metrics or {},
        }
        for session_id, experiment, arm, assigned_at, metrics in newest
    ]
    return {"experiments": experiments, "sessions": listed}


def _summaries(assignments: QuerySet[ABAssignment]) -> Summaries:
    """Count, mean and sample variance of each metric per arm: in one grouped query on
    Postgres; row by row elsewhere (SQLite, the embedded form's small data)."""
    if connection.vendor != "postgresql":
        values: dict[tuple[str, str, str], list[float]] = {}
        for experiment, arm, metrics in assignments.values_list("experiment", "arm", "metrics"):
            for metric, value in (metrics or {}).items():
                values.setdefault((experiment, arm, metric), []).append(float(value))
        return {key: Summary.of(found) for key, found in values.items()}
    inner, params = assignments.values("experiment", "arm", "metrics").query.sql_with_params()
    with connection.cursor() as cursor:
        # Samples are {name: number} (clean_metrics), so every value casts to float8.
        cursor.execute(
            "SELECT a.experiment, a.arm, m.key, count(*), avg(m.value::float8), "  # noqa: S608 - the ORM's own SQL
            f"coalesce(var_samp(m.value::float8), 0) FROM ({inner}) a "
            "CROSS JOIN LATERAL jsonb_each_text(a.metrics) m GROUP BY 1, 2, 3",
            params,
        )
        rows = cursor.fetchall()
    return {(e, a, m): Summary(int(n), float(mean), float(variance)) for e, a, m, n, mean, variance in rows}


def _experiment(surface: AgentSurface, name: str, counts: Counts, summaries: Summaries) -> dict[str, Any]:
    arms = _arms(surface, name, sorted(arm for experiment, arm in counts if experiment == name))
    metric_names = sorted({m for experiment, _, m in summaries if experiment == name})
    empty = Summary(0, 0.0, 0.0)
    by_arm: dict[str, dict[str, Summary]] = {
        arm.name: {m: summaries.get((name, arm.name, m), empty) for m in metric_names} for arm in arms
    }
    arm_records = []
    for arm in arms:
        metrics = {
            m: {"n": s.n, "mean": s.mean if s.n else None, "ci95": _interval(mean_interval(s))}
            for m, s in by_arm[arm.name].items()
        }
        arm_records.append(
            {
                "arm": arm.name,
                "weight": arm.weight,
                "sessions": counts.get((name, arm.name), 0),
                "metrics": metrics,
            }
        )
    comparisons = []
    if arms:
        baseline = arms[0].name
        for m in metric_names:
            for arm in arms[1:]:
                a, b = by_arm[arm.name][m], by_arm[baseline][m]
                bounds = difference_interval(a, b)
                comparisons.append(
                    {
                        "metric": m,
                        "arm": arm.name,
                        "baseline": baseline,
                        "difference": a.mean - b.mean if a.n and b.n else None,
                        "ci95": _interval(bounds),
                        "significant": bounds is not None and (bounds[0] > 0 or bounds[1] < 0),
                    }
                )
    entry = surface.experiments.get(name)
    return {
        "name": name,
        "description": entry.value.description if entry else None,
        "arms": arm_records,
        "comparisons": comparisons,
    }
