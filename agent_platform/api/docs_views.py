"""``/api/docs/redoc/``: Redoc for the OpenAPI schema, from this origin.

Redoc's bundle (drf-spectacular-sidecar) is served as is but for one address: its
sidebar's "API docs by Redocly" logo is an image on Redocly's CDN, which the
Content-Security-Policy refuses (``img-src 'self'``) with a console error on every visit.
``redoc_bundle`` serves the bundle with that address pointing at the platform's own icon.
"""

from __future__ import annotations

from functools import cache

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.urls import reverse
from drf_spectacular.views import SpectacularRedocView

BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@cache
def _bundle() -> bytes:
    path = finders.find(BUNDLE)
    if not isinstance(path, str):
        raise FileNotFoundError(BUNDLE)
    with open(path, encoding="utf-8") as file:
        return file.read().replace(CDN_LOGO, static("favicon.svg")).encode()


def redoc_bundle(request: HttpRequest) -> HttpResponse:
    """``GET /api/docs/redoc/redoc.standalone.js``: the sidecar's Redoc with no CDN address."""
    response = HttpResponse(_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response


class RedocView(SpectacularRedocView):
    """Redoc's page (``templates/api_docs/redoc.html``), with the bundle of ``redoc_bundle``."""

    template_name = "api_docs/redoc.html"
    authentication_classes = []
    permission_classes = []
    url_name = "openapi-schema"

    @staticmethod
    def _redoc_standalone() -> str:
        return reverse("api-redoc-bundle")
