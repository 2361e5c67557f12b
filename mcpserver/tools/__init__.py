"""MCP tools: thin async wrappers that run one service or selector call for the caller's project.

`call()` is the only bridge from the SDK's event loop to Django: it checks the key's scope,
runs the function in Django's thread-sensitive worker (the ORM is synchronous) and turns
service errors into tool errors (`isError` results) that name the offending fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections, transaction
from mcp.server.mcpserver.exceptions import ToolError

from mcpserver.auth import require_key
from memoryplatform.lib.errors import ServiceError
from tenants.models import ApiKey

T = TypeVar("T")


def error_text(exc: ServiceError) -> str:
    text = f"{exc.code}: {exc.message}"
    if exc.fields:
        text += f" fields={json.dumps(exc.fields, sort_keys=True)}"
    return text


async def call(scope: str, fn: Callable[[ApiKey], T]) -> T:
    """Run `fn(api_key)` for a caller holding `scope`; ServiceError becomes a ToolError."""
    api_key = require_key(scope)

    def run() -> T:
        close_old_connections()  # drop a connection the server closed while we idled
        try:
            with transaction.atomic():  # one tool call, one transaction: all or nothing
                return fn(api_key)
        except ServiceError as exc:
            raise ToolError(error_text(exc)) from exc

    return await sync_to_async(run, thread_sensitive=True)()
