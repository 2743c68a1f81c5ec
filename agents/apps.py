from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Agent registry, authoring SDK, discovery and turn runtime."""

    name = "agents"
    verbose_name = "Agents"
