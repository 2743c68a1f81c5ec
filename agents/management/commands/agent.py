"""``python manage.py agent <subcommand>``: the agent CLI (DESIGN.md §7)."""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agent_platform.conf import platform_settings
from agents.api.views import info_document
from agents.config import missing_model_keys, outbound_policy
from agents.discovery import AgentSurface, discover
from agents.discovery.extensions import ENTRY_POINT_GROUP, installed_extensions
from agents.local_run import OnRecord, run_locally
from agents.registry import RESERVED_SEGMENTS, agent_folders, is_valid_slug
from agents.runtime.trajectory import format_summary, summarize
from agents.scaffold import scaffold


def _agent_folders_at(path: Path) -> dict[str, Path]:
    """An agent folder itself (it holds agent/), or every agent folder under an AGENTS_DIR."""
    if (path / "agent").is_dir():
        return {path.name: path}
    return agent_folders(path)


SLACK_SETUP = """Slack app set-up (api.slack.com/apps > Create New App > From scratch):
  1. OAuth & Permissions > Bot Token Scopes: app_mentions:read, chat:write, im:history.
     Install the app to the workspace; copy the Bot User OAuth Token (xoxb-...).
  2. Basic Information > App Credentials: copy the Signing Secret.
  3. Event Subscriptions: enable, set the Request URL below (Slack sends url_verification;
     the platform answers it), and subscribe to the bot events app_mention and message.im.
  4. App Home: allow users to send messages in the Messages tab (for DMs).
  5. Set the two secrets in the platform's environment and restart it.
"""


