"""Code shared by the triage agent's modules; ``lib/`` is never discovered."""
