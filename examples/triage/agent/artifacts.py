"""Artifacts the triage agent keeps: one report per triaged issue, for 30 days."""

from agents.sdk import define_artifacts

artifacts = define_artifacts(
    kinds={"triage-report": "A Markdown report: severity, component, duplicates and the reasoning behind them."},
    tag_artifact=True,
    retention=30,
)
