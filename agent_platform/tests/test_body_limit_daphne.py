"""Oversized bodies against a real daphne process, over raw sockets: the test client can
neither stream a chunked body nor lie about ``Content-Length`` (RELIABILITY.md §1 row 12,
GHSA-933h-hp56-hf7m). A body over the cap is 413 whether its length is declared, absent
or understated, the server does not hold it in memory, and nothing is created."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from agent_platform.tests.daphne import serve
from agent_platform.tests.factories import issue_token
from sessions_app.models import Session

LIMIT = 64 * 1024

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker, tmp_path_factory):
    """daphne serving the platform on the test database, with a 64 KiB body cap."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the server process needs DATABASE_URL (Postgres)")
    yield from serve(
        tmp_path_factory, {"PLATFORM_MAX_BODY_BYTES": str(LIMIT), "PLATFORM_DEV": "0"}, "/weather/v1/health"
    )


def exchange(port: int, head: bytes, chunks: Iterable[bytes] = (), timeout: float = 20) -> tuple[int, bytes, bytes]:
    """Send ``head`` and then ``chunks`` (stopping if the server hangs up), and read the
    first response: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before the body was all sent: what we want
        data = b""
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
        head_part, _, rest = data.partition(b"\r\n\r\n")
        status = int(head_part.split(b" ", 2)[1])
        length = next(
            (
                int(line.split(b":")[1])
                for line in head_part.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            None,
        )
        while length is not None and len(rest) < length:
            piece = sock.recv(65536)
            if not piece:
                break
            rest += piece
        return status, head_part, rest[:length] if length is not None else rest


def _post_head(token: str, extra: str) -> bytes:
    return (
        "POST /weather/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n{extra}\r\n"
    ).encode()


def _chunked(body: bytes, size: int = 64 * 1024) -> Iterable[bytes]:
    for start in range(0, len(body), size):
        piece = body[start : start + size]
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def _big_body(size: int) -> bytes:
    return json.dumps({"message": "x" * size}).encode()


def test_a_declared_length_over_the_limit_is_413_before_any_body_is_sent(daphne, alice):
    started = time.monotonic()
    status, _, body = exchange(daphne.port, _post_head(issue_token(alice), f"Content-Length: {LIMIT * 1000}\r\n"))
    assert status == 413
    assert json.loads(body)["error"] == "body_too_large"
    assert time.monotonic() - started < 5
    assert not Session.objects.exists()


def test_a_client_still_sending_a_refused_body_reads_the_413_rather_than_a_reset(daphne, alice):
    """The answer comes at the headers; the client, not reading yet, sends 16 MB more."""
    body = _big_body(16 * 1024 * 1024)
    head = _post_head(issue_token(alice), f"Content-Length: {len(body)}\r\n")
    with socket.create_connection(("127.0.0.1", daphne.port), timeout=20) as sock:
        sock.sendall(head)
        for start in range(0, len(body), 64 * 1024):
            sock.sendall(body[start : start + 64 * 1024])  # no BrokenPipeError, no reset
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == "body_too_large"
    assert not Session.objects.exists()


def test_a_chunked_body_over_the_limit_is_413_and_not_held_in_memory(daphne, alice):
    before = _rss_kb(daphne.pid)
    body = _big_body(32 * 1024 * 1024)
    status, _, answer = exchange(
        daphne.port, _post_head(issue_token(alice), "Transfer-Encoding: chunked\r\n"), _chunked(body)
    )
    assert status == 413
    assert json.loads(answer)["error"] == "body_too_large"
    grown_mb = (_rss_kb(daphne.pid) - before) / 1024
    assert grown_mb < 16, f"daphne grew by {grown_mb:.0f} MB for a 32 MB body"
    assert not Session.objects.exists()


def test_an_understated_content_length_reads_only_what_it_declared(daphne, alice):
    body = _big_body(2 * 1024 * 1024)
    status, _, answer = exchange(daphne.port, _post_head(issue_token(alice), "Content-Length: 16\r\n"), [body])
    assert status == 400  # the first 16 bytes are not a JSON document
    assert json.loads(answer)["error"] == "parse_error"
    assert not Session.objects.exists()


def test_content_length_together_with_chunked_is_refused(daphne, alice):
    head = _post_head(issue_token(alice), "Content-Length: 16\r\nTransfer-Encoding: chunked\r\n")
    status, _, _ = exchange(daphne.port, head, _chunked(_big_body(2 * 1024 * 1024)))
    assert status in (400, 413)
    assert not Session.objects.exists()


def test_a_body_within_the_limit_is_served_whether_declared_or_chunked(daphne, alice):
    token, body = issue_token(alice), json.dumps({"message": "hi", "title": "small"}).encode()
    status, _, answer = exchange(daphne.port, _post_head(token, f"Content-Length: {len(body)}\r\n") + body)
    assert status == 201, answer
    status, _, answer = exchange(daphne.port, _post_head(token, "Transfer-Encoding: chunked\r\n"), _chunked(body))
    assert status == 201, answer
    assert Session.objects.filter(title="small").count() == 2
