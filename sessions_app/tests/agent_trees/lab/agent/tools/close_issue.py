from agents.sdk import tool


@tool(effect="write", needs_approval=True)
def close_issue(issue: int) -> str:
    """Close an issue (needs a person's approval)."""
    return f"closed #{issue}"
