"""Run a command (the test suite) with a Postgres and a Redis that answer.

``make test`` runs ``python scripts/test_services.py python -m pytest ...`` with
``DATABASE_URL`` and ``REDIS_URL`` set from ``TEST_DATABASE_URL`` and ``TEST_REDIS_URL``.
Each URL is tried first, and used as it is when it answers: a Postgres server that
lets us log in with that URL, a Redis that answers PING. For each one that does not,
a throwaway server of our own is started from the installed server binaries, on a
free loopback port, under one temporary folder, and the command gets a URL that
points at it. The servers are stopped and the folder removed when the command ends,
fails or is interrupted (Ctrl-C, SIGTERM).

The throwaway cluster is made by ``initdb`` with trust auth for its own superuser
``postgres``, so nothing depends on how the machine's own server is set up.
PostgreSQL refuses to run as root: as root, ``initdb`` and ``pg_ctl`` run as the
``postgres`` user (Debian's package creates it) through ``runuser``.

When a server is needed and its binaries are missing, this says which packages to
install and exits 1 without running the command.

Environment: ``PG_BINDIR`` names the folder of ``initdb`` and ``pg_ctl`` when they are
neither in ``/usr/lib/postgresql/<version>/bin`` (the newest is taken) nor on ``PATH``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

PREFIX = "test services:"
POSTGRES_USER = "postgres"
# The unprivileged account that runs initdb and pg_ctl when we are root.
POSTGRES_OS_USER = "postgres"

INSTALL_POSTGRES = (
    "Install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql),"
    " set PG_BINDIR to the folder holding initdb and pg_ctl, or set TEST_DATABASE_URL to a server that answers."
)
INSTALL_REDIS = (
    "Install the Redis server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis),"
    " or set TEST_REDIS_URL to a server that answers."
)


class ServiceError(Exception):
    """A throwaway server could not be made or started; the message says why."""


def redacted(url: str) -> str:
    """``url`` with its password replaced, for printing."""
    if not url:
        return "an empty URL"
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def postgres_problem(url: str) -> str | None:
    """Why ``url`` is no usable Postgres server (None when we can log in).

    It logs in to the ``postgres`` database, as Django does to create the test
    database, so the database named in the URL need not exist."""
    if not url:
        return "not set"
    try:
        with psycopg.connect(url, dbname="postgres", connect_timeout=5):
            return None
    except psycopg.Error as error:
        return first_line(error)


def redis_problem(url: str) -> str | None:
    """Why ``url`` is no usable Redis server (None when it answers PING)."""
    if not url:
        return "not set"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, ValueError) as error:
        return first_line(error)
    return None


def postgres_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (and ``postgres`` beside them)."""
    wanted = ("initdb", "pg_ctl", "postgres")
    if configured := os.environ.get("PG_BINDIR"):
        candidates = [Path(configured)]
    else:
        versions = sorted(
            Path("/usr/lib/postgresql").glob("*/bin"),
            key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
            reverse=True,
        )
        # pg_ctl finds postgres beside its real path: follow symlinks (/usr/local/bin -> ...).
        on_path = [Path(found).resolve().parent for found in [shutil.which("pg_ctl")] if found]
        candidates = [*versions, *on_path]
    return next((folder for folder in candidates if all((folder / name).is_file() for name in wanted)), None)


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_host_and_port(url: str, scheme: str, user: str | None, port: int) -> str:
    """``url``'s path (database name or number) on 127.0.0.1:``port``."""
    netloc = f"{user}@127.0.0.1:{port}" if user else f"127.0.0.1:{port}"
    return urlunsplit((scheme, netloc, urlsplit(url).path, "", ""))


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class ThrowawayPostgres:
    """A Postgres cluster of our own in ``folder``, on a free loopback port."""

    def __init__(self, bindir: Path, folder: Path) -> None:
        self.bindir = bindir
        self.folder = folder / "postgres"
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = 0
        self.folder.mkdir()
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(POSTGRES_OS_USER)
            except KeyError:
                raise ServiceError(
                    f"PostgreSQL does not run as root and there is no {POSTGRES_OS_USER!r} user to run it:"
                    f" create one (apt-get install postgresql does) or run the tests as an unprivileged user."
                ) from None
            # The postgres user must reach its folder inside our (0700) temporary one.
            folder.chmod(0o711)
            shutil.chown(self.folder, POSTGRES_OS_USER, POSTGRES_OS_USER)

    def url(self, like: str) -> str:
        url = with_host_and_port(like, "postgres", POSTGRES_USER, self.port)
        return url if urlsplit(url).path.strip("/") else f"{url.rstrip('/')}/agent_platform"

    def start(self) -> None:
        self._initdb()
        for _attempt in range(3):
            self.port = free_port()
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder}"
                # Nothing here outlives the run: durability buys nothing and costs time.
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            started = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
            if started.returncode == 0:
                return
            # Another process may have taken the port between free_port() and the bind.
            if "could not bind" not in log_tail(self.log):
                break
        raise ServiceError(f"the throwaway Postgres did not start:\n{started.stdout}{log_tail(self.log)}")

    def stop(self) -> None:
        if not (self.data / "postmaster.pid").exists():
            return
        if self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop").returncode != 0:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def _initdb(self) -> None:
        initdb = ["initdb", "-D", str(self.data), "-U", POSTGRES_USER, "--auth=trust", "--encoding=UTF8", "-N"]
        made = self._run(*initdb, "--locale=C.UTF-8")
        if made.returncode != 0:
            # A system without the C.UTF-8 locale (macOS): plain C sorts the same.
            shutil.rmtree(self.data, ignore_errors=True)
            made = self._run(*initdb, "--locale=C")
        if made.returncode != 0:
            raise ServiceError(f"initdb failed:\n{made.stdout}")

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bindir / program), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", POSTGRES_OS_USER, "--", *argv]
        # Captured: the postmaster writes to its own log (-l), so the pipe closes with pg_ctl.
        return subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120
        )


