"""Where an agent's telemetry goes, and the exporters that take it there (OTLP/HTTP,
protobuf).

An agent exports when its ``otel.py`` names an endpoint, or when the environment does
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or the per-signal ``..._TRACES_ENDPOINT`` /
``..._METRICS_ENDPOINT``); ``define_otel(enabled=False)`` turns both off for that agent,
and nothing at all is exported without an endpoint (no exporter, no thread, no
instrument is made; every call is a dictionary lookup that finds nothing).

One ``Telemetry`` (a batch span processor and a meter provider, each with its own
background thread) serves every agent with the same destination, so a hundred agents
exporting to the operator's collector share one pair of threads.

An endpoint named in ``otel.py`` is the agent author's (a tenant's): exports to it go
through the outbound policy (checked at discovery, and again for each request, on
every address the name resolves to) and carry only the headers ``otel.py`` gives,
never the environment's (which are the operator's collector credentials).
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agents.runtime.outbound import OutboundPolicy
from agents.sdk import OtelConfig

logger = logging.getLogger(__name__)

FRAMEWORK = "agent_platform"
DEFAULT_SERVICE_NAME = "agent-platform"
# Instruments one destination makes for authored code (ctx.host.otel): a bound on what
# a tenant's metric names can cost the process.
MAX_AUTHORED_INSTRUMENTS = 200
# Headers the exporter itself sets, kept when an agent's own headers replace the rest.
_EXPORTER_HEADERS = ("content-type", "content-encoding", "user-agent")


@dataclass(frozen=True)
class EnvExport:
    """What the environment says (read by the settings module): full signal URLs, empty
    when the environment names no endpoint (or ``OTEL_SDK_DISABLED`` is true)."""

    traces_url: str = ""
    metrics_url: str = ""
    service_name: str = ""


@dataclass(frozen=True)
class Destination:
    """Where one agent's telemetry goes; ``headers`` None: the environment's (the
    exporter reads them), else exactly these."""

    traces_url: str
    metrics_url: str
    service_name: str
    headers: tuple[tuple[str, str], ...] | None = None

    @property
    def authored(self) -> bool:
        """The endpoint came from ``otel.py`` (so the outbound policy applies)."""
        return self.headers is not None


def destination(otel: OtelConfig | None, env: EnvExport) -> Destination | None:
    """Where an agent with ``otel`` (its ``otel.py``, or None) exports, or None: nothing."""
    if otel is not None and not otel.enabled:
        return None
    service = (otel.service_name if otel is not None else None) or env.service_name or DEFAULT_SERVICE_NAME
    if otel is not None and otel.endpoint:
        base = otel.endpoint.rstrip("/")
        headers = tuple(sorted(otel.headers.items()))
        return Destination(f"{base}/v1/traces", f"{base}/v1/metrics", service, headers)
    if env.traces_url or env.metrics_url:
        return Destination(env.traces_url, env.metrics_url, service)
    return None


class _PolicedSession(requests.Session):
    """A ``requests`` session for an agent's own collector: every request's URL and
    every address its host resolves to pass the outbound policy; its headers are the
    exporter's own plus the agent's, nothing from the environment."""

    def __init__(self, policy: OutboundPolicy, headers: Mapping[str, str]) -> None:
        super().__init__()
        self.trust_env = False  # no proxy or .netrc from the environment
        self._policy = policy
        self._agent_headers = dict(headers)

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        target = url.decode() if isinstance(url, bytes) else url
        _, host, port = self._policy.check_url(target)
        self._policy.resolve(host, port)
        given = {key.lower(): value for key, value in (kwargs.pop("headers", None) or {}).items()}
        headers = {key: given[key] for key in _EXPORTER_HEADERS if key in given}
        kwargs["headers"] = {**headers, **self._agent_headers}
        verb = method.decode() if isinstance(method, bytes) else method
        return super().request(verb, target, *args, **kwargs)


class Telemetry:
    """The exporters of one destination, and the instruments made on its meter."""

    def __init__(self, where: Destination, policy: OutboundPolicy) -> None:
        self.destination = where
        self.resource = Resource.create({"service.name": where.service_name, "agent_sdk.framework": FRAMEWORK})
        exporter_options: dict[str, Any] = {}
        if where.headers is not None:
            headers = dict(where.headers)
            exporter_options = {"headers": headers, "session": _PolicedSession(policy, headers)}
        self.spans: BatchSpanProcessor | None = None
        if where.traces_url:
            self.spans = BatchSpanProcessor(OTLPSpanExporter(endpoint=where.traces_url, **exporter_options))
        self.meters: MeterProvider | None = None
        if where.metrics_url:
            if where.headers is not None:  # a session of its own: requests sessions are not shared across threads
                exporter_options = {**exporter_options, "session": _PolicedSession(policy, dict(where.headers))}
            reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=where.metrics_url, **exporter_options))
            self.meters = MeterProvider(metric_readers=[reader], resource=self.resource)
        self._meter = self.meters.get_meter("agent_platform") if self.meters is not None else None
        self._instruments: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def export(self, spans: list[ReadableSpan]) -> None:
        """Queue finished spans (the processor's thread sends them)."""
        if self.spans is not None:
            for span in spans:
                self.spans.on_end(span)

    def _instrument(self, kind: str, name: str, unit: str = "1", *, authored: bool = False) -> Any:
        if self._meter is None:
            return None
        key = (kind, name)
        with self._lock:
            found = self._instruments.get(key)
            if found is None:
                if authored and len(self._instruments) >= MAX_AUTHORED_INSTRUMENTS:
                    raise ValueError(
                        f"this agent has made {MAX_AUTHORED_INSTRUMENTS} instruments already; not {name!r}"
                    )
                make = self._meter.create_counter if kind == "counter" else self._meter.create_histogram
                found = self._instruments[key] = make(name, unit=unit)
            return found

    def add(
        self, name: str, value: float, attributes: Mapping[str, Any], *, unit: str = "1", authored: bool = False
    ) -> None:
        counter = self._instrument("counter", name, unit, authored=authored)
        if counter is not None:
            counter.add(value, dict(attributes))

    def record(
        self, name: str, value: float, attributes: Mapping[str, Any], *, unit: str = "1", authored: bool = False
    ) -> None:
        histogram = self._instrument("histogram", name, unit, authored=authored)
        if histogram is not None:
            histogram.record(value, dict(attributes))

    def flush(self, timeout_millis: int = 5_000) -> None:
        if self.spans is not None:
            self.spans.force_flush(timeout_millis)
        if self.meters is not None:
            self.meters.force_flush(timeout_millis)

    def shutdown(self) -> None:
        if self.spans is not None:
            self.spans.shutdown()
        if self.meters is not None:
            self.meters.shutdown()


_telemetries: dict[Destination, Telemetry] = {}
_telemetries_lock = threading.Lock()


def telemetry_for(where: Destination | None, policy: OutboundPolicy) -> Telemetry | None:
    """The process's ``Telemetry`` for a destination (made on first use), or None for none."""
    if where is None:
        return None
    found = _telemetries.get(where)
    if found is None:
        with _telemetries_lock:
            found = _telemetries.get(where)
            if found is None:
                found = _telemetries[where] = Telemetry(where, policy)
    return found


@atexit.register
def shutdown_all() -> None:
    """Send what is queued and stop every exporter of this process (at exit; and for
    tests and benchmarks that end a destination)."""
    with _telemetries_lock:
        ending = list(_telemetries.values())
        _telemetries.clear()
    for telemetry in ending:
        try:
            telemetry.shutdown()
        except Exception:  # at exit: an exporter that cannot finish must not stop the others
            logger.warning("an OpenTelemetry exporter did not shut down cleanly", exc_info=True)


# --- attributes authored code sets on the span it runs in ----------------------------------

# The span authored code runs in: (turn id, call id or None for the turn itself).
current_span: contextvars.ContextVar[tuple[str, str | None] | None] = contextvars.ContextVar(
    "agent_platform_current_span", default=None
)
# Attributes set with ctx.host.otel.set_attributes, by turn, then call id, until the
# turn's spans are built (in the process that ran the code). Bounded: turns whose
# spans are never built (the worker went away) must not grow it for ever.
MAX_PENDING_TURNS = 4_096
_pending: OrderedDict[str, dict[str | None, dict[str, Any]]] = OrderedDict()
_pending_lock = threading.Lock()


@contextmanager
def running_in(turn_id: str, call_id: str | None = None) -> Iterator[None]:
    """Mark what runs inside as part of this turn's span (or this call's)."""
    token = current_span.set((turn_id, call_id))
    try:
        yield
    finally:
        current_span.reset(token)


def set_attributes(attributes: Mapping[str, Any]) -> None:
    """Add ``attributes`` to the span the caller runs in (nothing outside a turn)."""
    where = current_span.get()
    if where is None:
        return
    attributes = checked_attributes(attributes)
    turn_id, call_id = where
    with _pending_lock:
        _pending.setdefault(turn_id, {}).setdefault(call_id, {}).update(attributes)
        _pending.move_to_end(turn_id)
        while len(_pending) > MAX_PENDING_TURNS:
            _pending.popitem(last=False)


def take_attributes(turn_id: str) -> dict[str | None, dict[str, Any]]:
    """The attributes set for a turn's spans (removed: they are used once)."""
    with _pending_lock:
        return _pending.pop(turn_id, {})


def checked_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """``attributes`` if OpenTelemetry can carry them: string keys; str, bool, int or
    float values, or lists of one of those.

    Raises:
        ValueError: naming the first key or value it cannot carry.
    """
    if not isinstance(attributes, Mapping):
        raise ValueError(f"attributes must be a mapping, not {type(attributes).__name__}")
    for key, value in attributes.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"attribute names are non-empty strings, not {key!r}")
        values = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(item, str | bool | int | float) for item in values):
            raise ValueError(f"attribute {key!r}: {value!r} is not a str, bool, int, float or a list of them")
    return {key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()}
