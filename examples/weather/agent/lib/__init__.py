"""Code shared by the weather agent's tools; ``lib/`` is never discovered."""
