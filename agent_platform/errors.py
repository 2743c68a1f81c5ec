"""One error envelope for every API route: ``{"error": code, "message": text}``.

DRF exceptions, domain errors (``DomainError``: a refused use case, e.g. a stale
continuation token), oversized bodies and an unreachable database all become JSON
with the right status, in ``api_exception_handler`` alone: views raise, they do not
catch. Nothing returns an HTML page or a traceback to an API caller.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An API error with its own code, e.g. ``ApiError(409, "session_busy", "...")``."""

    def __init__(self, status_code: int, code: str, message: str) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.code = code


class DomainError(Exception):
    """A request the domain refuses, carrying its HTTP answer: ``status``, ``code``,
    extra body fields and headers. Subclasses name the case and set ``status`` and
    ``code``; raised anywhere under a view, it reaches the caller as the envelope.

    Example::

        class SessionBusy(DomainError):
            status, code = 409, "session_busy"

        raise SessionBusy("A turn is running; retry later.")
    """

    status: int = 400
    code: str = "invalid"

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.extra = extra or {}
        self.headers = headers or {}


def _foreign_domain_errors() -> dict[type[Exception], tuple[int, str]]:
    """Errors of the Django-free floor (``agents/``), which cannot subclass ``DomainError``,
    with their HTTP answer."""
    from agents.runtime.workspace import WorkspacePathError

    return {WorkspacePathError: (400, "invalid")}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}


DATABASE_UNAVAILABLE = error_body("unavailable", "The database is unavailable; try again shortly.")
RETRY_AFTER_SECONDS = "5"


def _validation_message(detail: Any, path: str = "") -> list[str]:
    """Flatten DRF's nested validation detail into ``field: problem`` lines."""
    if isinstance(detail, dict):
        lines: list[str] = []
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            lines += _validation_message(value, f"{path}.{name}".strip(".") if name else path)
        return lines
    if isinstance(detail, list):
        return [line for item in detail for line in _validation_message(item, path)]
    return [f"{path}: {detail}" if path else str(detail)]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's ``EXCEPTION_HANDLER``: every failure as the platform's envelope."""
    for foreign, (status, error_code) in _foreign_domain_errors().items():
        if isinstance(exc, foreign):
            exc = DomainError(str(exc), status=status, code=error_code)
    if isinstance(exc, DomainError):
        view = context.get("view")
        if view is not None:
            # DRF's finalize_response writes the view's headers last, over the response's own.
            view.headers.update(exc.headers)
        return Response(error_body(exc.code, str(exc), **exc.extra), status=exc.status, headers=exc.headers)
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("body_too_large", "The request body is too large."), status=413)
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", exc)
        return Response(DATABASE_UNAVAILABLE, status=503, headers={"Retry-After": RETRY_AFTER_SECONDS})
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    if isinstance(exc, exceptions.ValidationError):
        lines = _validation_message(exc.detail)
        response.data = error_body("invalid", "; ".join(lines) or "Invalid request.", details=exc.detail)
    else:
        code = getattr(exc, "code", None) or exc.get_codes()
        code = code if isinstance(code, str) else exc.default_code
        response.data = error_body(code, str(exc.detail))
    return response


def _is_api_path(path: str) -> bool:
    return path.startswith("/api/") or "/v1/" in path


def json_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler404``: JSON for API paths, Django's page elsewhere."""
    if _is_api_path(request.path):
        return JsonResponse(error_body("not_found", "No such route."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception or Http404())


def json_server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: never a traceback; 503 when the cause is the database."""
    if _is_api_path(request.path):
        return JsonResponse(error_body("server_error", "Internal error; it has been logged."), status=500)
    from django.views.defaults import server_error

    return server_error(request)


NUL = "\x00"


def _nul_in_request(request: HttpRequest) -> str | None:
    """Where the request carries a NUL character, if it does: PostgreSQL cannot hold NUL
    in text, so no id, slug, prefix, filter or cookie with one can name anything."""
    if NUL in request.path_info:
        return "The URL path"
    if any(NUL in key or any(NUL in value for value in values) for key, values in request.GET.lists()):
        return "The query string"
    if any(NUL in key or NUL in value for key, value in request.COOKIES.items()):
        return "A cookie"
    return None


class MalformedRequestMiddleware:
    """Refuse with 400 what no route can answer, before any view reads it: a NUL
    character (``%00``) in the path, the query string or a cookie. Without it, each
    place that looks such a value up in the database would fail with a 500."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = _nul_in_request(request)
        if where is None:
            response: HttpResponse = self.get_response(request)
            return response
        message = f"{where} contains a NUL character (%00), which nothing on this platform accepts."
        if _is_api_path(request.path_info):
            return JsonResponse(error_body("invalid", message), status=400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


class DatabaseOutageMiddleware:
    """Turn a lost database connection into 503 JSON on every route, DRF or not."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("database unavailable on %s: %s", request.path, exception)
        response = JsonResponse(DATABASE_UNAVAILABLE, status=503)
        response["Retry-After"] = RETRY_AFTER_SECONDS
        return response
