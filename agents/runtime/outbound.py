"""Outbound HTTP for agent tools and MCP connections, guarded against SSRF.

An agent's author (a tenant) names URLs the platform's servers then fetch: MCP
connections, HTTP tools. Nothing they name may reach the platform's own network:
loopback, private, link-local (the cloud metadata address), shared, multicast or
reserved addresses, in any spelling (``0x7f000001``, ``2130706433``, ``0177.1``,
``[::ffff:127.0.0.1]``), and only ``https``. Two checks, one policy:

- ``OutboundPolicy.check_url`` at configuration time (discovery turns a refusal into
  a diagnostic), on the URL alone;
- ``guarded_client`` at connection time: every request (redirects included, since the
  client sends each hop through the same transport) has its URL checked, and every
  connection resolves the host, checks *every* address it resolves to, and connects to
  the checked address itself, so a DNS answer that changes between check and connect
  (rebinding) cannot slip through.

``allow`` names exceptions, for development and tests that need a local server:
``"127.0.0.1:8765"`` (host and port), ``"mcp.internal"`` (a host, any port) or
``"10.0.0.0/8"`` (a network). An allowed host may use ``http``.

Pure Python, no Django (``agents.discovery`` uses it); the platform builds its policy
from ``PLATFORM['OUTBOUND_ALLOW']``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
DEFAULT_PORTS = {"http": 80, "https": 443}
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


class OutboundRefused(Exception):
    """A URL or address the platform will not connect to; ``str()`` says why."""


def _ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` spells, in any form the C resolver would read as a number."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        # inet_aton reads 127.1, 0x7f000001, 2130706433 and 0177.0.0.1 as getaddrinfo would.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def _why_not_public(address: IPAddress) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _why_not_public(address.ipv4_mapped)
    for attribute, reason in (
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address (the cloud metadata service lives there)"),
        ("is_private", "a private address"),
        ("is_multicast", "a multicast address"),
        ("is_unspecified", "the unspecified address"),
        ("is_reserved", "a reserved address"),
    ):
        if getattr(address, attribute):
            return reason
    return None if address.is_global else "not a public address"


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the operating system's resolver gives for ``host``."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(answer[4][0]) for answer in answers]


@dataclass(frozen=True)
class OutboundPolicy:
    """Where outbound HTTP may go; see the module docstring for ``allow``. ``resolver``
    turns a host into addresses (tests stand a DNS stub in here)."""

    allow: tuple[str, ...] = ()
    resolver: Callable[[str, int], list[str]] = system_resolver

    def _allowed(self, host: str, port: int, address: IPAddress | None = None) -> bool:
        for entry in self.allow:
            if entry in (host, f"{host}:{port}"):
                return True
            if "/" in entry and address is not None:
                try:
                    if address in ipaddress.ip_network(entry, strict=False):
                        return True
                except ValueError:
                    continue
        return False

    def check_url(self, url: str) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of a URL the platform may fetch.

        Raises:
            OutboundRefused: for another scheme, plain http, a missing host or port that
                does not parse, a local name, or an address that is not public.
        """
        try:
            parts = urlsplit(url)
            port_given = parts.port
        except ValueError as error:
            raise OutboundRefused(f"{url!r} is not a valid URL: {error}") from None
        scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
        if scheme not in DEFAULT_PORTS:
            raise OutboundRefused(f"{url!r}: only https URLs are allowed, not {scheme or 'no'} scheme")
        if not host:
            raise OutboundRefused(f"{url!r} names no host")
        port = port_given or DEFAULT_PORTS[scheme]
        literal = _ip_literal(host)
        if self._allowed(host, port, literal):
            return scheme, host, port
        if scheme != "https":
            raise OutboundRefused(f"{url!r}: only https is allowed (plain http only for an allowed host)")
        if host in LOCAL_NAMES or host.endswith(".localhost"):
            raise OutboundRefused(f"{url!r} names this machine")
        if literal is not None:
            self.check_address(host, port, literal)
        return scheme, host, port

    def check_address(self, host: str, port: int, address: IPAddress) -> None:
        """Raises OutboundRefused unless ``address`` is public or allowed."""
        reason = _why_not_public(address)
        if reason is not None and not self._allowed(host, port, address):
            raise OutboundRefused(f"{host}:{port} resolves to {address}, {reason}")

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each checked.

        Raises:
            OutboundRefused: when the name does not resolve, or any address is refused
                (one private answer among public ones is enough: a rebinding attacker
                controls which one a client picks).
        """
        try:
            addresses = list(dict.fromkeys(self.resolver(host, port)))
        except (OSError, UnicodeError) as error:
            raise OutboundRefused(f"{host} does not resolve: {error}") from None
        if not addresses:
            raise OutboundRefused(f"{host} does not resolve")
        for address in addresses:
            self.check_address(host, port, ipaddress.ip_address(address.split("%", 1)[0]))
        return addresses


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses the policy accepted, resolved here (not by the OS later)."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await anyio.to_thread.run_sync(self._policy.resolve, host, port)
        # TLS still verifies and sends the name: httpcore starts it with the origin's host.
        return await self._inner.connect_tcp(addresses[0], port, timeout, local_address, socket_options)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise OutboundRefused("unix sockets are not outbound HTTP")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """``httpx2`` transport whose every request and connection passes the policy."""

    def __init__(self, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._policy = policy
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            network_backend=_GuardedBackend(policy),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self._policy.check_url(str(request.url))
        return await super().handle_async_request(request)


def guarded_client(policy: OutboundPolicy, **kwargs: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for agent-initiated requests; no proxy from the
    environment, at most 5 redirects, each one checked.

    Raises (from its requests):
        OutboundRefused: a URL, redirect or resolved address the policy refuses.
    """
    kwargs.setdefault("follow_redirects", True)
    kwargs.setdefault("max_redirects", 5)
    kwargs.setdefault("timeout", 30.0)
    return httpx2.AsyncClient(transport=GuardedTransport(policy), trust_env=False, **kwargs)
