"""The ``define_*`` helpers: one small, frozen definition per authoring slot.

Each helper checks what it can at import time and raises ``DefinitionError``
with the reason; discovery later names the file. Optional parameters are
keyword-only, so new ones can be added without breaking authored agents.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel

from agents.sdk._errors import DefinitionError
from agents.sdk._fs import FileSystemSpec

Handler = Callable[..., Any]
HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# A secret's name is an environment variable's (``AGENTS_DIR`` agents fall back to one of
# that name), so ``${NAME}`` in an MCP connection and ``NAME_FILE`` both work with it.
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def secret_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a secret, or None when it can."""
    if not isinstance(name, str) or SECRET_NAME.fullmatch(name) is None:
        shown = repr(name)[:60] if isinstance(name, str) else type(name).__name__
        return (
            f"secret name {shown} must be letters, digits and '_', not starting with a digit, "
            "at most 128 characters (like an environment variable: SLACK_BOT_TOKEN)"
        )
    return None


def _require_callable(value: Any, what: str) -> None:
    if not callable(value):
        raise DefinitionError(f"{what} must be a function, not {value!r}")


# --- agent, instructions, skills ----------------------------------------------------


@dataclass(frozen=True)
class AgentConfig:
    """``agent.py``: how the agent runs. ``description`` is required on subagents."""

    model: str | None = None
    description: str | None = None
    max_running_turns: int | None = None
    root: FileSystemSpec | Callable[..., FileSystemSpec] | None = None
    tools: tuple[str, ...] | None = None
    secrets: tuple[str, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    retention_days: int | None = None


@dataclass(frozen=True)
class Webhook:
    """``define_agent(webhooks=[...])``: where the agent's session events are POSTed.
    ``events`` are event types or ``"*"``; ``secret`` names the secret that signs the body."""

    url: str
    events: tuple[str, ...]
    secret: str | None = None

    def wants(self, event_type: str) -> bool:
        return "*" in self.events or event_type in self.events


WEBHOOK_KEYS = frozenset({"url", "events", "secret"})


def _webhook(entry: Any, position: int) -> Webhook:
    """One ``webhooks=`` entry checked: the shape only (discovery checks the URL against the policy)."""
    where = f"webhooks[{position}]"
    if not isinstance(entry, Mapping):
        raise DefinitionError(f"{where} must be a dict with 'url', 'events' and maybe 'secret', not {entry!r}")
    unknown = sorted(set(entry) - WEBHOOK_KEYS)
    if unknown:
        raise DefinitionError(f"{where} has unknown keys {unknown!r}; use 'url', 'events' and 'secret'")
    url, events, secret = entry.get("url"), entry.get("events"), entry.get("secret")
    if not isinstance(url, str) or not url.strip():
        raise DefinitionError(f"{where}['url'] must be a URL string, not {url!r}")
    if isinstance(events, str) or not isinstance(events, Sequence) or not events:
        raise DefinitionError(f"{where}['events'] must be a non-empty list of event types or ['*'], not {events!r}")
    if not all(isinstance(event, str) and event for event in events):
        raise DefinitionError(f"{where}['events'] must hold event type strings, not {events!r}")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise DefinitionError(f"{where}['secret'] must name a secret (e.g. 'HOOK_SECRET'), not {secret!r}")
    return Webhook(url=url.strip(), events=tuple(events), secret=secret)


def define_agent(
    *,
    model: str | None = None,
    description: str | None = None,
    max_running_turns: int | None = None,
    root: FileSystemSpec | Callable[..., FileSystemSpec] | None = None,
    tools: Sequence[str] | None = None,
    secrets: Sequence[str] = (),
    webhooks: Sequence[Mapping[str, Any]] = (),
    retention_days: int | None = None,
) -> AgentConfig:
    """Configure the agent (``agent.py``).

    Args:
        model: ``provider:name`` (``openai:gpt-4.1``, ``anthropic:claude-sonnet-4``) or ``test``;
            default ``AGENT_DEFAULT_MODEL``.
        description: what the agent does; required for a subagent (its parent reads it).
        max_running_turns: cap on turns running at once across sessions; more wait as ``turn.queued``.
        root: a FileSystem (or a factory of the session) from which the file tools are made.
        tools: allow-list of the synthesized file tools (``Read``, ``Grep``, ...).
        secrets: names of the secrets the agent's code may read as ``ctx.secrets["NAME"]``
            (only these: a read-only mapping, looked up again for each call).
        webhooks: ``[{"url", "events": [...], "secret"?}]``: each session event of those
            types (or ``"*"``) is POSTed to ``url`` as JSON, signed with the named secret.
        retention_days: days an ended session is kept before the retention task deletes it
            with its events and workspace (``0``: forever); default the tenant's, else the
            platform's ``PLATFORM_RETENTION_DAYS``.

    Raises:
        DefinitionError: for a model id without a provider, a non-positive turn cap, a
            malformed webhook entry, a ``secrets`` entry that is not a secret name, or a
            ``retention_days`` that is not a whole number >= 0.
    """
    if model is not None and model != "test" and ":" not in model:
        raise DefinitionError(f"model {model!r} must be 'provider:name' (e.g. 'openai:gpt-4.1') or 'test'")
    if max_running_turns is not None and max_running_turns < 1:
        raise DefinitionError(f"max_running_turns must be at least 1, not {max_running_turns!r}")
    if root is not None and not isinstance(root, FileSystemSpec) and not callable(root):
        raise DefinitionError(f"root must be a FileSystem (temp_fs(), union_fs(...), ...) or a factory, not {root!r}")
    if isinstance(secrets, str) or not isinstance(secrets, Sequence):
        raise DefinitionError(f"secrets must be a list of secret names (e.g. ['SLACK_BOT_TOKEN']), not {secrets!r}")
    for name in secrets:
        if problem := secret_name_problem(name):
            raise DefinitionError(problem)
    if isinstance(webhooks, Mapping | str) or not isinstance(webhooks, Sequence):
        raise DefinitionError(f"webhooks must be a list of dicts, not {webhooks!r}")
    if retention_days is not None and (
        isinstance(retention_days, bool) or not isinstance(retention_days, int) or retention_days < 0
    ):
        raise DefinitionError(
            f"retention_days must be a whole number of days >= 0 (0: forever), not {retention_days!r}"
        )
    return AgentConfig(
        model,
        description,
        max_running_turns,
        root,
        tuple(tools) if tools is not None else None,
        tuple(secrets),
        tuple(_webhook(entry, position) for position, entry in enumerate(webhooks)),
        retention_days,
    )


@dataclass(frozen=True)
class Instructions:
    """System-prompt text, fixed or computed from the session."""

    text: str | None = None
    render: Handler | None = None


def define_instructions(text_or_render: str | Handler) -> Instructions:
    """Instructions from Python (``instructions.py``): a string, or a function of the context.

    Raises:
        DefinitionError: for anything else.
    """
    if isinstance(text_or_render, str):
        return Instructions(text=text_or_render)
    _require_callable(text_or_render, "define_instructions()")
    return Instructions(render=text_or_render)


@dataclass(frozen=True)
class Skill:
    """A procedure the model loads on demand: the catalog shows the description."""

    description: str
    instructions: str
    name: str | None = None


def define_skill(*, description: str, instructions: str, name: str | None = None) -> Skill:
    """A skill from Python; Markdown skills (``skills/<name>.md``) are the usual form.

    Raises:
        DefinitionError: for an empty description or body.
    """
    if not description.strip():
        raise DefinitionError("a skill needs a description: the model chooses skills by it")
    if not instructions.strip():
        raise DefinitionError("a skill needs instructions (its body)")
    return Skill(description.strip(), instructions.strip(), name)


# --- connections, channels, hooks, schedules -------------------------------------------


@dataclass(frozen=True)
class McpConnection:
    """An MCP server, over stdio (``command``) or streamable HTTP (``url``)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None
    tools: tuple[str, ...] | None = None
    advertise_tools: bool = True
    needs_approval: bool | tuple[str, ...] = False
    timeout: float | None = None

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"


def define_mcp_connection(
    *,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    description: str | None = None,
    tools: Sequence[str] | None = None,
    advertise_tools: bool = True,
    needs_approval: bool | Sequence[str] = False,
    timeout: float | None = None,
) -> McpConnection:
    """An MCP server the agent uses (``mcp-connections/``) or host code uses (``host-connections/``).

    stdio: ``command`` and ``args`` start the server in the agent folder, with ``env``
    added to a minimal environment; streamable HTTP: ``url`` and ``headers``, through the
    outbound policy. ``${NAME}`` in a value names a secret. ``tools`` is an allow-list;
    ``advertise_tools=False`` keeps an ``mcp-connections/`` server's tools from the model;
    ``needs_approval`` (True, or tool names) parks the model's calls for a person;
    ``timeout`` (seconds, default 120) bounds each call, and a server that misses it is stopped.

    Example::

        connection = define_mcp_connection(
            url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer ${EXAMPLE_TOKEN}"}
        )

    Raises:
        DefinitionError: unless exactly one of ``command`` and ``url`` is given, or for a
            timeout that is not a positive number.
    """
    if bool(command) == bool(url):
        raise DefinitionError("an MCP connection needs exactly one of command= (stdio) or url= (HTTP)")
    if url is not None and not url.startswith(("http://", "https://")):
        raise DefinitionError(f"url {url!r} must be an http(s) URL")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise DefinitionError(f"timeout {timeout!r} must be a positive number of seconds")
    if isinstance(args, str) or isinstance(tools, str):
        raise DefinitionError("args= and tools= take a list of strings, not one string")
    approval = needs_approval if isinstance(needs_approval, bool) else tuple(needs_approval)
    return McpConnection(
        command,
        tuple(args),
        dict(env or {}),
        url,
        dict(headers or {}),
        description,
        tuple(tools) if tools is not None else None,
        bool(advertise_tools),
        approval,
        float(timeout) if timeout is not None else None,
    )


@dataclass(frozen=True)
class Route:
    """One HTTP route of a channel, served under ``/<slug>/v1/channels/<channel><path>``.

    The handler (plain or async) is called ``handler(ctx, body)`` with the validated
    ``body`` model, or ``handler(ctx)`` when ``body`` is None; what it returns is the
    JSON answer (see ``ChannelContext`` for ``ctx.send``)."""

    method: str
    path: str
    handler: Handler
    body: type[BaseModel] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if self.method.upper() not in HTTP_METHODS:
            raise DefinitionError(f"route method {self.method!r} is not one of {sorted(HTTP_METHODS)}")
        object.__setattr__(self, "method", self.method.upper())
        if not self.path.startswith("/"):
            raise DefinitionError(f"route path {self.path!r} must start with '/'")
        _require_callable(self.handler, f"the handler of {self.method} {self.path}")
        if self.body is not None and not (isinstance(self.body, type) and issubclass(self.body, BaseModel)):
            raise DefinitionError(f"route body for {self.path!r} must be a pydantic model class, not {self.body!r}")


@dataclass(frozen=True)
class Pack:
    """What makes a channel one of the platform's packs (``slack_channel(...)``,
    ``github_channel(...)``): the platform serves its route itself, checking the
    pack's own signature instead of the bearer token. ``options`` are the pack
    function's arguments (secrets by name)."""

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # The one route the platform serves for it (``POST <path>``), and what it is for.
    path: str = ""
    description: str = ""


