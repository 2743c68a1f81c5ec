from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Agent registry, authoring SDK, discovery and turn runtime."""

    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents import checks  # noqa: F401  registers the agent diagnostics as system checks
