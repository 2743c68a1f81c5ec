"""Slack deliveries are taken only with Slack's signature over the exact bytes, within
300 s; a refused one records nothing. Through HTTP as Slack sends them."""

from __future__ import annotations

import hmac
import json
import logging
import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import InboundDelivery, Session
from sessions_app.tests.triggers.slack.slack_fake import event_callback, sign

pytestmark = pytest.mark.django_db

URL = "/slacker/v1/channels/slack/events"


def deliver(body: bytes, headers: dict[str, str]):
    return APIClient().generic("POST", URL, body, content_type="application/json", **headers)


def mention(event_id: str = "Ev1", text: str = "<@U0BOT> hello") -> bytes:
    return json.dumps(event_callback(event_id, channel="CSIG", text=text, ts="1712.0001")).encode()


def assert_nothing_recorded() -> None:
    assert not Session.objects.exists()
    assert not InboundDelivery.objects.exists()


def test_a_signed_mention_is_taken(slacker):
    body = mention()

    answer = deliver(body, sign(body))

    assert answer.status_code == 200, answer.content
    session = Session.objects.get(pk=answer.json()["sessionId"])
    assert session.continuation_key == "T1/CSIG/1712.0001"
    assert session.principal.name == "slack"


def test_a_delivery_needs_no_csrf_cookie(slacker):
    body = mention()
    client = Client(enforce_csrf_checks=True)  # as daphne serves it: the CSRF middleware runs

    answer = client.generic("POST", URL, body, content_type="application/json", **sign(body))

    assert answer.status_code == 200, answer.content


def test_a_wrong_signature_is_401_and_records_nothing(slacker):
    body = mention()

    answer = deliver(body, sign(body, secret="not-the-secret"))

    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_signature"
    assert_nothing_recorded()


def test_no_signature_headers_is_401(slacker):
    answer = deliver(mention(), {})

    assert answer.status_code == 401
    assert_nothing_recorded()


def test_one_byte_of_the_body_changed_is_401(slacker):
    body = mention()
    headers = sign(body)
    changed = body.replace(b"hello", b"hellp")

    answer = deliver(changed, headers)

    assert answer.status_code == 401
    assert_nothing_recorded()


@pytest.mark.parametrize("skew", [305, -305])  # past 300 s whatever the second's fraction and the delay
def test_a_timestamp_more_than_300_s_away_is_401(slacker, skew):
    body = mention()

    answer = deliver(body, sign(body, timestamp=int(time.time()) + skew))

    assert answer.status_code == 401
    assert_nothing_recorded()


def test_a_timestamp_that_is_not_a_number_is_401(slacker):
    body = mention()
    headers = {**sign(body), "HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon"}

    assert deliver(body, headers).status_code == 401


def test_reserialised_json_with_the_original_signature_is_401(slacker):
    body = mention()
    reserialised = json.dumps(json.loads(body), indent=1).encode()

    answer = deliver(reserialised, sign(body))

    assert answer.status_code == 401
    assert_nothing_recorded()


def test_a_replayed_delivery_is_200_and_takes_effect_once(slacker):
    body = mention("EvReplay")
    headers = sign(body)

    first, again = deliver(body, headers), deliver(body, {**headers, "HTTP_X_SLACK_RETRY_NUM": "1"})

    assert first.status_code == again.status_code == 200
    assert again.json() == {"ok": True, "duplicate": True}
    assert Session.objects.count() == 1
    assert Session.objects.get().turns.count() == 1


def test_the_signature_is_compared_in_constant_time(slacker, monkeypatch):
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    body = mention()
    headers = sign(body)

    assert deliver(body, headers).status_code == 200
    assert compared == [(headers["HTTP_X_SLACK_SIGNATURE"], headers["HTTP_X_SLACK_SIGNATURE"])]


def test_a_signed_body_that_is_not_json_is_400(slacker):
    body = b'{"type": "event_callback",'

    answer = deliver(body, sign(body))

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_body"
    assert_nothing_recorded()


def test_the_signature_is_checked_before_the_body_is_parsed(slacker):
    body = b'{"type": "event_callback",'

    answer = deliver(body, sign(b"something else"))

    assert answer.status_code == 401  # not 400: an unsigned body is never parsed


def test_stop_in_a_thread_with_nothing_running_starts_nothing(slacker):
    body = mention("EvStop", text="<@U0BOT> STOP")

    answer = deliver(body, sign(body))

    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "stopped": False}
    assert not Session.objects.exists()


def test_a_signed_event_without_a_channel_is_400(slacker):
    data = event_callback("EvBad", channel="CSIG", text="hi", ts="1.0")
    del data["event"]["channel"]
    body = json.dumps(data).encode()

    answer = deliver(body, sign(body))

    assert answer.status_code == 400
    assert_nothing_recorded()


def test_url_verification_answers_the_challenge(slacker):
    body = json.dumps(
        {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        }
    ).encode()

    answer = deliver(body, sign(body))

    assert answer.status_code == 200
    assert answer.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


def test_without_the_signing_secret_every_delivery_is_401_and_logged(slacker, monkeypatch, caplog):
    monkeypatch.delenv("SLACKER_SIGNING_SECRET")
    body = mention()

    with caplog.at_level(logging.ERROR):
        answer = deliver(body, sign(body))

    assert answer.status_code == 401
    assert "SLACKER_SIGNING_SECRET is not set" in caplog.text
    assert_nothing_recorded()


@pytest.mark.parametrize(
    "extra",
    [{"bot_id": "B1"}, {"subtype": "message_changed"}, {"kind": "message", "channel_type": "channel"}],
    ids=["bot", "subtype", "channel-message"],
)
def test_bot_messages_edits_and_channel_chatter_are_ignored(slacker, extra):
    data = event_callback("EvIgnored", channel="CSIG", text="hello", ts="1.0", **extra)
    body = json.dumps(data).encode()

    answer = deliver(body, sign(body))

    assert answer.status_code == 200
    assert answer.json()["ignored"] is True
    assert_nothing_recorded()


def test_ctx_host_slack_is_none_for_an_agent_without_a_slack_pack(slacker):
    from agents.registry import get_agent
    from sessions_app.host import host_for_agent

    slack_agent, lab = get_agent("slacker"), get_agent("lab")
    assert slack_agent is not None and lab is not None

    assert host_for_agent(1, lab).slack is None
    client = host_for_agent(1, slack_agent).slack
    assert client is not None and client.bot_token == "SLACKER_BOT_TOKEN"
