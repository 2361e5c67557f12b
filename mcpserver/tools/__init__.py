"""MCP tools: thin async wrappers that run one service or selector call for the caller's project.

`call()` is the only bridge from the SDK's event loop to Django: it checks the key's scope,
runs the function on one of MEMORY_MCP_THREADS threads (the ORM is synchronous; a slow tool
call, an LLM extraction say, holds one thread, not every tenant's calls) and turns service
errors into tool errors (`isError` results) that name the offending fields.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import OperationalError, transaction
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mcpserver.auth import actor_for, namespace_of, require_key
from memories.services.layers import session_close
from platformcore.db.router import mark_written, note_key
from platformcore.lib.db_threads import executor_with_connections, with_connection
from platformcore.lib.errors import ServiceError
from platformcore.lib.project_scope import project_scope
from platformcore.lib.timeouts import statement_timed_out, statement_timeout_message
from platformcore.metrics import mcp_tool_call, tool_name
from tenants.models import ApiKey
from tenants.namespaces import reading_as
from tenants.services import api_key_still_usable
from tenants.throttling import rate_limit_hit

T = TypeVar("T")
logger = logging.getLogger(__name__)
_executors: dict[int, ThreadPoolExecutor] = {}  # by process
_lock = threading.Lock()


def error_text(exc: ServiceError) -> str:
    text = f"{exc.code}: {exc.message}"
    if exc.fields:
        text += f" fields={json.dumps(exc.fields, sort_keys=True)}"
    return text


async def call(scope: str, fn: Callable[[ApiKey], T], *, rate: str | None = None) -> T:
    """Run `fn(api_key)` for a caller holding `scope`; ServiceError becomes a ToolError. The
    call counts against the key's rate limit `rate` (default: the limit named like `scope`)."""
    with mcp_tool_call(tool_name(fn)):  # counted by tool and outcome
        return await _call(scope, fn, rate or scope)


async def _call(scope: str, fn: Callable[[ApiKey], T], rate: str) -> T:
    api_key = require_key(scope)

    def run() -> T:
        note_key(api_key.pk)  # the replica router's writer (reads stay on the primary after)
        _check_still_usable(api_key)
        refusal = rate_limit_hit(api_key=api_key, scope=rate)
        if refusal is not None:
            raise ToolError(f"rate_limited: {refusal.message_with_retry}")
        try:
            with transaction.atomic():  # one tool call, one transaction: all or nothing
                result = fn(api_key)
            if scope != "read" and settings.MEMORY_REPLICA_ALIASES:
                # committed: the key's reads (REST too) stay on the primary a while, as after
                # a REST write (platformcore.db.router, read-your-own-writes)
                mark_written(api_key.pk)
            return result
        except ServiceError as exc:
            raise ToolError(error_text(exc)) from exc
        except OperationalError as exc:
            if not statement_timed_out(exc):
                raise
            raise ToolError(f"statement_timeout: {statement_timeout_message()}") from exc

    def run_with_connection() -> T:
        # the database shows this project's rows only; the selectors, this agent's namespace
        with project_scope(api_key.project_id), reading_as(namespace_of(api_key)):
            return with_connection(run)

    return await sync_to_async(run_with_connection, thread_sensitive=False, executor=_executor())()


_checked: dict[int, float] = {}  # key id -> when it was last found usable (monotonic)


def _check_still_usable(api_key: ApiKey) -> None:
    """A stdio server keeps its key for the process's life: check it again every
    MEMORY_KEY_RECHECK_SECONDS, and refuse every call once it is revoked or expired."""
    now = time.monotonic()
    if now - _checked.setdefault(api_key.pk, now) < settings.MEMORY_KEY_RECHECK_SECONDS:
        return
    if not api_key_still_usable(api_key.pk):
        raise ToolError("unauthenticated: this API key was revoked or has expired")
    _checked[api_key.pk] = now


def _executor() -> ThreadPoolExecutor:
    with _lock:
        pid = os.getpid()
        if pid not in _executors:
            _executors.clear()
            _executors[pid] = executor_with_connections(
                settings.MEMORY_MCP_THREADS, "mcp", serves_requests=True
            )
        return _executors[pid]


def session_id_of(ctx: Context | None) -> str:
    """The caller's session, under which a session's working memory is stored as a run: the
    `Mcp-Session-Id` of a Streamable HTTP session, else the process's own (a stdio server has
    one client for its whole life). The protocol's newer, stateless versions carry no session
    at all: a client there names its session (`sessionId`)."""
    headers = (ctx.headers if ctx is not None else None) or {}
    return str(headers.get("mcp-session-id") or _PROCESS_SESSION)


_PROCESS_SESSION = f"mcp-{uuid.uuid4().hex}"


def end_session(api_key: ApiKey, session_id: str | None = None) -> None:
    """An MCP session ended (a Streamable HTTP session's DELETE, the stdio server's exit): its
    working memory leaves, but for what the promotion rule keeps (memories/services/layers.py).
    A failure is logged, never raised: the session is over either way."""
    try:
        with project_scope(api_key.project_id):
            session_close(
                project=api_key.project,
                session_id=session_id or _PROCESS_SESSION,
                actor=actor_for(api_key),
            )
    except Exception:
        logger.exception("could not close the working memory of MCP session %s", session_id)


def page_body(page: Any, render: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """A page of a list tool: its items rendered, the total and the window."""
    return {
        "results": [render(item) for item in page.results],
        "count": page.count,
        "limit": page.limit,
        "offset": page.offset,
    }
