from agents.sdk import define_agent

# The agent names its model: the evals config's model is not for it.
agent = define_agent(model="test")
