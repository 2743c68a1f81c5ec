from django.apps import AppConfig


class ExtensionsAppConfig(AppConfig):
    """Extension and plugin mounts, and installed extension packages."""

    name = "extensions_app"
    verbose_name = "Extensions"
