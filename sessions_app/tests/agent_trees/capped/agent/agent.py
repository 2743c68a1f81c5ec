from agents.sdk import define_agent

agent = define_agent(max_running_turns=1, description="One turn at a time across all sessions.")
