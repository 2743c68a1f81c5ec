"""Row-level security on every tenant-owned table (``agent_platform.rls_sql``).

A migration that adds a tenant-owned table adds its policy the same way, e.g.
``rls_sql.tenant_column("sessions_app_newthing")``; ``agent_platform/tests/test_rls.py``
fails for a table without one.
"""

from django.db import migrations

from agent_platform import rls_sql


class Migration(migrations.Migration):
    dependencies = [
        ("agent_platform", "0005_tenant_quotas_and_budget"),
        ("agents", "0003_agent_secrets"),
        ("sessions_app", "0016_request_ids_on_turns_and_log_lines"),
    ]

    operations = [
        rls_sql.functions(),
        # Their own tenant column.
        rls_sql.tenant_column("agent_platform_principal"),
        rls_sql.tenant_column("sessions_app_session"),
        rls_sql.tenant_column("sessions_app_artifact"),
        rls_sql.tenant_column("sessions_app_kventry"),
        rls_sql.tenant_column("sessions_app_storedfile"),
        rls_sql.tenant_column("sessions_app_evalrun"),
        rls_sql.tenant_column("sessions_app_logline"),
        rls_sql.tenant_column("sessions_app_schedulefire"),
        rls_sql.tenant_column("sessions_app_webhooksubscription"),
        rls_sql.tenant_column("agents_agentsecret"),
        # Shared when the tenant is empty.
        rls_sql.shared_or_tenant("agents_agent"),
        # Through the row they belong to.
        rls_sql.through("agent_platform_apitoken", "principal_id", "agent_platform_principal"),
        rls_sql.through("sessions_app_idempotencyrecord", "principal_id", "agent_platform_principal"),
        rls_sql.through("sessions_app_event", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_turn", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_approval", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_abassignment", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_reminder", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_channelstate", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_webhookdelivery", "session_id", "sessions_app_session"),
        rls_sql.through("sessions_app_inbounddelivery", "agent_id", "agents_agent"),
        rls_sql.through("agents_revision", "agent_id", "agents_agent"),
    ]
