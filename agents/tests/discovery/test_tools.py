"""tools/<name>.py: one @tool per file; schema from the signature, description from the docstring."""

from __future__ import annotations

from agents.tests.trees import codes

GET_WEATHER = '''
    from typing import Annotated, Literal

    from pydantic import Field

    from agents.sdk import ToolContext, tool


    @tool(effect="read")
    async def get_weather(
        ctx: ToolContext,
        city: str,
        units: Literal["c", "f"] = "c",
        days: Annotated[int, Field(ge=1, le=7)] = 1,
    ) -> dict:
        """Current conditions for a city.

        Args:
            city: The city to look up.
            units: Celsius or Fahrenheit.

        Returns:
            The conditions.
        """
        return {"city": city}
'''


def test_a_tool_is_discovered_by_its_file_name(build):
    surface = build({"agent/tools/get_weather.py": GET_WEATHER})
    assert codes(surface) == []
    assert list(surface.tools) == ["get_weather"]


def test_the_file_name_is_the_tool_name_even_when_the_function_is_named_differently(build):
    surface = build({"agent/tools/forecast.py": GET_WEATHER})
    assert list(surface.tools) == ["forecast"]
    assert surface.tools["forecast"].value.name == "forecast"
    assert surface.info("test")["tools"][0]["name"] == "forecast"


def test_the_tool_name_option_does_not_override_the_file_name(build):
    surface = build(
        {
            "agent/tools/lookup.py": '''
                from agents.sdk import tool


                @tool(name="something_else")
                def lookup(key: str) -> str:
                    """Look a key up."""
                    return key
            '''
        }
    )
    assert list(surface.tools) == ["lookup"]


def test_the_input_schema_lists_required_parameters_without_defaults(build):
    schema = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"]["type"] == "string"
    assert schema["additionalProperties"] is False


def test_a_literal_parameter_becomes_an_enum_with_its_default(build):
    schema = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value.input_schema
    assert schema["properties"]["units"]["enum"] == ["c", "f"]
    assert schema["properties"]["units"]["default"] == "c"


def test_annotated_field_constraints_reach_the_schema(build):
    schema = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value.input_schema
    days = schema["properties"]["days"]
    assert (days["type"], days["minimum"], days["maximum"], days["default"]) == ("integer", 1, 7, 1)


def test_the_context_parameter_is_not_part_of_the_schema(build):
    tool = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value
    assert "ctx" not in tool.input_schema["properties"]
    assert tool.context_param == "ctx"


def test_an_unannotated_first_parameter_named_ctx_receives_the_context(build):
    tool = (
        build(
            {
                "agent/tools/ping.py": '''
                from agents.sdk import tool


                @tool
                def ping(ctx, text: str) -> str:
                    """Echo the text."""
                    return text
            '''
            }
        )
        .tools["ping"]
        .value
    )
    assert list(tool.input_schema["properties"]) == ["text"]
    assert tool.context_param == "ctx"


def test_a_parameter_annotated_tool_context_is_the_context_whatever_its_name(build):
    tool = (
        build(
            {
                "agent/tools/ping.py": '''
                from agents.sdk import ToolContext, tool


                @tool
                def ping(text: str, context: ToolContext) -> str:
                    """Echo the text."""
                    return text
            '''
            }
        )
        .tools["ping"]
        .value
    )
    assert list(tool.input_schema["properties"]) == ["text"]
    assert tool.context_param == "context"


def test_the_description_is_the_docstring_before_its_sections(build):
    tool = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value
    assert tool.description == "Current conditions for a city."


def test_args_section_lines_become_parameter_descriptions(build):
    properties = (
        build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value.input_schema["properties"]
    )
    assert properties["city"]["description"] == "The city to look up."
    assert properties["units"]["description"] == "Celsius or Fahrenheit."
    assert "description" not in properties["days"]


def test_the_return_annotation_gives_the_output_schema(build):
    tool = build({"agent/tools/get_weather.py": GET_WEATHER}).tools["get_weather"].value
    assert tool.output_schema == {"type": "object", "additionalProperties": True}


def test_a_tool_without_a_return_annotation_has_no_output_schema(build):
    tool = (
        build(
            {
                "agent/tools/ping.py": '''
                from agents.sdk import tool


                @tool
                def ping(text: str):
                    """Echo the text."""
                    return text
            '''
            }
        )
        .tools["ping"]
        .value
    )
    assert tool.output_schema is None


def test_the_bare_decorator_gives_the_default_options(build):
    info = build(
        {
            "agent/tools/ping.py": '''
                from agents.sdk import tool


                @tool
                def ping(text: str) -> str:
                    """Echo the text."""
                    return text
            '''
        }
    ).info("test")["tools"][0]
    assert (info["effect"], info["execution"], info["needsApproval"], info["timeout"]) == (
        "read",
        "server",
        False,
        None,
    )


