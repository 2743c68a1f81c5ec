"""A Slack thread is one conversation: each mention or DM goes to the thread's session,
its turn runs on the worker and the answer comes back in the thread (the fake Slack
records what the app posts). Messages sent while a turn is queued or running make one
turn; ``stop`` ends the turn and posts nothing; a post Slack refuses is retried, then
given up, and the turn stays completed."""

from __future__ import annotations

import json
import time

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Event, Session, Turn, TurnStatus
from sessions_app.tests.triggers.slack.slack_fake import event_callback, sign
from sessions_app.triggers import slack_api

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/slacker/v1/channels/slack/events"
_ids = iter(range(1_000_000))


def say(channel: str, text: str, ts: str, thread_ts: str | None = None, **extra) -> dict:
    """Deliver a signed event as Slack would; the JSON answer."""
    data = event_callback(
        f"Ev{time.time_ns()}{next(_ids)}", channel=channel, text=text, ts=ts, thread_ts=thread_ts, **extra
    )
    body = json.dumps(data).encode()
    answer = APIClient().generic("POST", URL, body, content_type="application/json", **sign(body))
    assert answer.status_code == 200, answer.content
    return answer.json()


def wait_for(session_id: str, type: str, count: int = 1, timeout: float = 30) -> list[Event]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(Event.objects.filter(session_id=session_id, type=type).order_by("index"))
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {count}x {type} in session {session_id}")


def wait_running(session_id: str) -> None:
    deadline = time.monotonic() + 30
    while not Turn.objects.filter(session_id=session_id, status=TurnStatus.RUNNING).exists():
        assert time.monotonic() < deadline, "the turn never started"
        time.sleep(0.05)


@pytest.fixture
def slack_live(live, slacker):
    live()  # turns run on the live worker


def test_a_mention_is_answered_in_its_thread_and_a_reply_continues_the_session(slack_live, fake_slack):
    first = say("CTHREAD", "<@U0BOT> hello", ts="100.0001")
    [post] = fake_slack.wait_for_posts("CTHREAD")
    assert post["method"] == "chat.postMessage"
    assert post["authorization"] == "Bearer xoxb-test-token"
    assert post["body"] == {"channel": "CTHREAD", "thread_ts": "100.0001", "text": "echo: hello"}

    again = say("CTHREAD", "<@U0BOT> and more", ts="100.0002", thread_ts="100.0001")

    assert again["sessionId"] == first["sessionId"]
    posts = fake_slack.wait_for_posts("CTHREAD", 2)
    assert posts[1]["body"] == {"channel": "CTHREAD", "thread_ts": "100.0001", "text": "echo: and more"}
    session = Session.objects.get(pk=first["sessionId"])
    assert session.continuation_token and session.principal.name == "slack"


def test_a_direct_message_is_answered_in_its_thread(slack_live, fake_slack):
    say("DIM1", "hi there", ts="200.0001", kind="message", channel_type="im")

    [post] = fake_slack.wait_for_posts("DIM1")
    assert post["body"] == {"channel": "DIM1", "thread_ts": "200.0001", "text": "echo: hi there"}


def test_messages_sent_while_a_turn_runs_make_one_turn(slack_live, fake_slack):
    session_id = say("CCOAL", "<@U0BOT> /sleep 2", ts="300.0001")["sessionId"]
    wait_running(session_id)

    say("CCOAL", "<@U0BOT> one", ts="300.0002", thread_ts="300.0001")
    say("CCOAL", "<@U0BOT> two", ts="300.0003", thread_ts="300.0001")

    wait_for(session_id, "turn.completed", 2)
    turns = list(Turn.objects.filter(session_id=session_id).order_by("created_at"))
    assert [turn.message for turn in turns] == ["/sleep 2", "one\n\ntwo"]
    texts = [post["body"]["text"] for post in fake_slack.wait_for_posts("CCOAL")]
    assert texts[-1].startswith("echo: one") and texts[-1].endswith("two")


def test_stop_interrupts_the_turn_drops_the_queue_and_posts_nothing(slack_live, fake_slack):
    session_id = say("CSTOP", "<@U0BOT> /sleep 20", ts="400.0001")["sessionId"]
    wait_running(session_id)
    say("CSTOP", "<@U0BOT> queued", ts="400.0002", thread_ts="400.0001")

    answer = say("CSTOP", "<@U0BOT>  Stop ", ts="400.0003", thread_ts="400.0001")

    assert answer == {"ok": True, "stopped": True}
    failed = wait_for(session_id, "turn.failed", 2)
    assert [event.data["message"] for event in failed] == ["turn interrupted", "turn interrupted"]
    # A later message is answered; it is the thread's only post.
    say("CSTOP", "<@U0BOT> after", ts="400.0004", thread_ts="400.0001")
    wait_for(session_id, "turn.completed")
    posts = fake_slack.wait_for_posts("CSTOP")
    assert [post["body"]["text"] for post in posts] == ["echo: after"]


def test_a_failed_turn_gets_one_short_error_reply(slack_live, fake_slack):
    say("CERR", "<@U0BOT> /fail the model is down", ts="500.0001")

    [post] = fake_slack.wait_for_posts("CERR")
    assert post["body"]["thread_ts"] == "500.0001"
    assert post["body"]["text"].startswith("Sorry, that failed:")
    assert "the model is down" in post["body"]["text"]


@pytest.mark.parametrize("channel", ["CFAIL1", "C5001"], ids=["ok-false", "http-500"])
def test_a_refused_post_is_retried_three_times_and_the_turn_stays_completed(slack_live, fake_slack, channel):
    session_id = say(channel, "<@U0BOT> hello", ts="600.0001")["sessionId"]

    wait_for(session_id, "turn.completed")
    posts = fake_slack.wait_for_posts(channel, slack_api.RETRIES + 1)
    assert len(posts) == slack_api.RETRIES + 1
    assert Turn.objects.get(session_id=session_id).status == TurnStatus.COMPLETED
    assert not Event.objects.filter(session_id=session_id, type="turn.failed").exists()


def test_a_tool_posts_through_ctx_host_slack(slack_live, fake_slack):
    call = '/call announce {"channel": "CANNOUNCE", "text": "release is out"}'
    say("CTOOL", f"<@U0BOT> {call}", ts="700.0001")

    [announced] = fake_slack.wait_for_posts("CANNOUNCE")
    assert announced["body"] == {"channel": "CANNOUNCE", "text": "release is out"}
    [reply] = fake_slack.wait_for_posts("CTOOL")
    assert reply["body"]["text"].startswith("done: announce ->")
