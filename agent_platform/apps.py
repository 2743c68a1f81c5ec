from django.apps import AppConfig


class AgentPlatformConfig(AppConfig):
    """Tenancy and auth: tenants, principals and API tokens."""

    name = "agent_platform"
    verbose_name = "Tenants and access"

    def ready(self) -> None:
        # The schema extension, post_migrate, and forgetting remembered tokens when one changes.
        from agent_platform import auth, schema, signals  # noqa: F401