@dataclass(frozen=True)
class Channel:
    """A way in and out: HTTP routes and a subscriber to the session's events, each
    ``events`` handler called ``handler(event, channel, ctx)`` (a ``ChannelSession`` and
    a ``HookContext``) for the sessions of this channel. ``pack``: set by a pack
    function; None for an authored channel."""

    routes: tuple[Route, ...] = ()
    events: Mapping[str, Handler] = field(default_factory=dict)
    auth: Handler | None = None
    pack: Pack | None = None
    # Browser origins (``https://shop.example``, or ``*``) that may call this channel's
    # routes and the agent's session routes from their pages (CORS).
    cors_origins: tuple[str, ...] = ()


_ORIGIN = re.compile(r"https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?")


def cors_origin(value: object) -> str:
    """``value`` if it is ``*`` or a browser origin (``scheme://host[:port]``, no path).

    Raises:
        DefinitionError: for anything else.
    """
    if value == "*" or (isinstance(value, str) and _ORIGIN.fullmatch(value)):
        return str(value)
    raise DefinitionError(
        f"cors_origins entries are origins like 'https://shop.example' (scheme://host[:port], no path) or '*', "
        f"not {value!r}"
    )


def define_channel(
    *,
    routes: Sequence[Route] = (),
    events: Mapping[str, Handler] | None = None,
    auth: Handler | None = None,
    cors_origins: Sequence[str] = (),
) -> Channel:
    """A channel (``channels/<name>.py``). ``auth``, when given, is called (plain or
    async) as ``auth(request)`` with a ``ChannelRequest`` on every route, besides the
    platform's own auth; a falsy answer refuses the call (401). ``cors_origins``: the
    browser origins whose pages may call the channel's routes (and the agent's session
    routes, to follow what they started), e.g.
    ``define_channel(routes=[...], cors_origins=["https://shop.example"])``.

    Raises:
        DefinitionError: for a route that is not a ``Route``, two routes with the same
            method and path, a handler that is not a function, or an entry of
            ``cors_origins`` that is not an origin or ``*``.
    """
    if isinstance(cors_origins, str):
        raise DefinitionError(f"cors_origins is a list of origins, not the string {cors_origins!r}")
    origins = tuple(cors_origin(origin) for origin in cors_origins)
    seen: set[tuple[str, str]] = set()
    for route in routes:
        if not isinstance(route, Route):
            raise DefinitionError(f"routes must be Route(...) objects, not {route!r}")
        if (route.method, route.path) in seen:
            raise DefinitionError(f"two routes for {route.method} {route.path}")
        seen.add((route.method, route.path))
    for event_type, handler in (events or {}).items():
        _require_callable(handler, f"the handler for {event_type!r}")
    if auth is not None:
        _require_callable(auth, "auth")
    return Channel(tuple(routes), dict(events or {}), auth, cors_origins=origins)


