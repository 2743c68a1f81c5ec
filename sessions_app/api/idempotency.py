"""``Idempotency-Key``: the same key with the same request gets the first answer again."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.handlers import waiting_on_another_request
from sessions_app.models import IdempotencyRecord

HEADER = "Idempotency-Key"
PENDING = 0  # status_code of a record whose first request is still being answered
WAIT_SECONDS = 10.0

MAX_KEY_CHARS = 200
# Printable ASCII, as in the IETF draft's sf-string; the column cannot hold NUL anyway.
KEY_PATTERN = re.compile(rf"[\x20-\x7e]{{1,{MAX_KEY_CHARS}}}")

IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    {"type": "string", "pattern": f"^{KEY_PATTERN.pattern}$"},
    location=OpenApiParameter.HEADER,
    required=False,
    description="Replays the first answer.",
)


def request_digest(method: str, path: str, data: Any) -> str:
    """What a retry with the same key must repeat: the method, the path and the body."""
    body = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(f"{method} {path}\n{body}".encode()).hexdigest()


def _digest(request: Request) -> str:
    return request_digest(str(request.method), request.path, request.data)


def idempotent(request: Request, answer: Callable[[], Response]) -> Response:
    """Answer the request once per key; a retry with the key gets the stored answer.

    Raises:
        ApiError: 400 for a key reused with a different request; 409 when the first
            request with the key is still being answered after a wait.
    """
    key = request.headers.get(HEADER)
    if key is None:
        return answer()
    if not KEY_PATTERN.fullmatch(key):
        raise ApiError(400, "invalid", f"{HEADER} must be 1 to {MAX_KEY_CHARS} printable ASCII characters.")
    principal, digest = caller(request).principal, _digest(request)
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.create(
                principal=principal, key=key, request_hash=digest, status_code=PENDING, response={}
            )
    except IntegrityError:
        return _replay(principal.pk, key, digest)
    try:
        response = answer()
    except Exception:
        record.delete()  # a failed first attempt may be retried with the same key
        raise
    if 200 <= response.status_code < 300:
        IdempotencyRecord.objects.filter(pk=record.pk).update(status_code=response.status_code, response=response.data)
    else:
        record.delete()
    return response


def _replay(principal_id: int, key: str, digest: str) -> Response:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        record = IdempotencyRecord.objects.filter(principal_id=principal_id, key=key).first()
        if record is None:
            raise ApiError(409, "idempotency_conflict", "The first request with this key failed; retry it.")
        if record.request_hash != digest:
            raise ApiError(400, "invalid", f"This {HEADER} was used with a different request.")
        if record.status_code != PENDING:
            return Response(record.response, status=record.status_code)
        if time.monotonic() > deadline:
            raise ApiError(409, "idempotency_conflict", "The first request with this key is still running.")
        waiting_on_another_request()  # the tenant's next requests need not wait for this one
        time.sleep(0.05)
