"""``manage.py runserver``: daphne's development server (auto-reload and all) and, in the
embedded form, the Celery worker and beat threads that ``agent serve`` runs, so the
turns it accepts run instead of waiting for a worker that does not exist.

It overrides daphne's ``runserver`` because its app comes before ``daphne`` in
``INSTALLED_APPS`` (the first app's command wins).
"""

from __future__ import annotations

from typing import Any

from daphne.management.commands.runserver import Command as DaphneRunserver

from agent_platform.embedded import embedded_services


class Command(DaphneRunserver):
    help = DaphneRunserver.help + " In the embedded form, also runs the Celery worker and beat threads."

    def inner_run(self, *args: Any, **options: Any) -> None:
        # inner_run is the serving process's (the auto-reloader's child): a reload starts
        # a new process, with new threads.
        with embedded_services():
            super().inner_run(*args, **options)