@dataclass(frozen=True)
class Hook:
    """An observe-only subscriber: ``{event type or "*": handler}``, each handler called
    ``handler(event, ctx)`` with a ``HookContext`` (the event first)."""

    events: Mapping[str, Handler]


def define_hook(*, events: Mapping[str, Handler]) -> Hook:
    """A hook (``hooks/<path>.py``): ``define_hook(events={"turn.completed": on_done})``
    with ``def on_done(event, ctx)``. An empty map is allowed but the hook never runs.

    Raises:
        DefinitionError: for a handler that is not a function.
    """
    for event_type, handler in events.items():
        _require_callable(handler, f"the hook handler for {event_type!r}")
    return Hook(dict(events))


@dataclass(frozen=True)
class Schedule:
    """A cron run (UTC, 5 fields): a ``task`` session with ``prompt``, or ``handler`` called."""

    cron: str
    prompt: str | None = None
    handler: Handler | None = None
    description: str | None = None
    # The title of the sessions a prompt fire starts (Markdown front matter ``title``); None: the id.
    title: str | None = None


def define_schedule(
    *, cron: str, prompt: str | None = None, handler: Handler | None = None, description: str | None = None
) -> Schedule:
    """A schedule (``schedules/<name>.py``; Markdown with ``cron`` front matter also works).
    The cron expression is checked by discovery.

    Raises:
        DefinitionError: unless exactly one of ``prompt`` and ``handler`` is given.
    """
    if (prompt is None) == (handler is None):
        raise DefinitionError("a schedule needs exactly one of prompt= or handler=")
    if handler is not None:
        _require_callable(handler, "the schedule handler")
    return Schedule(cron.strip(), prompt, handler, description)


