"""Nightly sweep for issues nobody has touched in two weeks."""

from agents.sdk import define_schedule

schedule = define_schedule(
    cron="30 2 * * *",
    description="Nightly: find stale open issues and propose closing duplicates.",
    prompt=(
        "Sweep the open issues that have had no activity for 14 days. For each one, "
        "call find_duplicates with its title; when a closed or older issue matches with "
        "a score of 0.5 or more, propose close_issue with reason 'duplicate' (a person "
        "approves it). Leave the others open. End with a one-paragraph summary and a "
        "'Severity: <level>' line naming the highest severity among the issues swept."
    ),
)
