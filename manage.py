#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    from django.core.management import execute_from_command_line

    from agent_platform import rls

    # An operator's command works on every tenant's rows (agent_platform.rls), in any of
    # its threads; requests a command serves start with no scope of their own.
    rls.make_platform_the_process_default()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
