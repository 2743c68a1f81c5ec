"""hooks/<path>.py (nested names, empty and unknown events) and schedules/ (Markdown or define_schedule, cron)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.tests.trees import codes, only

HOOK = """
    from agents.sdk import define_hook


    def record(event, ctx):
        return None


    hook = define_hook(events={events})
"""


def test_a_hook_is_named_by_its_file(build):
    surface = build({"agent/hooks/audit.py": HOOK.format(events='{"turn.completed": record}')})
    assert codes(surface) == []
    assert surface.info("test")["hooks"] == [{"name": "audit", "events": ["turn.completed"], "extension": None}]


def test_a_nested_hook_is_named_by_its_path_without_py(build):
    surface = build({"agent/hooks/audit/usage.py": HOOK.format(events='{"*": record}')})
    assert codes(surface) == []
    assert list(surface.hooks) == ["audit/usage"]


def test_a_hook_with_no_events_is_skipped_with_a_warning(build):
    surface = build({"agent/hooks/idle.py": HOOK.format(events="{}")})
    assert codes(surface) == ["agents.W011"]
    assert only(surface, "agents.W011").path == "agent/hooks/idle.py"
    assert surface.hooks == {}


def test_a_hook_on_an_unknown_event_type_is_a_warning(build):
    surface = build({"agent/hooks/odd.py": HOOK.format(events='{"turn.exploded": record}')})
    assert codes(surface) == ["agents.W018"]
    assert "'turn.exploded'" in only(surface, "agents.W018").message


def test_a_hook_handler_that_is_not_a_function_is_refused_at_import(build):
    surface = build({"agent/hooks/odd.py": HOOK.format(events='{"turn.completed": "record"}')})
    assert codes(surface) == ["agents.E013"]


def test_a_stray_file_among_hooks_is_reported(build):
    surface = build({"agent/hooks/audit/README.md": "notes"})
    assert codes(surface) == ["agents.W012"]


def test_test_files_and_caches_among_hooks_are_skipped(build):
    surface = build(
        {
            "agent/hooks/audit/test_usage.py": "raise RuntimeError\n",
            "agent/hooks/__pycache__/audit.cpython-311.pyc": "",
        }
    )
    assert codes(surface) == []


# --- schedules --------------------------------------------------------------------------------


def test_a_markdown_schedule_takes_cron_from_front_matter_and_the_prompt_from_the_body(build):
    surface = build(
        {
            "agent/schedules/weekly.md": """
                ---
                cron: "0 9 * * 1"
                description: Monday summary
                ---
                Summarise last week's tickets.
            """
        }
    )
    assert codes(surface) == []
    schedule = surface.schedules["weekly"].value
    assert (schedule.cron, schedule.prompt, schedule.description) == (
        "0 9 * * 1",
        "Summarise last week's tickets.",
        "Monday summary",
    )
    [listed] = surface.info("test")["schedules"]
    next_fire = listed.pop("nextFireAt")
    assert listed == {
        "id": "weekly",
        "cron": "0 9 * * 1",
        "description": "Monday summary",
        "kind": "prompt",
        "name": "weekly",
        "runs": "prompt",
        "extension": None,
    }
    # The next Monday 09:00 UTC, within a week.
    upcoming = datetime.fromisoformat(next_fire.replace("Z", "+00:00"))
    assert (upcoming.weekday(), upcoming.hour, upcoming.minute) == (0, 9, 0)
    assert timedelta(0) < upcoming - datetime.now(UTC) <= timedelta(days=7)


def test_a_markdown_schedule_may_name_the_title_of_its_sessions(build):
    surface = build({"agent/schedules/digest.md": "---\ncron: '0 8 * * *'\ntitle: Morning digest\n---\nDigest.\n"})
    assert surface.schedules["digest"].value.title == "Morning digest"


def test_a_python_schedule_is_made_with_define_schedule(build):
    surface = build(
        {
            "agent/schedules/cleanup.py": """
                from agents.sdk import define_schedule


                def run(ctx):
                    return None


                schedule = define_schedule(cron="*/15 * * * *", handler=run)
            """
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["schedules"][0]["runs"] == "handler"


@pytest.mark.parametrize(
    "cron",
    [
        "0 0 9 * * 1",  # six fields (seconds)
        "every monday",
        "61 * * * *",
        "@daily",
    ],
)
def test_an_invalid_cron_in_markdown_is_an_error(build, cron):
    surface = build({"agent/schedules/weekly.md": f"---\ncron: '{cron}'\n---\nSummarise.\n"})
    assert codes(surface) == ["agents.E010"]
    assert repr(cron) in only(surface, "agents.E010").message
    assert surface.schedules == {}


def test_an_invalid_cron_in_define_schedule_is_an_error(build):
    surface = build(
        {
            "agent/schedules/weekly.py": """
                from agents.sdk import define_schedule

                schedule = define_schedule(cron="0 0 9 * * 1", prompt="Summarise.")
            """
        }
    )
    assert codes(surface) == ["agents.E010"]


def test_a_markdown_schedule_without_cron_is_an_error(build):
    surface = build({"agent/schedules/weekly.md": "Summarise.\n"})
    assert codes(surface) == ["agents.E010"]


def test_a_markdown_schedule_without_a_prompt_is_an_error(build):
    surface = build({"agent/schedules/weekly.md": "---\ncron: '0 9 * * 1'\n---\n"})
    assert codes(surface) == ["agents.E013"]


def test_a_markdown_and_a_python_schedule_of_the_same_name_are_a_duplicate(build):
    surface = build(
        {
            "agent/schedules/weekly.md": "---\ncron: '0 9 * * 1'\n---\nSummarise.\n",
            "agent/schedules/weekly.py": """
                from agents.sdk import define_schedule

                schedule = define_schedule(cron="0 10 * * 1", prompt="Summarise again.")
            """,
        }
    )
    assert codes(surface) == ["agents.E019"]


# --- E032 handlers called event first ---------------------------------------------------------

HANDLERS = """
    from agents.sdk import HookContext, {definer}


    {handler}


    {variable} = {definer}(events={{"turn.completed": on_done}})
