"""A Content-Security-Policy on every response the platform serves.

Pages load script only from this origin's static files: no inline ``<script>``, no
``on*=`` attribute, no ``javascript:`` URL runs, so HTML that slips into a page (an
agent's playground renderer, say) cannot read the bearer token the playground keeps in
``sessionStorage``. Styles may be inline: Django's admin and renderers use ``style=``,
and CSS cannot run script; ``img-src`` keeps ``url()`` and images on this origin, so a
style or an image cannot carry data elsewhere either.

A response that brings its own policy (an artifact's download: ``sandbox``) keeps it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

HEADER = "Content-Security-Policy"

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        # 'self' covers ws:// and wss:// to this host: the playground's event stream.
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def with_policy(response: HttpResponseBase) -> HttpResponseBase:
    if HEADER not in response:
        response[HEADER] = POLICY
    return response


@sync_and_async_middleware
def content_security_policy(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Django middleware: ``POLICY`` on each response that names none. Works in both
    modes, so the async stream views pay no thread hop for it."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            response: Awaitable[HttpResponseBase] = get_response(request)
            return with_policy(await response)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return with_policy(get_response(request))

    return middleware
