from agents.sdk import define_agent, temp_fs

# A root: the file tools see memory/ as /memory (read-only).
agent = define_agent(description="Keeps a journal of its sessions.", root=temp_fs())
