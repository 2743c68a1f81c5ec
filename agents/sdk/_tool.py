"""``@tool``: a plain function becomes a tool the model can call.

The input schema comes from the signature (pydantic), the description from the
docstring. A signature that cannot be described fails when the module is
imported, with the file, the line and the reason.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.errors import PydanticUserError

from agents.sdk._context import ToolContext
from agents.sdk._errors import DefinitionError

Effect = Literal["read", "write"]
Execution = Literal["server", "agent"]
ApprovalRule = bool | Callable[[dict[str, Any]], bool]

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Example|Examples|Note|Notes):\s*$")


@dataclass(frozen=True)
class Tool:
    """A tool: what the model sees (name, description, schemas) and the function that runs.

    Calling the tool calls the function, so tests can use it directly.
    """

    name: str
    description: str
    fn: Callable[..., Any]
    input_model: type[BaseModel]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    execution: Execution = "server"
    needs_approval: ApprovalRule = False
    effect: Effect = "read"
    timeout: float | None = None
    context_param: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def renamed(self, name: str) -> Tool:
        return dataclasses.replace(self, name=name)

    def requires_approval(self, args: dict[str, Any]) -> bool:
        """Whether a call with these arguments must wait for a person."""
        rule = self.needs_approval
        return bool(rule(args)) if callable(rule) else bool(rule)


def _where(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else repr(fn)


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (text before ``Args:``) and per-parameter descriptions."""
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        if _ARGS_HEADER.match(line):
            section = "args"
            continue
        if _SECTION.match(line):
            section = "other"
            continue
        if section == "description":
            description.append(line)
        elif section == "args":
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


def _is_context(name: str, annotation: Any) -> bool:
    return annotation is ToolContext or (name == "ctx" and annotation in (inspect.Parameter.empty, Any))


def _field_name(param: str) -> tuple[str, str | None]:
    """The model field for a parameter. Names pydantic reserves (``schema``,
    ``model_config``, ``_private``, ...) get a safe field name and keep the
    parameter's name as the alias the model and the schema see."""
    if param.startswith("_") or param.startswith("model_") or hasattr(BaseModel, param):
        return f"field_{param.lstrip('_')}_{len(param)}", param
    return param, None


def tool_arguments(validated: BaseModel) -> dict[str, Any]:
    """Validated input as keyword arguments for the tool's function (aliases undone)."""
    return {field.alias or name: getattr(validated, name) for name, field in type(validated).model_fields.items()}


def _build_input_model(
    fn: Callable[..., Any], name: str, docs: dict[str, str]
) -> tuple[type[BaseModel], dict[str, Any], str | None]:
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:
        raise DefinitionError(f"{_where(fn)}: @tool {name}: cannot resolve type hints: {error}") from error
    fields: dict[str, Any] = {}
    context_param = None
    for position, param in enumerate(inspect.signature(fn).parameters.values()):
        annotation = hints.get(param.name, param.annotation)
        if _is_context(param.name, annotation):
            if position != 0 and annotation is not ToolContext:
                raise DefinitionError(f"{_where(fn)}: @tool {name}: 'ctx' must be the first parameter")
            context_param = param.name
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise DefinitionError(
                f"{_where(fn)}: @tool {name}: *{param.name} cannot be described to the model; name each parameter"
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise DefinitionError(f"{_where(fn)}: @tool {name}: parameter {param.name!r} is positional-only")
        if annotation is inspect.Parameter.empty:
            raise DefinitionError(
                f"{_where(fn)}: @tool {name}: parameter {param.name!r} has no type annotation",
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        field_name, alias = _field_name(param.name)
        fields[field_name] = (annotation, Field(default, alias=alias, description=docs.get(param.name)))
    try:
        model = create_model(f"{name}_input", __config__=ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema()
    except (PydanticUserError, TypeError, ValueError) as error:
        raise DefinitionError(
            f"{_where(fn)}: @tool {name}: the parameters cannot be described as JSON: {error}"
        ) from error
    return model, schema, context_param


def _output_schema(fn: Callable[..., Any], name: str, output: Any) -> dict[str, Any] | None:
    if isinstance(output, dict):
        return output
    annotation = output
    if annotation is None:
        annotation = typing.get_type_hints(fn).get("return", inspect.Parameter.empty)
        if annotation in (inspect.Parameter.empty, Any, None, type(None)):
            return None
    try:
        return TypeAdapter(annotation).json_schema()
    except (PydanticUserError, TypeError, ValueError) as error:
        raise DefinitionError(
            f"{_where(fn)}: @tool {name}: the return type cannot be described as JSON ({error}); pass output=..."
        ) from error


def _make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    execution: Execution,
    needs_approval: ApprovalRule,
    effect: Effect,
    timeout: float | None,
    output: Any,
) -> Tool:
    if not callable(fn):
        raise DefinitionError(f"@tool must decorate a function, not {fn!r}")
    tool_name = name or fn.__name__
    if execution not in ("server", "agent"):
        raise DefinitionError(
            f"{_where(fn)}: @tool {tool_name}: execution must be 'server' or 'agent', not {execution!r}"
        )
    if effect not in ("read", "write"):
        raise DefinitionError(f"{_where(fn)}: @tool {tool_name}: effect must be 'read' or 'write', not {effect!r}")
    if timeout is not None and timeout <= 0:
        raise DefinitionError(f"{_where(fn)}: @tool {tool_name}: timeout must be positive, not {timeout!r}")
    if not isinstance(needs_approval, bool) and not callable(needs_approval):
        raise DefinitionError(
            f"{_where(fn)}: @tool {tool_name}: needs_approval must be a bool or a function of the args"
        )
    description, param_docs = _split_docstring(fn.__doc__ or "")
    if not description:
        raise DefinitionError(
            f"{_where(fn)}: @tool {tool_name}: add a docstring; it is the description the model reads"
        )
    model, schema, context_param = _build_input_model(fn, tool_name, param_docs)
    return Tool(
        name=tool_name,
        description=description,
        fn=fn,
        input_model=model,
        input_schema=schema,
        output_schema=_output_schema(fn, tool_name, output),
        title=title,
        execution=execution,
        needs_approval=needs_approval,
        effect=effect,
        timeout=timeout,
        context_param=context_param,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    title: str | None = None,
    execution: Execution = "server",
    needs_approval: ApprovalRule = False,
    effect: Effect = "read",
    timeout: float | None = None,
    output: Any = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    execution: Execution = "server",
    needs_approval: ApprovalRule = False,
    effect: Effect = "read",
    timeout: float | None = None,
    output: Any = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a function; use as ``@tool`` or ``@tool(...)``.

    Example::

        @tool(effect="read")
        async def get_weather(ctx: ToolContext, city: str, units: Literal["c", "f"] = "c") -> dict:
            \"\"\"Current conditions for a city.\"\"\"

    A first parameter named ``ctx`` (or any parameter annotated ``ToolContext``)
    receives the context and is not part of the schema. In an agent tree the
    file name is the tool name.

    Raises:
        DefinitionError: for a parameter without an annotation, ``*args`` or
            ``**kwargs``, a type pydantic cannot describe, a missing docstring,
            or an option outside its allowed values.
    """
    options = {
        "name": name,
        "title": title,
        "execution": execution,
        "needs_approval": needs_approval,
        "effect": effect,
        "timeout": timeout,
        "output": output,
    }
    if fn is not None:
        return _make_tool(fn, **options)

    def decorate(function: Callable[..., Any]) -> Tool:
        return _make_tool(function, **options)

    return decorate
