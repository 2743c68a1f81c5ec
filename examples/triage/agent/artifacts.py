"""Artifacts the triage agent keeps: a report per triaged issue for 30 days, and each
morning digest (tagged by ``result.py`` when the digest schedule's run ends) for 90."""

from agents.sdk import define_artifacts

artifacts = define_artifacts(
    kinds={
        "triage-report": "A Markdown report: severity, component, duplicates and the reasoning behind them.",
        "digest": "The weekday-morning digest of the issues triaged since the previous one.",
    },
    tag_artifact=True,
    retention={"triage-report": 30, "digest": 90},
)
