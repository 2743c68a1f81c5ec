"""The GitHub pack (``github_channel``): GitHub's deliveries to
``POST /<slug>/v1/channels/<name>/webhook``, signed as GitHub signs them, and what the
agent then shows on the pull request through a local fake GitHub (check runs, the sticky
banner comment, the eyes reaction). The ``hubbot`` test agent has the pack twice:
``github`` (signed, ``acme/app`` only) and ``tasks`` (unsigned, ``on_event``)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.models import InboundDelivery, Session
from sessions_app.tests.triggers.github.fake_github import FakeGitHub
from sessions_app.triggers import github as github_trigger

# The worker inherits os.environ when it starts (after collection): the fake's URL and the
# secrets must be there before that.
FAKE = FakeGitHub()
SECRET = "It's a Secret to Everybody"
os.environ["HUBBOT_GITHUB_API"] = FAKE.url
os.environ["HUBBOT_WEBHOOK_SECRET"] = SECRET
os.environ["HUBBOT_TOKEN"] = "ghs_test_token"

URL = "/hubbot/v1/channels/github/webhook"
HEAD = "a" * 40


@pytest.fixture(scope="module", autouse=True)
def fake_github():
    FAKE.start()
    yield FAKE
    FAKE.server.shutdown()


@pytest.fixture
def agents(db, live_agents_dir, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}


def signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(
    event: str,
    payload: dict[str, Any] | bytes,
    *,
    url: str = URL,
    delivery: str | None = None,
    sign: bool = True,
    signed_as: str | None = None,
) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {
        "HTTP_X_GITHUB_EVENT": event,
        "HTTP_X_GITHUB_DELIVERY": delivery or str(uuid.uuid4()),
        "HTTP_X_GITHUB_HOOK_ID": "4242",
    }
    if sign:
        headers["HTTP_X_HUB_SIGNATURE_256"] = signed_as or signature(body)
    # As GitHub posts: no cookie, no CSRF token.
    return APIClient(enforce_csrf_checks=True).post(url, data=body, content_type="application/json", **headers)


def pull_request(
    action: str = "opened", *, sha: str = HEAD, repo: str = "acme/app", number: int = 7, body: str = "Retries the call."
) -> dict[str, Any]:
    return {
        "action": action,
        "number": number,
        "pull_request": {"number": number, "title": "Add retries", "body": body, "head": {"sha": sha}},
        "repository": {"full_name": repo},
        "sender": {"login": "octocat", "type": "User"},
    }


def comment(text: str, comment_id: int = 555, number: int = 7) -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": number, "title": "Add retries", "pull_request": {"url": "https://api.github.com/..."}},
        "comment": {"id": comment_id, "body": text, "user": {"login": "octocat"}},
        "repository": {"full_name": "acme/app"},
        "sender": {"login": "octocat", "type": "User"},
    }


# --- forged and replayed deliveries (nothing recorded) ---------------------------------------------


def test_a_delivery_without_a_valid_signature_is_401_and_records_nothing(agents):
    body = json.dumps(pull_request()).encode()
    changed = body.replace(b"Add retries", b"Add retrieS")
    reserialized = json.dumps(pull_request(), indent=2).encode()
    for answer in [
        deliver("pull_request", body, sign=False),
        deliver("pull_request", body, signed_as="sha256=" + "0" * 64),
        deliver("pull_request", body, signed_as=signature(body, "another secret")),
        deliver("pull_request", changed, signed_as=signature(body)),
        deliver("pull_request", reserialized, signed_as=signature(body)),
    ]:
        assert answer.status_code == 401, answer.content
        assert answer.json()["error"] == "invalid_signature"
    assert not InboundDelivery.objects.exists() and not Session.objects.exists()


def test_the_signature_is_compared_in_constant_time(agents, monkeypatch):
    compared, constant_time = [], hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return constant_time(a, b)

    monkeypatch.setattr(github_trigger.hmac, "compare_digest", compare_digest)
    body = json.dumps({"zen": "Keep it logically awesome."}).encode()

    assert deliver("ping", body).status_code == 200
    assert compared == [(signature(body).encode(), signature(body).encode())]


def test_a_ping_is_200_and_a_body_that_is_not_json_is_400(agents):
    assert deliver("ping", {"zen": "Design for failure.", "hook_id": 4242}).status_code == 200

    answer = deliver("pull_request", b"payload=%7B%7D")  # a form-encoded webhook, validly signed

    assert answer.status_code == 400 and answer.json()["error"] == "invalid_body"
    assert not Session.objects.exists()


def test_a_signed_payload_without_a_pull_requests_fields_is_400_and_records_nothing(agents):
    no_pr = {"action": "opened", "number": 7, "repository": {"full_name": "acme/app"}}
    for event, payload in [
        ("pull_request", no_pr),
        ("pull_request", {**pull_request(), "pull_request": {"number": "seven", "head": {}}}),
        ("issue_comment", {**comment("@hubbot hi"), "issue": ["not", "an", "object"]}),
        ("pull_request", pull_request(repo="acme/" + "x" * 400)),
        ("pull_request", b"[1, 2, 3]"),
    ]:
        answer = deliver(event, payload)
        assert answer.status_code == 400, (payload, answer.content)
        assert answer.json()["error"] == "invalid_body"
    assert not Session.objects.exists() and not InboundDelivery.objects.exists()


def test_events_that_wake_nobody_are_200_and_start_nothing(agents):
    labelled = {**pull_request(), "action": "labeled"}
    issue = {"action": "opened", "issue": {"number": 3}, "repository": {"full_name": "acme/app"}}
    for event, payload in [
        ("pull_request", labelled),
        ("issues", issue),
        ("issue_comment", comment("Looks good, no mention")),
        ("issue_comment", comment("@hubbotx is not the bot")),
        ("pull_request", pull_request(repo="someone/else")),  # outside repositories=
    ]:
        answer = deliver(event, payload)
        assert answer.status_code == 200, (event, answer.content)
        assert answer.json() == {"status": "ignored"}
    assert not Session.objects.exists() and not InboundDelivery.objects.exists()


# --- a pull request's conversation, on the worker ---------------------------------------------------


def test_a_pull_requests_wakes_continue_one_session_with_check_runs_a_banner_and_eyes(live, fake_github):
    live()
    fake_github.reset()

    opened = deliver("pull_request", pull_request("opened"), delivery="d-1")
    assert opened.status_code == 202, opened.content
    session_id = opened.json()["sessionId"]
    fake_github.wait_for("PATCH", r"/check-runs/\d+$")
    # A replay of the same delivery (GitHub's "Redeliver") has no second effect.
    replay = deliver("pull_request", pull_request("opened"), delivery="d-1")
    assert replay.status_code == 200 and replay.json() == {"status": "duplicate"}

    mentioned = deliver("issue_comment", comment("@hubbot can you check the retry budget?"))
    assert mentioned.status_code == 202 and mentioned.json()["sessionId"] == session_id
    fake_github.wait_for("PATCH", r"/check-runs/\d+$", 2)

    pushed = deliver("pull_request", pull_request("synchronize", sha="b" * 40))
    assert pushed.status_code == 202 and pushed.json()["sessionId"] == session_id
    fake_github.wait_for("PATCH", r"/check-runs/\d+$", 3)
    fake_github.wait_for("PATCH", r"/issues/comments/\d+$", 5)  # the banner after the third turn

    # One chat session for the PR, owned by the github service principal, keyed by the PR.
    session = Session.objects.select_related("principal").get(pk=session_id)
    assert (session.principal.name, session.mode, session.continuation_key) == ("github", "chat", "pr:acme/app#7")
    assert Session.objects.count() == 1

    # A check run per turn, named after the bot, in_progress then completed success; the
    # comment's turn is on the same head SHA, the push's on the new one.
    created = fake_github.recorded("POST", r"^/repos/acme/app/check-runs$")
    assert [(c.body["name"], c.body["head_sha"], c.body["status"]) for c in created] == [
        ("hubbot", HEAD, "in_progress"),
        ("hubbot", HEAD, "in_progress"),
        ("hubbot", "b" * 40, "in_progress"),
    ]
    completed = fake_github.recorded("PATCH", r"/check-runs/\d+$")
    assert [(c.body["status"], c.body["conclusion"]) for c in completed] == [("completed", "success")] * 3
    assert len({c.path for c in completed}) == 3  # three check runs, each completed once

    # The banner: created once on the first wake, edited in place after.
    banners = fake_github.recorded("POST", r"/issues/7/comments$")
    assert len(banners) == 1 and "hubbot" in banners[0].body["body"]
    edits = fake_github.recorded("PATCH", r"/issues/comments/\d+$")
    assert {c.path for c in edits} == {f"/repos/acme/app/issues/comments/{banners[0].answer['id']}"}

    # Eyes on the comment that woke the agent, once; every call carried the token.
    assert [c.body for c in fake_github.recorded("POST", r"/issues/comments/555/reactions$")] == [{"content": "eyes"}]
    assert {c.authorization for c in fake_github.calls} == {"Bearer ghs_test_token"}


def test_wakes_during_a_turn_coalesce_into_one_turn_and_a_failed_turn_fails_its_check_run(live, fake_github):
    live()
    fake_github.reset()
    # The test model sleeps on a "/sleep" line and fails on a "/fail" line.
    opened = deliver("pull_request", pull_request(number=8, sha="c" * 40, body="/sleep 1.5"))
    assert opened.status_code == 202, opened.content
    session_id = opened.json()["sessionId"]

    first = deliver("issue_comment", comment("@hubbot first", comment_id=801, number=8))
    second = deliver("issue_comment", comment("@hubbot second\n/fail the retry budget is gone", 802, number=8))

    assert first.json()["sessionId"] == second.json()["sessionId"] == session_id
    completed = fake_github.wait_for("PATCH", r"/check-runs/\d+$", 2)
    assert [c.body["conclusion"] for c in completed] == ["success", "failure"]
    turns = list(Session.objects.get(pk=session_id).turns.order_by("created_at").values_list("message", flat=True))
    assert len(turns) == 2 and "@hubbot first" in turns[1] and "\n\n" in turns[1] and "@hubbot second" in turns[1]
    for comment_id in (801, 802):
        assert len(fake_github.recorded("POST", rf"/issues/comments/{comment_id}/reactions$")) == 1
    banner = fake_github.wait_for("PATCH", r"/issues/comments/\d+$", 3)[-1]
    assert "could not finish" in banner.body["body"] and "retry budget" in banner.body["body"]


def test_a_wake_without_a_head_sha_gets_no_check_run_until_one_carries_it(live, fake_github):
    live()
    fake_github.reset()
    first = deliver("issue_comment", comment("@hubbot what does this PR do?", comment_id=901, number=9))
    assert first.status_code == 202, first.content
    fake_github.wait_for("PATCH", r"/issues/comments/\d+$")  # the banner, at the turn's end
    assert fake_github.recorded("POST", r"/check-runs$") == []

    review = {
        "action": "created",
        "pull_request": {"number": 9, "title": "Add retries", "head": {"sha": "d" * 40}},
        "comment": {"id": 902, "body": "Why 3 retries?", "path": "retry.py", "user": {"login": "octocat"}},
        "repository": {"full_name": "acme/app"},
        "sender": {"login": "octocat", "type": "User"},
    }
    assert deliver("pull_request_review_comment", review).json()["sessionId"] == first.json()["sessionId"]

    [run] = fake_github.wait_for("PATCH", r"/check-runs/\d+$")
    assert [c.body["head_sha"] for c in fake_github.recorded("POST", r"/check-runs$")] == ["d" * 40]
    assert run.body["conclusion"] == "success"
    assert len(fake_github.recorded("POST", r"^/repos/acme/app/pulls/comments/902/reactions$")) == 1


def test_on_event_may_start_a_task_session_for_a_delivery(live, fake_github):
    live()
    run = {"name": "CI", "conclusion": "failure", "head_sha": HEAD, "pull_requests": [{"number": 7}]}
    payload = {"action": "completed", "workflow_run": run, "repository": {"full_name": "acme/app"}}

    answer = deliver("workflow_run", payload, url="/hubbot/v1/channels/tasks/webhook", sign=False)
    ignored = deliver("pull_request", pull_request(), url="/hubbot/v1/channels/tasks/webhook", sign=False)

    assert answer.status_code == 202, answer.content
    assert ignored.status_code == 200 and ignored.json() == {"status": "ignored"}
    session = Session.objects.get(pk=answer.json()["sessionId"])
    assert (session.mode, session.channel) == ("task", "tasks")
    assert session.turns.get().message == "Explain why CI failure."


def test_an_on_event_that_raises_is_502_and_the_delivery_may_be_redelivered(agents):
    suite = {"head_sha": HEAD, "conclusion": "success", "pull_requests": [{"number": 7}], "app": {"slug": "ci"}}
    payload = {"action": "completed", "check_suite": suite, "repository": {"full_name": "acme/app"}}

    for _ in range(2):  # the same delivery, redelivered: on_event runs again
        answer = deliver("check_suite", payload, url="/hubbot/v1/channels/tasks/webhook", sign=False, delivery="d-9")
        assert answer.status_code == 502, answer.content
        assert answer.json()["error"] == "channel_handler_failed"
        assert "the check suite confused on_event" in answer.json()["message"]
    assert not InboundDelivery.objects.exists() and not Session.objects.exists()


def test_a_deployed_agents_pack_keeps_its_check_run_as_a_folder_agents_does(live, alice, fake_github, tmp_path):
    """The tree runs in the sandbox; the pack's default handler is the sdk's and runs on
    the platform with its client, so the check run is created and completed."""
    from agents.sandbox import bwrap_path
    from agents.secrets import set_secret
    from agents.tests.deploying import deployed_agent
    from agents.tests.trees import write_tree

    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap (apt-get install bubblewrap)")
    channel = (
        "from agents.sdk import github_channel\n\n"
        f'channel = github_channel(secret="WEBHOOK_SECRET", token="GITHUB_TOKEN", api_url={FAKE.url!r}, '
        'bot_name="deployedbot")\n'
    )
    folder = tmp_path / "deployed-hub"
    write_tree(folder, {"agent/instructions.md": "A deployed PR helper.", "agent/channels/github.py": channel})
    agent = deployed_agent(alice.tenant, "deployed-hub", folder)
    set_secret(agent, "WEBHOOK_SECRET", SECRET)
    set_secret(agent, "GITHUB_TOKEN", "ghs_deployed_token")
    live(alice, "deployed-hub")
    fake_github.reset()

    opened = deliver(
        "pull_request", pull_request("opened", repo="acme/deployed"), url="/deployed-hub/v1/channels/github/webhook"
    )
    assert opened.status_code == 202, opened.content
    fake_github.wait_for("PATCH", r"/check-runs/\d+$")
    [created] = fake_github.recorded("POST", r"^/repos/acme/deployed/check-runs$")
    assert (created.body["name"], created.body["status"]) == ("deployedbot", "in_progress")
    [completed] = fake_github.recorded("PATCH", r"/check-runs/\d+$")
    assert (completed.body["status"], completed.body["conclusion"]) == ("completed", "success")
    assert {c.authorization for c in fake_github.calls} == {"Bearer ghs_deployed_token"}
