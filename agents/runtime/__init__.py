"""The turn runtime: prompt assembly, the model stream, tool execution, approvals,
subagents and the result commit, each in a module of its own."""