class Command(BaseCommand):
    help = "The agent CLI: validate, deploy, info, run, eval, trajectory, init, serve, dispatch, extensions, slack..."
    # Each subcommand discovers the agents it uses and reports their diagnostics itself:
    # one broken agent of AGENTS_DIR must not stop `agent run` of another (see agents/checks.py).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        validate = actions.add_parser("validate", help="Print diagnostics; exit 1 when any is an error.")
        validate.add_argument("--dir", type=Path, help="An agent folder or an AGENTS_DIR (default AGENTS_DIR).")
        deploy = actions.add_parser(
            "deploy", help="Upload DIR as a new revision of TENANT's deployed agent; exit 1 on errors."
        )
        deploy.add_argument("dir", type=Path, help="The agent folder (holding agent/, maybe evals/).")
        deploy.add_argument("--tenant", required=True, help="The tenant that owns the agent.")
        deploy.add_argument("--slug", help="The agent's slug (default: the folder's name); made if new.")
        deploy.add_argument("--activate", action="store_true", help="Activate the revision if it has no errors.")
        info = actions.add_parser("info", help="Print the discovered surface (--json: the /v1/info document).")
        info.add_argument("slug", nargs="?", help="An agent of AGENTS_DIR (or use --dir).")
        info.add_argument("--dir", type=Path, help="An agent folder.")
        info.add_argument("--json", action="store_true", help="Print the JSON document of GET /v1/info.")
        run = actions.add_parser(
            "run",
            help="Run one turn in this process (no server), or on a server with --url, printing the reply as "
            "it streams; exit 1 if it fails.",
        )
        run.add_argument("slug", nargs="?", help="An agent of AGENTS_DIR (or use --dir); with --url, of that server.")
        run.add_argument("text", nargs="?", metavar="MESSAGE", help="The message (or use --message).")
        run.add_argument("--dir", type=Path, help="An agent folder.")
        run.add_argument("--message")
        run.add_argument("--url", help="The platform's base URL: run the turn there, through the Python client.")
        run.add_argument("--token", help="A bearer token for --url.")
        run.add_argument("--session", metavar="ID", help="With --url: a follow-up in this session.")
        run.add_argument(
            "--json",
            action="store_true",
            help="Print the events as NDJSON, one per line, as the stream route sends them (what "
            "`agent trajectory` and the playground's Open trace read).",
        )
        run.add_argument("--dry-run", action="store_true", help="Stub write-effect tools and skip the commit.")
        decide = run.add_mutually_exclusive_group()
        decide.add_argument("--approve", action="store_true", help="Approve every call that asks for approval.")
        decide.add_argument("--deny", action="store_true", help="Deny every call that asks for approval.")
        trajectory = actions.add_parser("trajectory", help="Summarise a saved NDJSON event stream.")
        trajectory.add_argument(
            "--events", required=True, help="NDJSON events (`agent run --json`, a saved stream); - is stdin."
        )
        trajectory.add_argument("--json", action="store_true")
        init = actions.add_parser("init", help="Create a new agent that validates cleanly.")
        init.add_argument("name")
        init.add_argument("--dir", type=Path, help="Where to create it (default AGENTS_DIR).")
        github = actions.add_parser("github", help="The GitHub pack: `agent github help` prints the webhook set-up.")
        github.add_argument("topic", choices=["help"])
        github.add_argument("--url", default="https://<your-host>", help="The platform's public base URL.")
        serve = actions.add_parser(
            "serve",
            help="Serve every agent in AGENTS_DIR with daphne; in the embedded form also run "
            "the Celery worker and beat as threads of this process.",
        )
        dispatch = actions.add_parser(
            "dispatch",
            help="Run a schedule, fire a reminder or send a task message now (any mode); "
            "--wait: exit 0 when every session completed, else 1.",
        )
        dispatch.add_argument("slug", help="A served agent.")
        what = dispatch.add_mutually_exclusive_group(required=True)
        what.add_argument("--schedule", metavar="ID", help="Run this schedule once.")
        what.add_argument("--reminder", metavar="ID", help="Fire this pending reminder now.")
        what.add_argument("--message", metavar="TEXT", help="Start a task session on the schedule channel.")
        dispatch.add_argument("--wait", action="store_true", help="Wait until the sessions are done.")
        dispatch.add_argument("--timeout", type=float, default=600.0, help="How long --wait waits (seconds).")
        dispatch.add_argument("--json", action="store_true", help="Print the result as JSON.")
        serve.add_argument("--host", default="127.0.0.1")
        serve.add_argument("--port", type=int, default=8000)
        evaluate = actions.add_parser(
            "eval",
            help="Run the agent's eval cases (in this process, or through a server with --url); "
            "exit 0 iff every selected case passed, 1 if any did not, 2 when nothing matched.",
        )
        evaluate.add_argument("slug", nargs="?", help="An agent of AGENTS_DIR (or use --dir).")
        evaluate.add_argument("--dir", type=Path, help="An agent folder (in-process runs).")
        evaluate.add_argument("--filter", action="append", default=[], metavar="ID", help="A case id (repeatable).")
        evaluate.add_argument("--tag", action="append", default=[], metavar="T", help="A tag (repeatable).")
        evaluate.add_argument("--url", help="The platform's base URL: run through its routes.")
        evaluate.add_argument("--token", help="A bearer token for --url.")
        evaluate.add_argument("--json", action="store_true", help="Print the final snapshot on stdout.")
        evaluate.add_argument("--junit", type=Path, metavar="FILE", help="Write a JUnit XML report.")
        extensions = actions.add_parser(
            "extensions", help="List the installed extension packages (entry point group agent_platform.extensions)."
        )
        extensions.add_argument("--json", action="store_true", help="Print them as a JSON list.")
        slack = actions.add_parser("slack", help="The Slack pack: `agent slack help` prints the Slack app set-up.")
        slack.add_argument("topic", choices=["help"])
        slack.add_argument(
            "--url",
            "--base-url",
            dest="base_url",
            default="https://<your-host>",
            help="Where Slack reaches this platform (its public URL).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "validate":
            self.validate(options["dir"] or Path(platform_settings.AGENTS_DIR))
        elif action == "deploy":
            self.deploy(options["dir"], options["tenant"], options["slug"], activate=options["activate"])
        elif action == "info":
            self.info(self._one_agent(options["slug"], options["dir"]), as_json=options["json"])
        elif action == "run":
            self.run(options)
        elif action == "trajectory":
            self.trajectory(options["events"], as_json=options["json"])
        elif action == "dispatch":
            self.dispatch(options)
        elif action == "eval":
            self.evaluate(options)
        elif action == "init":
            self.init(options["name"], options["dir"] or Path(platform_settings.AGENTS_DIR))
        elif action == "extensions":
            self.extensions(as_json=options["json"])
        elif action == "slack":
            self.slack_help(Path(platform_settings.AGENTS_DIR), options["base_url"].rstrip("/"))
        elif action == "github":
            from agents.github_setup import setup_help

            self.stdout.write(setup_help(Path(platform_settings.AGENTS_DIR), options["url"]))
        else:
            self.serve(options["host"], options["port"])

    def validate(self, path: Path) -> None:
        folders = _agent_folders_at(path)
        if not folders:
            raise CommandError(f"no agent folder (one holding agent/) at {path}")
        failed = []
        for slug, folder in folders.items():
            surface, loader = discover(folder, slug, outbound=outbound_policy())
            loader.unload()
            found = surface.all_diagnostics()
            errors = [d for d in found if d.is_error]
            keys = missing_model_keys(surface)
            status = "error" if errors else "ok"
            warnings = len(found) - len(errors) + len(keys)
            self.stdout.write(f"{slug}: {status} ({len(errors)} error(s), {warnings} warning(s))")
            for diagnostic in found:
                self.stdout.write(f"  {diagnostic}\n    hint: {diagnostic.code.hint}")
            for model, variable in keys.items():
                self.stdout.write(
                    f"  warning: {variable} is not set, so every turn on the model {model!r} fails\n"
                    f"    hint: set {variable} (or {variable.replace('_API_KEY', '_BASE_URL')} for a compatible "
                    "server that needs no key), or AGENT_DEFAULT_MODEL=test for the offline test model"
                )
            if errors:
                failed.append(slug)
        if failed:
            raise CommandError(f"errors in {', '.join(failed)}", returncode=1)

    def deploy(self, folder: Path, tenant_slug: str, slug: str | None, *, activate: bool) -> None:
        from agent_platform.errors import DomainError
        from agent_platform.models import Tenant
        from agents.deployments import deploy_from_folder

        tenant = Tenant.objects.filter(slug=tenant_slug).first()
        if tenant is None:
            raise CommandError(f"no tenant {tenant_slug!r}")
        if not (folder / "agent").is_dir():
            raise CommandError(f"no agent/ folder in {folder}")
        name = slug or folder.resolve().name
        try:
            revision, created = deploy_from_folder(tenant, name, folder, activate_it=activate)
        except DomainError as refused:
            raise CommandError(str(refused)) from None
        status = "error" if revision.status != "ready" else "ok"
        seen = "new" if created else "uploaded before"
        self.stdout.write(f"{name}: {status}, deployment {revision.pk} ({revision.hash[:12]}, {seen})")
        for d in revision.diagnostics:
            self.stdout.write(
                f"  {d['severity'].upper()} {d['code']} {d['path']}: {d['message']}\n    hint: {d['hint']}"
            )
        if status == "error":
            raise CommandError(f"errors in {name}: the deployment cannot be activated", returncode=1)
        if activate:
            self.stdout.write(f"{name}: deployment {revision.pk} is active")

    def extensions(self, *, as_json: bool) -> None:
        """One line per installed extension package: the name mounts use, the pip package and its version."""
        found = installed_extensions()
        if as_json:
            self.stdout.write(json.dumps([item.as_dict() for item in found], indent=2))
            return
        if not found:
            self.stdout.write(f"No extension package is installed (entry point group {ENTRY_POINT_GROUP}).")
        for item in found:
            package = f"{item.distribution} {item.version}" if item.distribution else "(no package metadata)"
            self.stdout.write(f"{item.name}  {package}  module {item.module}")
            if item.summary:
                self.stdout.write(f"  {item.summary}")

    def slack_help(self, agents_dir: Path, base_url: str) -> None:
        """The Slack app set-up, and the request URL of each agent with a Slack pack."""
        self.stdout.write(SLACK_SETUP)
        found = []
        for slug, folder in _agent_folders_at(agents_dir).items() if agents_dir.is_dir() else ():
            surface, loader = discover(folder, slug, outbound=outbound_policy())
            loader.unload()
            for name, entry in surface.channels.items():
                pack = entry.value.pack
                if pack is not None and pack.kind == "slack":
                    found.append((slug, name, pack.options))
        if not found:
            self.stdout.write("No agent in AGENTS_DIR has a Slack pack (channels/slack.py with slack_channel(...)).")
        for slug, name, options in found:
            self.stdout.write(
                f"{slug} (channels/{name}.py):\n"
                f"  Request URL: {base_url}/{slug}/v1/channels/{name}/events\n"
                f"  Secrets: {options['signing_secret']} = the app's Signing Secret (Basic Information), "
                f"{options['bot_token']} = its Bot User OAuth Token (OAuth & Permissions)"
            )

    def _one_agent(self, slug: str | None, folder: Path | None) -> AgentSurface:
        if folder is None:
            if slug is None:
                raise CommandError("name an agent of AGENTS_DIR, or pass --dir PATH")
            folder = Path(platform_settings.AGENTS_DIR) / slug
        if not (folder / "agent").is_dir():
            raise CommandError(f"{folder} holds no agent/ folder")
        surface, loader = discover(folder, slug or folder.name, outbound=outbound_policy())
        loader.unload()
        return surface

    def info(self, surface: AgentSurface, *, as_json: bool) -> None:
        document = info_document(surface)
        if as_json:
            self.stdout.write(json.dumps(document, indent=2))
            return
        self.stdout.write(
            f"{surface.slug}  model {document['model']}{' (test model)' if document['testModel'] else ''}"
        )
        for label, key in [
            ("tools", "tools"),
            ("skills", "skills"),
            ("subagents", "subagents"),
            ("mcp connections", "mcpConnections"),
            ("channels", "channels"),
            ("hooks", "hooks"),
            ("schedules", "schedules"),
            ("experiments", "experiments"),
            ("extensions", "extensions"),
        ]:
            names = [item.get("name") or item.get("id") or item.get("namespace") for item in document[key]]
            self.stdout.write(f"  {label}: {', '.join(names) if names else '-'}")
        for mount in document["extensions"]:
            package = f", {mount['package']['name']} {mount['package']['version']}" if mount["package"] else ""
            self.stdout.write(f"  extension {mount['namespace']}: {mount['kind']} from {mount['source']}{package}")
        self.stdout.write(f"  result: {'yes' if document['result'] else 'no'}")
        self.stdout.write(f"  eval cases: {', '.join(c['id'] for c in document['evals']['cases']) or '-'}")
        for diagnostic in surface.all_diagnostics():
            self.stdout.write(f"  {diagnostic}")

    def run(self, options: dict[str, Any]) -> None:
        if options["dir"] and options["slug"] and not options["text"]:
            options["slug"], options["text"] = None, options["slug"]  # `agent run --dir PATH "message"`
        if (options["text"] is None) == (options["message"] is None):
            raise CommandError("give the message once: agent run SLUG MESSAGE, or --message", returncode=2)
        message = options["text"] if options["text"] is not None else options["message"]
        approve = True if options["approve"] else False if options["deny"] else None
        if options["url"]:
            if not options["slug"]:
                raise CommandError("--url needs the agent's slug", returncode=2)
            from agents import run_remote  # the Python client, only when a server is named

            records, status, failure = run_remote.run(
                options["url"],
                options["token"],
                options["slug"],
                message,
                session_id=options["session"],
                approve=approve,
                dry_run=options["dry_run"],
                show=self._shower(as_json=options["json"]),
            )
        else:
            if options["token"] or options["session"]:
                raise CommandError("--token and --session go with --url", returncode=2)
            surface = self._one_agent(options["slug"], options["dir"])
            if surface.errors:
                for diagnostic in surface.errors:
                    self.stderr.write(str(diagnostic))
                raise CommandError(f"{surface.slug} has errors; fix them first (agent validate)", returncode=2)
            result = run_locally(
                surface,
                message,
                approve=approve,
                dry_run=options["dry_run"],
                on_record=self._shower(as_json=options["json"]),
            )
            records, status, failure = result.records, result.outcome.status, result.outcome.failure
        if not options["json"]:
            self.stdout.write(format_summary(summarize(records)))
            if options["url"] and records:
                self.stdout.write(f"session: {records[-1]['sessionId']}")
        if status == "parked":
            raise CommandError("the turn is waiting for approval; rerun with --approve or --deny", returncode=3)
        if status == "failed":
            raise CommandError(f"the turn failed: {failure}", returncode=1)

    def _shower(self, *, as_json: bool) -> OnRecord:
        """What prints each event record as it arrives: the record itself (``--json``), or
        the reply's deltas, then a line break when the reply is complete."""

        streaming = False

        def show(record: dict[str, Any]) -> None:
            nonlocal streaming
            if as_json:
                self.stdout.write(json.dumps(record, default=str))
            elif record["data"].get("parentCallId"):
                return
            elif record["type"] == "message.appended":
                self.stdout.write(record["data"].get("text", ""), ending="")
                streaming = True
            elif record["type"] == "message.completed" and streaming:
                self.stdout.write("")
                streaming = False
            else:
                return
            self.stdout.flush()

        return show

    def evaluate(self, options: dict[str, Any]) -> None:
        from agents import eval_cli

        def progress(line: str) -> None:
            self.stderr.write(line)
            self.stderr.flush()

        filters, tags = options["filter"], options["tag"]
        try:
            if options["url"]:
                if not options["slug"]:
                    raise CommandError("--url needs the agent's slug", returncode=2)
                slug = options["slug"]
                snapshot = eval_cli.run_remote(options["url"], slug, options["token"], filters, tags, progress)
            else:
                if options["token"]:
                    raise CommandError("--token goes with --url", returncode=2)
                surface = self._one_agent(options["slug"], options["dir"])
                if surface.errors:
                    for diagnostic in surface.errors:
                        self.stderr.write(str(diagnostic))
                    raise CommandError(f"{surface.slug} has errors; fix them first (agent validate)", returncode=2)
                slug = surface.slug
                snapshot = eval_cli.run_in_process(surface, filters, tags, progress)
        except eval_cli.EvalUsageError as refused:
            raise CommandError(str(refused), returncode=2) from refused
        if options["junit"]:
            eval_cli.write_junit(options["junit"], snapshot, slug)
        if options["json"]:
            self.stdout.write(json.dumps(snapshot, indent=2))
        summary = snapshot["summary"]
        self.stderr.write(
            f"{snapshot['status']}: " + ", ".join(f"{count} {name}" for name, count in summary.items() if count)
        )
        code = eval_cli.exit_code(snapshot)
        if code:
            raise CommandError("not every selected case passed", returncode=code)

    def trajectory(self, source: str, *, as_json: bool) -> None:
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text()
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as problem:
            raise CommandError(f"cannot read {source}: {problem}") from problem
        summary = summarize(records)
        self.stdout.write(json.dumps(summary, indent=2, default=str) if as_json else format_summary(summary))

    def dispatch(self, options: dict[str, Any]) -> None:
        from agent_platform import dispatching

        try:
            document = dispatching.dispatch(
                options["slug"], schedule=options["schedule"], reminder=options["reminder"], message=options["message"]
            )
        except dispatching.DispatchRefused as refused:
            raise CommandError(str(refused), returncode=1) from refused
        if options["json"]:
            self.stdout.write(json.dumps(document))
        else:
            what = (
                f"schedule {document['scheduleId']}"
                if "scheduleId" in document
                else (f"reminder {document['reminderId']}" if "reminderId" in document else "message")
            )
            self.stdout.write(f"{what}: sessions {', '.join(document['sessionIds']) or '-'}")
        if options["wait"] and not dispatching.wait(document, options["timeout"]):
            raise CommandError("not every session completed", returncode=1)

    def init(self, name: str, parent: Path) -> None:
        if not is_valid_slug(name):
            reserved = ", ".join(sorted(RESERVED_SEGMENTS))
            raise CommandError(f"{name!r} is not a usable slug: [A-Za-z0-9][A-Za-z0-9_-]*, not one of {reserved}")
        folder = parent / name
        if folder.exists():
            raise CommandError(f"{folder} already exists")
        for path in scaffold(folder):
            self.stdout.write(f"created {path}")
        self.stdout.write(f"Next: python manage.py agent validate --dir {folder}")

    def serve(self, host: str, port: int) -> None:
        # Imported here: daphne.server installs Twisted's reactor on import.
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from agent_platform.asgi import application
        from agent_platform.daphne_limits import MAX_INBOUND_FRAME as MAX_WEBSOCKET_FRAME
        from agent_platform.embedded import embedded_services

        class Daphne(Server):
            """Daphne's server, remembering why it could not listen (it only logs that, and returns)."""

            listen_failure: str | None = None

            def listen_error(self, failure: Any) -> None:
                self.listen_failure = failure.getErrorMessage()
                super().listen_error(failure)

        def listening() -> None:
            self.stdout.write(f"Listening on http://{host}:{port}/")
            self.stdout.flush()

        with embedded_services():
            slugs = list(agent_folders())
            self.stdout.write(f"Serving {len(slugs)} agent(s) from {platform_settings.AGENTS_DIR}: {', '.join(slugs)}")
            server = Daphne(
                application=application,
                endpoints=build_endpoint_description_strings(host=host, port=port),
                action_logger=None,
                # Oversized inbound WebSocket frames are refused by daphne itself (close 1009).
                websocket_max_message_size=MAX_WEBSOCKET_FRAME,
                # Called once the socket is bound, just before daphne serves.
                ready_callable=listening,
            )
            server.run()
        if server.listen_failure is not None:
            raise CommandError(f"not serving: {server.listen_failure}", returncode=1)
