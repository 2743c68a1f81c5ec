from agents.sdk import tool


@tool(effect="read")
def show(text: str) -> dict:
    """Echo the text back, for the renderer to show."""
    return {"text": text, "shown": True}
