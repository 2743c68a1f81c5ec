"""The support agent: orders, shipping and returns for a small online shop."""

from agents.sdk import define_agent

agent = define_agent(max_running_turns=16)
