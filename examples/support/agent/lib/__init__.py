"""Code shared by the support agent, its subagent and its mount overrides; never discovered."""
