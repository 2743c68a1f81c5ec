"""A model's mistakes are the model's, not the turn's: bad arguments to a synthesized file
tool or an @tool, an unknown tool, arguments that are not JSON each come back as an
``isError`` result saying what to change, and the turn goes on to completion (the
``scribe`` agent: a ``temp_fs`` root and a ``note`` tool, on the ``test`` model)."""

from __future__ import annotations

import pytest

from sessions_app.tests.live import types

pytestmark = pytest.mark.timeout(90)

# One wrong call per synthesized file tool, and what its error must tell the model.
FILE_TOOL_MISTAKES = {
    "Read": ('{"file": "/notes/todo.md"}', ["'path' is missing", "'file' is not an argument of Read"]),
    "LS": ('{"path": 3}', ["'path' must be a string"]),
    "Glob": ("{}", ["'pattern' is missing"]),
    "Grep": ('{"pattern": "milk", "glob": 5}', ["'glob' must be a string"]),
    "Write": ('{"path": "/a.md"}', ["'content' is missing"]),
    "StrReplace": (
        '{"path": "/notes/todo.md", "old": "milk", "newText": "tea"}',
        ["'oldText' is missing", "'old' is not an argument of StrReplace"],
    ),
    "Delete": ('{"path": ["/a.md"]}', ["'path' must be a string"]),
    "SemanticSearch": ('{"query": "milk", "limit": 0}', ["'limit' must be an integer >= 1"]),
}


def results_of(events: list[dict]) -> list[dict]:
    return [event["data"] for event in events if event["type"] == "action.result"]


def run_calls(live, calls: list[str]) -> list[dict]:
    """One turn asking for all the calls at once; its events once it has ended."""
    client = live(slug="scribe")
    started = client.start("\n".join(f"/call {call}" for call in calls))
    return client.wait_for(started["sessionId"], "turn.completed")


def test_wrong_arguments_to_each_file_tool_are_error_results_and_the_turn_completes(live):
    events = run_calls(live, [f"{name} {arguments}" for name, (arguments, _) in FILE_TOOL_MISTAKES.items()])
    assert "turn.failed" not in types(events)
    results = results_of(events)
    assert [result["toolName"] for result in results] == list(FILE_TOOL_MISTAKES)
    for result, (name, (_, expected)) in zip(results, FILE_TOOL_MISTAKES.items(), strict=True):
        assert result["isError"] is True, result
        message = result["output"]["error"]
        assert message.startswith(f"invalid arguments for {name}: "), message
        for words in expected:
            assert words in message, (name, message)
    # The model saw each error and answered: the turn's reply quotes them.
    [reply] = [event["data"]["text"] for event in events if event["type"] == "message.completed"]
    assert reply.count("done: ") == len(FILE_TOOL_MISTAKES) and "'path' is missing" in reply


def test_right_arguments_still_run_the_file_tool(live):
    events = run_calls(live, ['Read {"path": "/notes/todo.md", "limit": 1}'])
    [result] = results_of(events)
    assert result == {**result, "isError": False, "output": "     1\tbuy milk"}


def test_wrong_arguments_to_an_authored_tool_name_the_argument_and_what_it_takes(live):
    events = run_calls(live, ['note {"txt": "milk"}', 'note {"text": "milk", "times": "twice"}'])
    missing, wrong_type = (result["output"]["error"] for result in results_of(events))
    assert missing.startswith("invalid arguments for note: ")
    assert "'text' is missing (string: What to note.)" in missing
    assert "'txt' is not an argument of note (it takes text, times)" in missing
    assert "'times': Input should be a valid integer" in wrong_type and '"twice"' in wrong_type
    assert "turn.failed" not in types(events)


def test_an_unknown_tool_and_arguments_that_are_not_json_are_error_results(live):
    events = run_calls(live, ["Reed {}", "note {not json", 'note ["milk"]'])
    unknown, not_json, not_object = (result for result in results_of(events))
    assert all(result["isError"] for result in (unknown, not_json, not_object))
    assert unknown["output"]["error"].startswith("unknown tool 'Reed'; available: flag, note, Read, LS")
    assert "not a JSON object: '{not json'" in not_json["output"]["error"]
    assert "not a JSON object" in not_object["output"]["error"]
    assert "turn.failed" not in types(events)


@pytest.mark.parametrize(
    ("slug", "call", "expected"),
    [
        ("support", 'refunds {"msg": "order 1042"}', "'message' is missing (a string: What to ask the subagent.)"),
        ("support", "refunds [1]", "the arguments for refunds are not a JSON object"),
        ("weather", 'load_skill {"skill": "packing-advice"}', "'skill' is not an argument of load_skill"),
    ],
)
def test_wrong_arguments_to_a_subagent_or_the_skill_loader_are_error_results(live, slug, call, expected):
    client = live(slug=slug)
    events = client.wait_for(client.start(f"/call {call}")["sessionId"], "turn.completed")
    [result] = results_of(events)
    assert result["isError"] is True and expected in result["output"]["error"], result
    assert "subagent.called" not in types(events)
