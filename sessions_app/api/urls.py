from django.urls import path, re_path

from sessions_app.api import (
    a2a_views,
    ab_views,
    artifact_views,
    channel_views,
    eval_views,
    mcp_views,
    reminder_views,
    schedule_views,
    stream_views,
    tool_views,
    views,
)
from sessions_app.api.ops_views import AgentLogsView

urlpatterns = [
    path("sessions", views.SessionListView.as_view(), name="session-list"),
    # GET describes a tool (agents' view); POST runs it, optionally bound to a session.
    path("tools/<str:tool_name>", tool_views.ToolView.as_view(), name="agent-tool"),
    path("session", views.SessionCreateView.as_view(), name="session-create"),
    path("session/<str:session_id>", views.SessionFollowUpView.as_view(), name="session-detail"),
    path("session/<str:session_id>/stop", views.SessionStopView.as_view(), name="session-stop"),
    path("session/<str:session_id>/approvals/<str:call_id>", views.ApprovalView.as_view(), name="session-approval"),
    path("session/<str:session_id>/fork", views.SessionForkView.as_view(), name="session-fork"),
    path("session/<str:session_id>/events", views.SessionEventsView.as_view(), name="session-events"),
    path("session/<str:session_id>/stream", stream_views.session_stream, name="session-stream"),
    # The agent as an MCP server (stateless streamable HTTP: POST only).
    path("mcp", mcp_views.McpView.as_view(), name="agent-mcp"),
    path("mcp/tools", mcp_views.McpToolsView.as_view(), name="agent-mcp-tools"),
    path("logs", AgentLogsView.as_view(), name="agent-logs"),
    # The agent as an A2A server (JSON-RPC; its card is at /<slug>/.well-known/agent-card.json).
    path("a2a", a2a_views.A2AView.as_view(), name="agent-a2a"),
    # Authored routes: the rest of the path is the route's own (matched exactly, "" included).
    re_path(
        r"^channels/(?P<channel_name>[^/]+)(?P<route_path>/.*)?$",
        channel_views.channel_route,
        name="agent-channel-route",
    ),
    path("abs", ab_views.AbsView.as_view(), name="agent-abs"),
    path("artifacts", artifact_views.ArtifactListView.as_view(), name="artifact-list"),
    path("dev/schedules/<str:schedule_id>", schedule_views.DevScheduleRunView.as_view(), name="dev-schedule-run"),
    path("artifacts/<str:artifact_id>/content", artifact_views.ArtifactContentView.as_view(), name="artifact-content"),
    # Evals: session-API auth, in every mode.
    path("dev/evals", eval_views.EvalListView.as_view(), name="dev-eval-list"),
    path("dev/evals/runs", eval_views.EvalRunsView.as_view(), name="dev-eval-runs"),
    path("dev/evals/runs/<str:run_id>", eval_views.EvalRunView.as_view(), name="dev-eval-run"),
    path("dev/evals/runs/<str:run_id>/cancel", eval_views.EvalRunCancelView.as_view(), name="dev-eval-run-cancel"),
    # Dev mode only (404 otherwise): reminders fired by hand.
    path("dev/reminders", reminder_views.DevReminderListView.as_view(), name="dev-reminder-list"),
    path("dev/reminders/<str:reminder_id>", reminder_views.DevReminderFireView.as_view(), name="dev-reminder-fire"),
]
