"""Django settings of ``bench/floor_asgi.py``: the platform's, with the URLconf of
``bench/floor_urls.py`` and, except for ``FLOOR_APP=django-middleware`` and ``drf``, no middleware."""

from __future__ import annotations

import os

from agent_platform.settings import *  # noqa: F403 - the platform's settings, two changed

ROOT_URLCONF = "bench.floor_urls"
if os.environ.get("FLOOR_APP") not in ("django-middleware", "drf"):
    MIDDLEWARE: list[str] = []
