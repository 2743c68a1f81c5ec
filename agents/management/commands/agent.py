"""``python manage.py agent <subcommand>``: the agent CLI (DESIGN.md §7)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from agent_platform.conf import platform_settings
from agents.registry import agent_folders


class Command(BaseCommand):
    help = "The agent CLI: serve the platform."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        serve = actions.add_parser(
            "serve",
            help="Serve every agent in AGENTS_DIR with daphne; in the embedded form also run "
            "the Celery worker and beat as threads of this process.",
        )
        serve.add_argument("--host", default="127.0.0.1")
        serve.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "serve":
            self.serve(options["host"], options["port"])

    def serve(self, host: str, port: int) -> None:
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from agent_platform.asgi import application
        from agent_platform.celery import app

        services = None
        if platform_settings.EMBEDDED_WORKER:
            from agent_platform.embedded import EmbeddedServices

            services = EmbeddedServices(app, platform_settings.EMBEDDED_WORKER_THREADS)
            services.start()
        slugs = list(agent_folders())
        self.stdout.write(f"Serving {len(slugs)} agent(s) from {platform_settings.AGENTS_DIR}: {', '.join(slugs)}")
        self.stdout.write(f"Listening on http://{host}:{port}/")
        try:
            Server(
                application=application,
                endpoints=build_endpoint_description_strings(host=host, port=port),
                action_logger=None,
            ).run()
        finally:
            if services is not None:
                services.stop()
