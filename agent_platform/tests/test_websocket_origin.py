"""The WebSocket origin check against a real daphne, over raw handshakes: a page of
another origin (another port on the same host, plain http where the platform is served
otherwise, another allowed host name) cannot open a session's stream with a signed-in
staff user's cookie; a page of the platform's own origin can."""

from __future__ import annotations

import base64
import os
import socket

import pytest
from django.test import Client

from agent_platform.tests.daphne import serve
from agents.events import EventType
from agents.registry import get_agent
from sessions_app.eventlog import append_event
from sessions_app.tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the server process needs DATABASE_URL (Postgres)")
    yield from serve(tmp_path_factory, {"PLATFORM_DEV": "0"}, "/weather/v1/health")


@pytest.fixture
def staff_cookie(alice, django_user_model):
    """The playground's session cookie of a staff account linked to alice."""
    user = django_user_model.objects.create_user(username="alice-staff", is_staff=True)
    alice.user = user
    alice.save()
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def handshake(port: int, path: str, origin: str, cookie: str) -> tuple[int, bytes]:
    """Open a WebSocket as a browser would; (HTTP status, the first bytes after the head)."""
    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\nCookie: {cookie}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
        status = int(received.split(b" ", 2)[1])
        rest = received.partition(b"\r\n\r\n")[2]
        if status == 101:
            while len(rest) < 64:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                rest += chunk
        return status, rest


@pytest.fixture
def stream_path(alice):
    session = SessionFactory(principal=alice, agent=get_agent("weather"), title="alice's")
    append_event(session.pk, EventType.SESSION_STARTED, {"marker": "alice-only"})
    return f"/ws/weather/session/{session.pk}?startIndex=0", session.pk


def test_the_platforms_own_origin_opens_the_stream_with_the_cookie(daphne, staff_cookie, stream_path):
    path, session_id = stream_path
    status, frames = handshake(daphne.port, path, f"http://127.0.0.1:{daphne.port}", staff_cookie)
    assert status == 101
    assert session_id.encode() in frames and b"session.started" in frames


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:{other}",  # another port on the same host
        "http://127.0.0.1",  # the same host, port 80
        "https://127.0.0.1:{port}",  # another scheme
        "http://localhost:{port}",  # another allowed host name
        "null",  # a sandboxed frame or a file
        "https://evil.example",
    ],
)
def test_a_page_of_another_origin_cannot_use_the_cookie(daphne, staff_cookie, stream_path, origin):
    path, session_id = stream_path
    status, rest = handshake(daphne.port, path, origin.format(port=daphne.port, other=daphne.port + 1), staff_cookie)
    assert status == 403
    assert session_id.encode() not in rest and b"alice-only" not in rest
