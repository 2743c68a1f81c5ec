"""A local OTLP/HTTP collector for tests: it answers ``POST /v1/traces`` and
``/v1/metrics`` as a collector does and keeps what it was sent, decoded with
opentelemetry-proto's own message classes (what a real collector parses)."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int


@dataclass(frozen=True)
class Point:
    metric: str
    value: float
    attributes: dict[str, Any]
    resource: dict[str, Any]


class Receiver:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver._lock:
                    receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = ExportTraceServiceResponse() if self.path == "/v1/traces" else ExportMetricsServiceResponse()
                payload = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _bodies(self, path: str) -> list[bytes]:
        with self._lock:
            return [body for where, _, body in self.requests if where == path]

    def spans(self) -> list[Span]:
        found = []
        for body in self._bodies("/v1/traces"):
            request = ExportTraceServiceRequest.FromString(body)
            for batch in request.resource_spans:
                resource = attributes(batch.resource.attributes)
                for scope in batch.scope_spans:
                    for span in scope.spans:
                        found.append(
                            Span(
                                span.name,
                                span.trace_id.hex(),
                                span.span_id.hex(),
                                span.parent_span_id.hex(),
                                span.kind,
                                attributes(span.attributes),
                                resource,
                                span.status.code,
                            )
                        )
        return found

    def points(self) -> list[Point]:
        found = []
        for body in self._bodies("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(body)
            for batch in request.resource_metrics:
                resource = attributes(batch.resource.attributes)
                for scope in batch.scope_metrics:
                    for metric in scope.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            value = point.sum if kind == "histogram" else (point.as_double or point.as_int)
                            found.append(Point(metric.name, value, attributes(point.attributes), resource))
        return found

    def wait_until(self, condition: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver did not get it in {timeout} s: {[r[0] for r in self.requests]}")
            time.sleep(0.1)
