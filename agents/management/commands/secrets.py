"""``python manage.py secrets ...``: agents' stored secrets, for operators (docs/secrets.md).

``set SLUG NAME`` reads the value from standard input (never an argument: it would stay in
the shell's history and the process list); ``list SLUG`` prints names and times; ``delete
SLUG NAME``; ``rotate`` re-encrypts every stored secret under the first key of
``PLATFORM_SECRETS_KEY``; ``generate-key`` prints a new key.
"""

from __future__ import annotations

import sys
from typing import Any

from cryptography.fernet import Fernet
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import secrets
from agents.models import Agent, AgentSecret
from agents.registry import get_agent


class Command(BaseCommand):
    help = "Agents' stored secrets: set, list, delete, rotate the encryption key, generate a key."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        put = actions.add_parser("set", help="Set SLUG's secret NAME to the value read from standard input.")
        put.add_argument("slug")
        put.add_argument("name")
        listing = actions.add_parser("list", help="SLUG's secrets: names and when each was set.")
        listing.add_argument("slug")
        delete = actions.add_parser("delete", help="Delete SLUG's secret NAME.")
        delete.add_argument("slug")
        delete.add_argument("name")
        actions.add_parser("rotate", help="Re-encrypt every stored secret under the first PLATFORM_SECRETS_KEY key.")
        actions.add_parser("generate-key", help="Print a new key for PLATFORM_SECRETS_KEY.")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "generate-key":
            self.stdout.write(Fernet.generate_key().decode())
        elif action == "rotate":
            rotated, unreadable = secrets.rotate()
            self.stdout.write(f"Re-encrypted {rotated} secret(s) under the first key.")
            if unreadable:
                raise CommandError(f"{unreadable} secret(s) no configured key decrypts were left as they are.")
        elif action == "list":
            for row in AgentSecret.objects.filter(agent=self._agent(options["slug"])):
                self.stdout.write(f"{row.name}\t{row.updated_at.isoformat()}")
        elif action == "delete":
            try:
                secrets.delete_secret(self._agent(options["slug"]), options["name"])
            except secrets.SecretNotFound as missing:
                raise CommandError(str(missing)) from None
            self.stdout.write(f"Deleted {options['name']}.")
        else:
            self._set(options["slug"], options["name"])

    def _agent(self, slug: str) -> Agent:
        agent = get_agent(slug)
        if agent is None:
            raise CommandError(f"No agent {slug!r} is served.")
        return agent

    def _set(self, slug: str, name: str) -> None:
        agent = self._agent(slug)
        value = sys.stdin.read().removesuffix("\n")
        try:
            _, created = secrets.set_secret(agent, name, value)
        except secrets.InvalidSecret as invalid:
            raise CommandError(str(invalid)) from None
        self.stdout.write(f"{'Set' if created else 'Replaced'} {name} of {agent.slug}.")