# --- A/B, artifacts, result, storage, telemetry -------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """An A/B experiment: a sticky arm per session, with per-arm instructions."""

    arms: tuple[str, ...]
    weights: tuple[float, ...]
    instructions: Mapping[str, str] = field(default_factory=dict)
    metrics: Handler | None = None
    name: str | None = None
    description: str | None = None


def define_ab(
    *,
    arms: Sequence[str],
    weights: Sequence[float] | None = None,
    instructions: Mapping[str, str] | None = None,
    metrics: Handler | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Experiment:
    """An experiment (``ab.py`` or ``ab/<name>.py``); ``name`` overrides the file name.

    Raises:
        DefinitionError: for fewer than two arms, duplicate arms, weights that do not
            match the arms or are not positive, or instructions for an unknown arm.
    """
    arms = tuple(arms)
    if len(arms) < 2 or len(set(arms)) != len(arms):
        raise DefinitionError(f"an experiment needs two or more distinct arms, not {list(arms)!r}")
    weights = tuple(float(w) for w in weights) if weights is not None else tuple(1.0 for _ in arms)
    if len(weights) != len(arms) or any(w <= 0 for w in weights):
        raise DefinitionError(f"weights {list(weights)!r} must be one positive number per arm {list(arms)!r}")
    unknown = set(instructions or {}) - set(arms)
    if unknown:
        raise DefinitionError(f"instructions for unknown arms {sorted(unknown)!r}; the arms are {list(arms)!r}")
    if metrics is not None:
        _require_callable(metrics, "metrics")
    return Experiment(arms, weights, dict(instructions or {}), metrics, name, description)


@dataclass(frozen=True)
class ABConfig:
    """``ab.config.py``: settings shared by the agent's experiments."""

    enabled: bool = True
    exclude_purposes: tuple[str, ...] = ("eval",)


def define_ab_config(*, enabled: bool = True, exclude_purposes: Sequence[str] = ("eval",)) -> ABConfig:
    """Shared A/B settings: turn all experiments off, or keep some session purposes out."""
    return ABConfig(enabled, tuple(exclude_purposes))


@dataclass(frozen=True)
class ArtifactsConfig:
    """``artifacts.py``: the kinds of artifact the agent keeps, and for how long
    (``retention``: one duration for every kind, or one per kind; ``None``: kept)."""

    kinds: Mapping[str, str]
    tag_artifact: bool = False
    retention: timedelta | Mapping[str, timedelta] | None = None

    def retention_of(self, kind: str) -> timedelta | None:
        """How long an artifact of ``kind`` is kept after its last update (None: for ever)."""
        if isinstance(self.retention, Mapping):
            return self.retention.get(kind)
        return self.retention


def _duration(value: timedelta | int, what: str) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, (int, timedelta)):
        raise DefinitionError(f"{what} must be whole days or a timedelta, not {value!r}")
    duration = timedelta(days=value) if isinstance(value, int) else value
    if duration <= timedelta(0):
        raise DefinitionError(f"{what} must be positive, not {value!r}")
    return duration


