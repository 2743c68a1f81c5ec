from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    """Sessions, their event log, turns and everything a turn produces or parks."""

    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        # Register the Celery tasks in every process (not only in workers, where Celery
        # imports them itself): the core sends them by name through the app's registry.
        from sessions_app import dispatch, tasks  # noqa: F401
        from sessions_app.records.artifacts import SessionArtifacts

        dispatch.artifacts_for = SessionArtifacts

        from corsheaders.signals import check_request_enabled

        from sessions_app.cors import cors_allowed

        check_request_enabled.connect(cors_allowed, dispatch_uid="sessions_app.cors")
