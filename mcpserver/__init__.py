"""The MCP server: memory tools for AI assistants over stdio, Streamable HTTP and legacy SSE."""
