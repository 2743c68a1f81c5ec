from agents.sdk import define_agent

# No instructions.md beside this file: the tree has an error and the agent is not served.
agent = define_agent(description="An agent whose tree has errors.")