def define_artifacts(
    *,
    kinds: Mapping[str, str] | Sequence[str],
    tag_artifact: bool = False,
    retention: timedelta | int | Mapping[str, timedelta | int] | None = None,
) -> ArtifactsConfig:
    """Artifact kinds (``{kind: description}`` or a list), whether the model gets the
    ``tag_artifact`` tool, and a retention after the last update: whole days or a
    timedelta, for every kind or per kind (``{"digest": 7}``; kinds left out are kept).

    Example::

        artifacts = define_artifacts(kinds={"report": "A Markdown report."}, tag_artifact=True, retention=30)

    Raises:
        DefinitionError: for no kinds, a non-positive retention, or a retention for an
            unknown kind.
    """
    kind_map = dict(kinds) if isinstance(kinds, Mapping) else {kind: "" for kind in kinds}
    if not kind_map:
        raise DefinitionError("define_artifacts needs at least one kind")
    kept: timedelta | dict[str, timedelta] | None = None
    if isinstance(retention, Mapping):
        unknown = sorted(set(retention) - set(kind_map))
        if unknown:
            raise DefinitionError(f"retention for unknown kinds {unknown!r}; the kinds are {sorted(kind_map)!r}")
        kept = {kind: _duration(value, f"the retention of {kind!r}") for kind, value in retention.items()}
    elif retention is not None:
        kept = _duration(retention, "retention")
    return ArtifactsConfig(kind_map, tag_artifact, kept)


@dataclass(frozen=True)
class ResultHandler:
    """``result.py``: ``commit(ctx)`` runs on the final assistant text."""

    commit: Handler


