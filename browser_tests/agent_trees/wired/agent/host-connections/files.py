from agents.sdk import define_mcp_connection

files = define_mcp_connection(command="files-mcp-server", args=["--read-only"])
