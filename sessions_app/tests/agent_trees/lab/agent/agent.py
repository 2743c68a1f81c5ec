from agents.sdk import define_agent

# Its own retention (the retention test ages sessions past and short of it).
agent = define_agent(retention_days=30)