def define_result(*, commit: Handler) -> ResultHandler:
    """What to do with the final answer; a raise (or an empty answer) fails the turn."""
    _require_callable(commit, "commit")
    return ResultHandler(commit)


@dataclass(frozen=True)
class StorageConfig:
    """``storage.py``: where ``ctx.host.kv`` and ``ctx.host.files`` keep data."""

    kv: Literal["database"] = "database"
    files: Literal["database"] = "database"


def define_storage(*, kv: Literal["database"] = "database", files: Literal["database"] = "database") -> StorageConfig:
    """Storage backends; the database (Postgres) is the one backend so far.

    Raises:
        DefinitionError: for an unknown backend.
    """
    for what, value in (("kv", kv), ("files", files)):
        if value != "database":
            raise DefinitionError(f"{what} backend {value!r} is not available; use 'database'")
    return StorageConfig(kv, files)


@dataclass(frozen=True)
class OtelConfig:
    """``otel.py``: where the agent's traces and metrics go."""

    endpoint: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    service_name: str | None = None
    enabled: bool = True
    include_content: bool = False


def define_otel(
    *,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    service_name: str | None = None,
    enabled: bool = True,
    include_content: bool = False,
) -> OtelConfig:
    """OpenTelemetry export for this agent (OTLP over HTTP, protobuf).

    ``endpoint`` is the collector's base URL (``/v1/traces`` and ``/v1/metrics`` are
    added); without one, the ``OTEL_EXPORTER_OTLP_*`` environment decides. ``headers``
    go with every export to ``endpoint`` (the environment's headers never do).
    ``enabled=False`` exports nothing for this agent, whatever the environment says;
    ``include_content=True`` adds prompt text and tool payloads to the spans.

    Example::

        otel = define_otel(endpoint="https://collector.example.com", headers={"x-api-key": "..."})

    Raises:
        DefinitionError: an endpoint that is not an http(s) URL, or headers that are not strings.
    """
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://"))):
        raise DefinitionError(f"endpoint must be an http(s) URL, not {endpoint!r}")
    for name, value in dict(headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise DefinitionError(f"headers must map strings to strings; {name!r}: {value!r} does not")
    return OtelConfig(endpoint, dict(headers or {}), service_name, enabled, include_content)


# --- evals ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalCase:
    """One eval case (``evals/**/*.eval.py``): ``test(t)`` drives a session and checks it."""

    test: Handler
    description: str | None = None
    tags: tuple[str, ...] = ()
    timeout: float | None = None
    repeat: int = 1


def define_eval(
    *,
    test: Handler,
    description: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    repeat: int = 1,
) -> EvalCase:
    """An eval case; ``test`` is ``async def test(t)`` using ``t.send``, ``t.reply``, ``t.called``...

    Raises:
        DefinitionError: when ``test`` is not a function of one argument.
    """
    _require_callable(test, "test")
    if len(inspect.signature(test).parameters) != 1:
        raise DefinitionError("an eval's test takes one argument, t")
    if repeat < 1:
        raise DefinitionError(f"repeat must be at least 1, not {repeat!r}")
    return EvalCase(test, description, tuple(tags), timeout, repeat)


@dataclass(frozen=True)
class EvalsConfig:
    """``evals/evals.config.py``: how the agent's eval cases run."""

    max_concurrency: int = 4
    tags: tuple[str, ...] = ()
    timeout: float | None = None
    model: str | None = None
    repeat: int = 1


def define_evals_config(
    *,
    max_concurrency: int = 4,
    tags: Sequence[str] = (),
    timeout: float | None = None,
    model: str | None = None,
    repeat: int = 1,
) -> EvalsConfig:
    """Eval settings: concurrency, default tags, per-case timeout, model override.

    Raises:
        DefinitionError: for a concurrency below 1.
    """
    if max_concurrency < 1:
        raise DefinitionError(f"max_concurrency must be at least 1, not {max_concurrency!r}")
    if repeat < 1:
        raise DefinitionError(f"repeat must be at least 1, not {repeat!r}")
    return EvalsConfig(max_concurrency, tuple(tags), timeout, model, repeat)
