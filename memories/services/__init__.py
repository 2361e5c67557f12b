"""Writes to memories. Every entry point (REST, MCP, commands, jobs) calls these."""
