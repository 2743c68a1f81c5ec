"""Typed readers for environment variables, used by the settings module only.

Each reader fails loudly with ``ImproperlyConfigured`` on a value it cannot
parse, so a typo in the environment stops the process at start-up instead of
silently falling back to a default.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from urllib.parse import SplitResult, urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_str(name: str, default: str = "", environ: Mapping[str, str] = os.environ) -> str:
    """The variable's value with surrounding whitespace removed; unset or blank gives ``default``."""
    value = (environ.get(name) or "").strip()
    return value or default


def env_bool(name: str, default: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); unset or empty gives ``default``.

    Raises:
        ImproperlyConfigured: for any other value.
    """
    value = env_str(name, environ=environ).lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use 1 or 0.")


def env_int(name: str, default: int, environ: Mapping[str, str] = os.environ, *, minimum: int = 0) -> int:
    """An integer no smaller than ``minimum``; unset or empty gives ``default``.

    Raises:
        ImproperlyConfigured: when the value is not an integer or is below ``minimum``.
    """
    value = env_str(name, environ=environ)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}.")
    return number


def env_float(
    name: str, default: float, environ: Mapping[str, str] = os.environ, *, minimum: float, maximum: float
) -> float:
    """A number between ``minimum`` and ``maximum``; unset or empty gives ``default``.

    Raises:
        ImproperlyConfigured: when the value is not a number or is out of range.
    """
    value = env_str(name, environ=environ)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if not minimum <= number <= maximum:
        raise ImproperlyConfigured(f"{name}={number} is outside {minimum}..{maximum}.")
    return number


def env_choice(name: str, choices: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> str:
    """One of ``choices`` (any case, returned lower-cased); unset or empty gives the first.

    Raises:
        ImproperlyConfigured: for any other value.
    """
    value = env_str(name, environ=environ).lower()
    if not value:
        return choices[0]
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}.")
    return value


def env_list(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """A comma-separated list with empty items dropped; unset or empty gives ``default``."""
    value = env_str(name, environ=environ)
    if not value:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_fernet_keys(name: str, environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Comma-separated Fernet keys (32 url-safe base64-encoded bytes each), in order; unset: none.

    Raises:
        ImproperlyConfigured: an item that is not a Fernet key, named by its position
            only (the value is a secret).
    """
    keys = env_list(name, [], environ)
    for position, key in enumerate(keys, start=1):
        try:
            raw = base64.urlsafe_b64decode(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raw = b""
        if len(raw) != 32:
            raise ImproperlyConfigured(
                f"{name}: key {position} of {len(keys)} is not a Fernet key (32 url-safe base64-encoded bytes); "
                "make one with `python manage.py secrets generate-key`."
            )
    return tuple(keys)


def env_decimal(name: str, environ: Mapping[str, str] = os.environ) -> Decimal | None:
    """A non-negative decimal number; unset or empty gives None.

    Raises:
        ImproperlyConfigured: when the value is not a number or is negative.
    """
    value = env_str(name, environ=environ)
    if not value:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if not number.is_finite() or number < 0:
        raise ImproperlyConfigured(f"{name}={value!r} must be a number of at least 0.")
    return number


PRICE_FIELDS = ("input", "output", "cacheRead", "cacheWrite")


def env_model_prices(name: str, environ: Mapping[str, str] = os.environ) -> dict[str, dict[str, str]]:
    """A JSON object of per-model prices, ``{"provider:model": {"input": "1.5", "output": "6"}}``
    (USD per million tokens; ``cacheRead`` and ``cacheWrite`` too, each defaulting to 0 but
    ``cacheRead`` to the input price); unset or empty gives ``{}``.

    Raises:
        ImproperlyConfigured: for anything else (not JSON, an unknown field, a price
            that is not a non-negative number).
    """
    value = env_str(name, environ=environ)
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} is not JSON.") from None
    if not isinstance(parsed, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object of model ids.")
    prices: dict[str, dict[str, str]] = {}
    for model, fields in parsed.items():
        if not isinstance(fields, dict) or not fields.keys() <= set(PRICE_FIELDS):
            raise ImproperlyConfigured(f"{name}[{model!r}] must be an object with some of {', '.join(PRICE_FIELDS)}.")
        prices[model] = {}
        for field, price in fields.items():
            try:
                number = Decimal(str(price))
            except InvalidOperation:
                number = Decimal(-1)
            if isinstance(price, bool) or not number.is_finite() or number < 0:
                raise ImproperlyConfigured(f"{name}[{model!r}][{field!r}]={price!r} is not a price of at least 0.")
            prices[model][field] = str(number)
    return prices


def redis_url_for_db(url: str, db: int, name: str = "REDIS_URL") -> str:
    """The same Redis server with another logical database.

    The broker, the channel layer and the cache use separate databases so that
    flushing or evicting one never touches the others (RELIABILITY.md §2).

    Raises:
        ImproperlyConfigured: when ``url`` (the value of ``name``) is not a redis:// or rediss:// URL.
    """
    parts = _redis_parts(url, name)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, ""))


def redis_db(url: str, name: str = "REDIS_URL") -> int:
    """The logical database a Redis URL names: ``redis://host:6379/5`` is 5; none named is 0.

    Raises:
        ImproperlyConfigured: when ``url`` is not a redis:// URL or its path is not a number.
    """
    path = _redis_parts(url, name).path.strip("/")
    if not path:
        return 0
    if not path.isdigit():
        raise ImproperlyConfigured(f"{name}={url!r} names database {path!r}; use a number, e.g. redis://host:6379/5.")
    return int(path)


def env_redis_url(name: str, environ: Mapping[str, str] = os.environ) -> str:
    """A redis:// URL from ``name``, or "" when unset.

    Raises:
        ImproperlyConfigured: when the value is not a redis:// or rediss:// URL.
    """
    value = env_str(name, environ=environ)
    if value:
        redis_db(value, name)
    return value


def _redis_parts(url: str, name: str) -> SplitResult:
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss"} or not parts.hostname:
        raise ImproperlyConfigured(f"{name}={url!r} is not a redis:// URL.")
    return parts
