"""`python manage.py mcp`: serve the MCP tools over stdio for one API key's project.

stdout belongs to the protocol: logs go to stderr, and the SDK points fd 1 at stderr while
serving so stray prints (progress bars, C libraries) cannot corrupt the stream.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcpserver.auth import bind_agent, bind_api_key
from mcpserver.server import build_server
from mcpserver.tools import end_session
from memories.embeddings import warm_up
from tenants.services import api_key_verify


class Command(BaseCommand):
    help = "Serve the memory tools over MCP stdio (for Claude Desktop, Claude Code, Cursor...)."
    requires_system_checks: list[str] = []  # checks print; stdout is the protocol's

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--api-key", help="API key (default: $MEMORY_API_KEY)")
        parser.add_argument(
            "--profile",
            choices=["standard", "sqlnative", "memento", "aimemory", "kg"],
            help="tool names to expose (default: $MEMORY_MCP_PROFILE or standard)",
        )
        parser.add_argument(
            "--agent-id",
            help="the agent this server acts as where a tool names none (agent namespaces; "
            "default: $MEMORY_AGENT_ID)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        raw_key = options["api_key"] or os.environ.get("MEMORY_API_KEY", "")
        if not raw_key:
            raise CommandError("give an API key with --api-key or MEMORY_API_KEY")
        api_key = api_key_verify(raw_key.strip())
        if api_key is None:
            raise CommandError("invalid, revoked or expired API key")
        bind_api_key(api_key)
        bind_agent(options["agent_id"] or os.environ.get("MEMORY_AGENT_ID"))
        warm_up()  # the model loads while the client connects, not on its first search
        server = build_server(options["profile"] or settings.MEMORY_MCP_PROFILE)
        self.stderr.write(f"MCP stdio server for project {api_key.project.slug!r}")
        try:
            anyio.run(server.run_stdio_async)
        finally:  # the client went away: this session's working memory leaves with it
            end_session(api_key)
