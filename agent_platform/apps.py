from django.apps import AppConfig


class AgentPlatformConfig(AppConfig):
    """Tenancy and auth: tenants, principals and API tokens."""

    name = "agent_platform"
    verbose_name = "Tenants and access"

    def ready(self) -> None:
        from agent_platform import schema, signals  # noqa: F401  (register the schema extension, post_migrate)
