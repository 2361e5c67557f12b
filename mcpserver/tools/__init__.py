"""MCP tools: thin async wrappers that run one service or selector call for the caller's project.

`call()` is the only bridge from the SDK's event loop to Django: it checks the key's scope,
runs the function on one of MEMORY_MCP_THREADS threads (the ORM is synchronous; a slow tool
call, an LLM extraction say, holds one thread, not every tenant's calls) and turns service
errors into tool errors (`isError` results) that name the offending fields.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mcpserver.auth import require_key
from memoryplatform.lib.db_threads import executor_with_connections, with_connection
from memoryplatform.lib.errors import ServiceError
from tenants.models import ApiKey

T = TypeVar("T")
_executors: dict[int, ThreadPoolExecutor] = {}  # by process
_lock = threading.Lock()


def error_text(exc: ServiceError) -> str:
    text = f"{exc.code}: {exc.message}"
    if exc.fields:
        text += f" fields={json.dumps(exc.fields, sort_keys=True)}"
    return text


async def call(scope: str, fn: Callable[[ApiKey], T]) -> T:
    """Run `fn(api_key)` for a caller holding `scope`; ServiceError becomes a ToolError."""
    api_key = require_key(scope)

    def run() -> T:
        try:
            with transaction.atomic():  # one tool call, one transaction: all or nothing
                return fn(api_key)
        except ServiceError as exc:
            raise ToolError(error_text(exc)) from exc

    def run_with_connection() -> T:
        return with_connection(run)

    return await sync_to_async(run_with_connection, thread_sensitive=False, executor=_executor())()


def _executor() -> ThreadPoolExecutor:
    with _lock:
        pid = os.getpid()
        if pid not in _executors:
            _executors.clear()
            _executors[pid] = executor_with_connections(settings.MEMORY_MCP_THREADS, "mcp")
        return _executors[pid]


def session_id_of(ctx: Context | None) -> str:
    """The caller's session, under which a session's working memory is stored as a run: the
    `Mcp-Session-Id` of a Streamable HTTP session, else the process's own (a stdio server has
    one client for its whole life). The protocol's newer, stateless versions carry no session
    at all: a client there names its session (`sessionId`)."""
    headers = (ctx.headers if ctx is not None else None) or {}
    return str(headers.get("mcp-session-id") or _PROCESS_SESSION)


_PROCESS_SESSION = f"mcp-{uuid.uuid4().hex}"
