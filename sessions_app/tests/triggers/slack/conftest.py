"""The fake Slack runs for the whole test session, started while tests are collected:
the live worker inherits the environment when it starts, so ``SLACKER_API_URL`` and the
slacker agent's secrets must be set before any test starts it."""

from __future__ import annotations

import os

import pytest

from sessions_app.tests.triggers.slack.slack_fake import BOT_TOKEN, SIGNING_SECRET, FakeSlack, serve

_FAKE = FakeSlack()
_SERVER = None


def pytest_configure(config: pytest.Config) -> None:
    global _SERVER
    if _SERVER is not None:
        return
    _SERVER = serve(_FAKE)
    host, port = _SERVER.server_address[:2]
    os.environ["SLACKER_API_URL"] = f"http://{host}:{port}/api"
    os.environ["SLACKER_SIGNING_SECRET"] = SIGNING_SECRET
    os.environ["SLACKER_BOT_TOKEN"] = BOT_TOKEN


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SERVER is not None:
        _SERVER.shutdown()
        _SERVER.server_close()


@pytest.fixture
def fake_slack() -> FakeSlack:
    return _FAKE


@pytest.fixture
def slacker(live_agents_dir, settings):
    """The slacker agent served in this process (its turns run only with ``live``)."""
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
