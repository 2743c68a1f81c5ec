"""The triage agent: severity, component and duplicates for incoming issue reports."""

from agents.sdk import define_agent

agent = define_agent(max_running_turns=8)
