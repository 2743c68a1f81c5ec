from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    """Sessions, their event log, turns and everything a turn produces or parks."""

    name = "sessions_app"
    verbose_name = "Sessions"
