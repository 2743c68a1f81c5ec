from django.apps import AppConfig


class DevServerConfig(AppConfig):
    """``manage.py runserver`` with the embedded worker (see the package docstring)."""

    name = "agent_platform.devserver"
    label = "devserver"
    verbose_name = "Development server"
