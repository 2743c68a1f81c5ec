import os

from agents.sdk import define_agent

# Discovery runs in a child process: what a tree prints, even to fd 1, is not its answer.
print('{"diagnostics": [{"severity": "error"}]}')
os.write(1, b"not json\n")
agent = define_agent(description="prints while imported")