def test_effect_execution_approval_and_timeout_show_in_info(build):
    info = build(
        {
            "agent/tools/file_ticket.py": '''
                from agents.sdk import tool


                @tool(effect="write", execution="agent", needs_approval=True, timeout=30, title="File a ticket")
                def file_ticket(title: str) -> str:
                    """Open a ticket."""
                    return title
            '''
        }
    ).info("test")["tools"][0]
    assert info["effect"] == "write"
    assert info["execution"] == "agent"
    assert info["needsApproval"] is True
    assert info["timeout"] == 30
    assert info["title"] == "File a ticket"


def test_an_approval_predicate_shows_as_conditional_and_is_evaluated_on_the_args(build):
    surface = build(
        {
            "agent/tools/refund.py": '''
                from agents.sdk import tool


                @tool(effect="write", needs_approval=lambda args: args["amount"] > 100)
                def refund(amount: int) -> str:
                    """Refund an amount."""
                    return "ok"
            '''
        }
    )
    assert surface.info("test")["tools"][0]["needsApproval"] == "conditional"
    tool = surface.tools["refund"].value
    assert tool.requires_approval({"amount": 500}) is True
    assert tool.requires_approval({"amount": 5}) is False


def test_a_discovered_tool_can_still_be_called_directly(build):
    tool = (
        build(
            {
                "agent/tools/add.py": '''
                from agents.sdk import tool


                @tool
                def add(a: int, b: int) -> int:
                    """Add two numbers."""
                    return a + b
            '''
            }
        )
        .tools["add"]
        .value
    )
    assert tool(a=2, b=3) == 5


def test_tools_are_listed_in_file_name_order(build):
    template = '''
        from agents.sdk import tool


        @tool
        def f() -> str:
            """A tool."""
            return ""
    '''
    surface = build({"agent/tools/zeta.py": template, "agent/tools/alpha.py": template, "agent/tools/mid.py": template})
    assert list(surface.tools) == ["alpha", "mid", "zeta"]


def test_future_annotations_and_a_pydantic_return_model_are_resolved(build):
    tool = (
        build(
            {
                "agent/tools/forecast.py": '''
                from __future__ import annotations

                from typing import Literal

                from pydantic import BaseModel

                from agents.sdk import ToolContext, tool


                class Forecast(BaseModel):
                    high: float


                @tool
                async def forecast(ctx: ToolContext, city: str, units: Literal["c", "f"] = "c") -> Forecast:
                    """Tomorrow's forecast."""
                    return Forecast(high=20.0)
            '''
            }
        )
        .tools["forecast"]
        .value
    )
    assert list(tool.input_schema["properties"]) == ["city", "units"]
    assert tool.output_schema["title"] == "Forecast"
    assert tool.output_schema["required"] == ["high"]
    assert tool.is_async


def test_an_explicit_output_schema_wins_over_the_return_annotation(build):
    tool = (
        build(
            {
                "agent/tools/count.py": '''
                from agents.sdk import tool


                @tool(output={"type": "string", "description": "A count, spelled out."})
                def count() -> int:
                    """Count things."""
                    return 3
            '''
            }
        )
        .tools["count"]
        .value
    )
    assert tool.output_schema == {"type": "string", "description": "A count, spelled out."}


def test_typed_and_continued_args_lines_are_read(build):
    properties = (
        build(
            {
                "agent/tools/send.py": '''
                from agents.sdk import tool


                @tool
                def send(to: str, body: str = "") -> str:
                    """Send a message.

                    Args:
                        to (str): Who receives it,
                            as an email address.
                        body: What it says.

                    Returns:
                        value: the message id.
                    """
                    return ""
            '''
            }
        )
        .tools["send"]
        .value.input_schema["properties"]
    )
    assert properties["to"]["description"] == "Who receives it, as an email address."
    assert properties["body"]["description"] == "What it says."


def test_an_unknown_effect_is_refused_at_import(build):
    surface = build(
        {
            "agent/tools/wipe.py": '''
                from agents.sdk import tool


                @tool(effect="delete")
                def wipe() -> str:
                    """Wipe everything."""
                    return ""
            '''
        }
    )
    assert codes(surface) == ["agents.E013"]
    assert "effect must be 'read' or 'write', not 'delete'" in surface.all_diagnostics()[0].message


def test_a_parameter_named_schema_is_described_without_a_warning(build):
    surface = build(
        {
            "agent/tools/query.py": '''
                from agents.sdk import tool


                @tool
                def query(schema: str, sql: str) -> str:
                    """Run a query in a database schema."""
                    return ""
            '''
        }
    )
    assert codes(surface) == []
    assert list(surface.tools["query"].value.input_schema["properties"]) == ["schema", "sql"]


def test_a_parameter_named_model_config_is_never_silently_dropped(build):
    surface = build(
        {
            "agent/tools/tune.py": '''
                from agents.sdk import tool


                @tool
                def tune(model_config: str) -> str:
                    """Tune a model configuration."""
                    return model_config
            '''
        }
    )
    if codes(surface) != ["agents.E013"]:
        assert "model_config" in surface.tools["tune"].value.input_schema["properties"]
