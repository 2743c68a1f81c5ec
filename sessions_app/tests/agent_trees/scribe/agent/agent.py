from agents.sdk import define_agent, temp_fs

# No model named: AGENT_DEFAULT_MODEL decides (the test settings keep it on `test`).
agent = define_agent(root=temp_fs({"/notes/todo.md": "buy milk\ncall mum\n"}))
