from agents.sdk import define_mcp_connection

search = define_mcp_connection(url="http://127.0.0.1:9/mcp", description="Search over streamable HTTP.")
