"""Every shell command of README.md works: they are read from the README's code blocks
(so they cannot drift from it) and run as written, with bash, against the embedded form
(a fresh var/ folder, a copy of examples/ as AGENTS_DIR, nothing else in the
environment), served on a free port by what ``make run`` runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMANDS = (".venv/bin/python ", "curl ", "make ", "docker ")
PORT_IN_README = "8000"
# README commands this test does not run, and why (anything else it finds, it runs).
NOT_RUN = {
    "make run": "the server fixture runs what it runs (migrate, then agent serve) on a free port",
    "make test": "it is this suite",
    ".venv/bin/python manage.py createsuperuser": "it asks for a password on the terminal",
    "docker compose up --build": "the distributed form; agent_platform/tests/test_compose.py checks the compose file",
}
# A stream stays open while its session lives: it is read for this long, then closed.
STREAM_SECONDS = 6.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def readme_commands() -> list[str]:
    """The shell commands of the README's code blocks without a language, in order, with
    continuation lines (a trailing backslash) joined."""
    commands: list[str] = []
    block_language: str | None = None
    pending = ""
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            block_language = None if block_language is not None else line[3:].strip()
            continue
        if block_language != "":
            continue
        if not pending and not line.startswith(COMMANDS):
            continue
        pending = f"{pending} {line.strip()}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        commands.append(pending)
        pending = ""
    return commands


def without_comment(command: str) -> str:
    return command.split("  #")[0].split(" # ")[0].strip()


@dataclass
class Ran:
    command: str
    returncode: int | None  # None: still running after STREAM_SECONDS (a stream), then closed
    stdout: str
    stderr: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Checkout:
    """A folder that looks like the repository to the commands (``.venv``, ``manage.py``)
    and the embedded form's environment."""

    folder: Path
    env: dict[str, str]

    def run(self, command: str, timeout: float = 120) -> Ran:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.folder,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            return Ran(command, process.returncode, stdout, stderr)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            stdout, stderr = process.communicate(timeout=30)
            return Ran(command, None, stdout, stderr)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Iterator[tuple[Checkout, int]]:
    folder = tmp_path_factory.mktemp("readme")
    (folder / ".venv").symlink_to(Path(sys.prefix))  # the virtualenv running this suite
    (folder / "manage.py").symlink_to(ROOT / "manage.py")  # Python puts the real folder on sys.path
    shutil.copytree(ROOT / "examples", folder / "agents", ignore=shutil.ignore_patterns("__pycache__"))
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env.update(PLATFORM_VAR_DIR=str(folder / "var"), AGENTS_DIR=str(folder / "agents"), AGENT_DEFAULT_MODEL="test")
    here = Checkout(folder, env)
    port = free_port()
    assert here.run(".venv/bin/python manage.py migrate --noinput -v0").returncode == 0
    log = (folder / "serve.log").open("w")
    server = subprocess.Popen(
        [".venv/bin/python", "manage.py", "agent", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while "Listening on" not in (folder / "serve.log").read_text():
        assert server.poll() is None and time.monotonic() < deadline, (folder / "serve.log").read_text()
        time.sleep(0.2)
    yield here, port
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)
    log.close()


def json_documents(text: str) -> list[dict]:
    """The JSON document(s) a command printed (one, or NDJSON)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_readme_has_the_commands_this_test_knows_of():
    commands = [without_comment(command) for command in readme_commands()]
    assert set(NOT_RUN) <= set(commands), set(NOT_RUN) - set(commands)
    assert len(commands) > 20 and any(command.startswith("curl -s -X POST") for command in commands)


def test_every_readme_command_works_against_the_embedded_form(checkout):
    here, port = checkout
    known: dict[str, str] = {}
    failures: list[Ran] = []
    for written in readme_commands():
        if without_comment(written) in NOT_RUN:
            continue
        command = written.replace(f"localhost:{PORT_IN_README}", f"127.0.0.1:{port}")
        command = command.replace(f"127.0.0.1:{PORT_IN_README}", f"127.0.0.1:{port}")
        command = command.replace("ses_...", known.get("session", "ses_...")).replace(
            "apt_XXXXXXXX", known.get("prefix", "apt_XXXXXXXX")
        )
        streaming = " -N " in command
        result = here.run(command, timeout=STREAM_SECONDS if streaming else 120)
        if not works(result, streaming):
            failures.append(result)
            continue
        remember(known, command, result)
    assert not failures, "\n\n".join(f"$ {r.command}\n-> {r.returncode}\n{r.stdout}\n{r.stderr}" for r in failures)
    assert {"session", "prefix"} <= set(known), known  # the placeholders were filled in


def works(result: Ran, streaming: bool) -> bool:
    if streaming:  # the stream replayed the turn, and was still open
        return result.returncode is None and "turn.completed" in {d["type"] for d in json_documents(result.stdout)}
    if result.returncode != 0:
        return False
    if result.command.startswith("curl "):
        documents = json_documents(result.stdout)
        return bool(documents) and not any("error" in document for document in documents)
    return True


def remember(known: dict[str, str], command: str, result: Ran) -> None:
    """What later commands name by a placeholder: the first session, a token's prefix."""
    if command.startswith("curl -s -X POST") and "/weather/v1/session" in command and "session" not in known:
        known["session"] = json_documents(result.stdout)[0]["sessionId"]
    if " token list " in command:
        found = re.search(r"^(apt_\S+)\t", result.stdout, re.MULTILINE)
        if found:
            known["prefix"] = found.group(1)
