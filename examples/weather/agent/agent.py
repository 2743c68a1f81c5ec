"""The weather agent: current conditions and short forecasts from a fixed table."""

from agents.sdk import define_agent

# No model named: AGENT_DEFAULT_MODEL decides (`test`, the offline deterministic model, unless set).
agent = define_agent(max_running_turns=4)
