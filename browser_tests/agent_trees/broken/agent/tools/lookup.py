from agents.sdk import tool

LIMIT = int("ten")  # fails at import: a diagnostic, never a crash of the server


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return q[:LIMIT]