"""


def hook_with(handler: str) -> dict[str, str]:
    return {"agent/hooks/audit.py": HANDLERS.format(definer="define_hook", variable="hook", handler=handler)}


def channel_with(handler: str) -> dict[str, str]:
    return {"agent/channels/web.py": HANDLERS.format(definer="define_channel", variable="channel", handler=handler)}


@pytest.mark.parametrize(
    "handler",
    [
        "def on_done(event, ctx):\n        return None",
        "async def on_done(event: dict, ctx: HookContext) -> None:\n        return None",
        "def on_done(*args):\n        return None",
        "on_done = print",
    ],
)
def test_a_hook_handler_taking_the_event_first_is_fine(build, handler):
    assert codes(build(hook_with(handler))) == []


@pytest.mark.parametrize(
    ("handler", "problem"),
    [
        ("def on_done(ctx, event):\n        return None", "takes (ctx, event), the context first"),
        ("def on_done(context, event):\n        return None", "takes (context, event), the context first"),
        ("def on_done(c: HookContext, e: dict):\n        return None", "takes (c, e), the context first"),
        ("def on_done(event):\n        return None", "takes (event); it is called (event, ctx)"),
    ],
)
def test_a_hook_handler_in_the_old_order_is_an_error_that_says_how_to_fix_it(build, handler, problem):
    diagnostic = only(build(hook_with(handler)), "agents.E032")
    assert diagnostic.path == "agent/hooks/audit.py"
    assert problem in diagnostic.message
    assert "hook 'audit': the handler for 'turn.completed'" in diagnostic.message
    assert "def on_event(event, ctx)" in diagnostic.code.hint


def test_a_channel_events_handler_takes_the_event_the_channel_and_the_context(build):
    assert codes(build(channel_with("def on_done(event, channel, ctx):\n        return None"))) == []
    old = only(build(channel_with("def on_done(ctx, event):\n        return None"), slug="old"), "agents.E032")
    assert "channel 'web'" in old.message and "it is called (event, channel, ctx)" in old.message
    hook_like = only(build(channel_with("def on_done(event, ctx):\n        return None"), slug="two"), "agents.E032")
    assert "takes (event, ctx); it is called (event, channel, ctx)" in hook_like.message
    assert "def on_event(event, channel, ctx)" in hook_like.code.hint


def test_agent_validate_prints_the_old_order_and_the_fix(tmp_path, capsys):
    from django.core.management import CommandError, call_command

    from agents.tests.trees import INSTRUCTIONS, write_tree

    folder = write_tree(
        tmp_path / "old", {**INSTRUCTIONS, **hook_with("def on_done(ctx, event):\n        return None")}
    )
    with pytest.raises(CommandError):
        call_command("agent", "validate", "--dir", str(folder))
    printed = capsys.readouterr().out
    assert (
        "ERROR agents.E032 agent/hooks/audit.py: hook 'audit': the handler for 'turn.completed' takes (ctx, event)"
        in printed
    )
    assert "hint: Take the event first: a hook handler is def on_event(event, ctx)" in printed


def test_agent_validate_names_the_file_and_the_expression_of_a_bad_cron(tmp_path, capsys):
    from django.core.management import CommandError, call_command

    from agents.tests.trees import INSTRUCTIONS, write_tree

    folder = write_tree(
        tmp_path / "demo", {**INSTRUCTIONS, "agent/schedules/weekly.md": "---\ncron: 'every monday'\n---\nSummarise.\n"}
    )
    with pytest.raises(CommandError):
        call_command("agent", "validate", "--dir", str(folder))
    printed = capsys.readouterr().out
    assert "demo: error (1 error(s), 0 warning(s))" in printed
    assert (
        "ERROR agents.E010 agent/schedules/weekly.md: cron 'every monday' is not a valid 5-field expression" in printed
    )
