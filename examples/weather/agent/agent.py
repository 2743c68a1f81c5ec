"""The weather agent: current conditions and short forecasts from a fixed table."""

from agents.sdk import define_agent

# "test" is the deterministic offline model, so this example runs without credentials.
agent = define_agent(model="test", max_running_turns=4)
