"""Records a session leaves beside its event log (artifacts, A/B assignments, retention)."""