class ThrowawayRedis:
    """A ``redis-server`` of our own in ``folder``, on a free loopback port, keeping nothing on disk."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder / "redis"
        self.log = self.folder / "server.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.folder.mkdir()

    def url(self, like: str) -> str:
        return with_host_and_port(like, "redis", None, self.port)

    def start(self) -> None:
        self.port = free_port()
        argv = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder)]
        with self.log.open("wb") as log:
            # Its own session: Ctrl-C reaches the tests, which still need Redis to end cleanly.
            self.process = subprocess.Popen(
                [*argv, "--save", "", "--appendonly", "no"], stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + 15
        while redis_problem(self.url("")) is not None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ServiceError(f"the throwaway Redis did not start:\n{log_tail(self.log)}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@contextlib.contextmanager
def answering_services(database_url: str, redis_url: str) -> Iterator[dict[str, str]]:
    """The environment to run the tests with: the given URLs where they answer, a
    throwaway server's URL where they do not. Throwaway servers stop on exit."""
    database_problem, cache_problem = postgres_problem(database_url), redis_problem(redis_url)
    bindir = postgres_bindir() if database_problem else None
    redis_binary = shutil.which("redis-server") if cache_problem else None
    missing = []
    if database_problem and bindir is None:
        missing.append(f"no Postgres answers on {redacted(database_url)!r} ({database_problem}). {INSTALL_POSTGRES}")
    if cache_problem and redis_binary is None:
        missing.append(f"no Redis answers on {redacted(redis_url)!r} ({cache_problem}). {INSTALL_REDIS}")
    if missing:
        raise ServiceError("\n".join(missing))

    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
    folder = Path(tempfile.mkdtemp(prefix="agent-platform-test-services-"))
    servers: list[ThrowawayPostgres | ThrowawayRedis] = []
    try:
        if bindir is not None:
            postgres = ThrowawayPostgres(bindir, folder)
            servers.append(postgres)
            postgres.start()
            env["DATABASE_URL"] = postgres.url(database_url)
            say(f"no Postgres answers on {redacted(database_url)} ({database_problem});")
            say(f"  started a throwaway one: {env['DATABASE_URL']} (in {folder})")
        if redis_binary is not None:
            cache = ThrowawayRedis(redis_binary, folder)
            servers.append(cache)
            cache.start()
            env["REDIS_URL"] = cache.url(redis_url)
            say(f"no Redis answers on {redacted(redis_url)} ({cache_problem});")
            say(f"  started a throwaway one: {env['REDIS_URL']} (in {folder})")
        yield env
    finally:
        for server in reversed(servers):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
        if servers:
            say("throwaway servers stopped and removed")


def say(line: str) -> None:
    print(PREFIX, line, file=sys.stderr, flush=True)


def run(command: list[str], env: dict[str, str]) -> int:
    """Run ``command`` to its end and return its exit status.

    Ctrl-C reaches the command from the terminal (same process group): we wait for it
    to finish its own clean-up rather than die first. SIGTERM and SIGHUP, sent to us
    alone, are passed on to it."""
    child = subprocess.Popen(command, env={**os.environ, **env})

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    # Handlers, not SIG_IGN: an ignored signal would stay ignored in the child.
    previous = {signum: signal.signal(signum, pass_on) for signum in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    try:
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return status if status >= 0 else 128 - status


def stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    """While servers are being started, SIGTERM and SIGHUP end us through the clean-up."""
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    if not argv:
        print(f"usage: {Path(sys.argv[0]).name} COMMAND [ARG...]", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop_on_signal)
    try:
        with answering_services(os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")) as env:
            return run(argv, env)
    except ServiceError as error:
        say(str(error))
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
