"""MCP over HTTP inside the platform's ASGI app: Streamable HTTP at /mcp, legacy SSE at /sse
(+ /messages/). Requests are checked here (Host and Origin against Django's ALLOWED_HOSTS,
API key or OAuth access token -> 401) before the SDK sees them; the key (for a token: the key
that authorized it, narrowed to the token's scopes) is bound for the tool calls they carry. A
401 names the endpoint's protected-resource metadata (RFC 9728), where an MCP client finds
the authorization server (tenants/oauth).

The Streamable HTTP session manager needs a running task group. uvicorn sends lifespan
events, daphne does not, so the manager is started on the first MCP request (and stopped on
lifespan shutdown when the server sends one).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.authentication import AuthCredentials

from mcpserver.auth import bound_agent, bound_api_key
from mcpserver.server import configured_server
from mcpserver.tools import end_session
from platformcore.lib.db_threads import database_call
from tenants import streams
from tenants.auth import raw_key_from_headers
from tenants.models import ApiKey
from tenants.oauth.services import bearer_verify
from tenants.services import KEY_PREFIX
from tenants.streams import stream_slot

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
STREAMABLE_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


def is_mcp_path(path: str) -> bool:
    return path in (STREAMABLE_PATH, STREAMABLE_PATH + "/", SSE_PATH) or path.startswith(
        MESSAGES_PATH.rstrip("/")
    )


async def _error(send: Any, status: int, code: str, message: str, **headers: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message, "fields": {}}}).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    raw_headers += [(name.encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode().lower(): value.decode("latin-1") for name, value in scope["headers"]}


def host_allowed(host: str) -> bool:
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def origin_allowed(origin: str | None) -> bool:
    """Browsers send Origin; a page from another site must not drive a local server
    (DNS rebinding). No Origin (CLI clients) is fine."""
    if not origin:
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and host_allowed(parts.netloc)


def _raw_key(scope: Scope, headers: dict[str, str]) -> str | None:
    raw = raw_key_from_headers(headers.get("authorization"), headers.get("x-api-key"))
    legacy = scope["path"] == SSE_PATH or scope["path"].startswith(MESSAGES_PATH)
    if raw is None and legacy:  # EventSource cannot send headers; Memento's clients send
        # `accessKey` on the message POSTs too
        query = parse_qs(scope.get("query_string", b"").decode())
        raw = (query.get("api_key") or query.get("accessKey") or [None])[0]
        if raw is not None and not raw.startswith(KEY_PREFIX):
            return None  # OAuth access tokens travel in the header only (RFC 9700)
    return raw


def public_origin(scope: Scope, headers: dict[str, str]) -> str:
    """scheme://host as the client sees it, derived as Django derives it for the metadata
    documents (SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST), so the URLs agree."""
    scheme = scope.get("scheme", "http")
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        sent = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower())
        if sent is not None:
            scheme = "https" if sent.split(",")[0].strip() == secure_value else "http"
    host = headers.get("host", "")
    if settings.USE_X_FORWARDED_HOST and headers.get("x-forwarded-host"):
        host = headers["x-forwarded-host"].split(",")[0].strip()
    return f"{scheme}://{host}"


def _resource_path(path: str) -> str:
    return STREAMABLE_PATH if path.startswith(STREAMABLE_PATH) else SSE_PATH


def _challenge(origin: str, path: str, invalid: bool) -> str:
    """WWW-Authenticate of a 401: where the metadata is, and whether a credential was bad."""
    metadata = f"{origin}/.well-known/oauth-protected-resource{_resource_path(path)}"
    error = ', error="invalid_token"' if invalid else ""
    return f'Bearer realm="memory-platform"{error}, resource_metadata="{metadata}"'


def _principal(api_key: ApiKey) -> tuple[AuthCredentials, AuthenticatedUser]:
    """The SDK's view of the caller: sessions are bound to the key that opened them."""
    token = AccessToken(token=api_key.prefix, client_id=api_key.prefix, scopes=list(api_key.scopes))
    return AuthCredentials(list(api_key.scopes)), AuthenticatedUser(token)


class McpHttpApp:
    """The MCP endpoints of one server, guarded."""

    def __init__(self, server: MCPServer) -> None:
        # Host/Origin are checked above with Django's settings; the SDK's own check is off.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.streamable = server.streamable_http_app(
            streamable_http_path=STREAMABLE_PATH, transport_security=security
        )
        self.sse = server.sse_app(
            sse_path=SSE_PATH, message_path=MESSAGES_PATH, transport_security=security
        )
        self.session_manager = server.session_manager
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        headers = _headers(scope)
        if not host_allowed(headers.get("host", "")):
            await _error(send, 400, "bad_request", "Invalid Host header")
            return
        if not origin_allowed(headers.get("origin")):
            await _error(send, 403, "forbidden", "Origin not allowed")
            return
        raw_key = _raw_key(scope, headers)
        origin = public_origin(scope, headers)
        resource = origin + _resource_path(scope["path"])
        api_key = await database_call(bearer_verify, raw_key, resource) if raw_key else None
        if api_key is None:
            message = (
                "Invalid, revoked or expired API key or access token."
                if raw_key
                else "API key or OAuth access token required."
            )
            auth = _challenge(origin, scope["path"], invalid=bool(raw_key))
            await _error(send, 401, "not_authenticated", message, **{"www-authenticate": auth})
            return
        scope["auth"], scope["user"] = _principal(api_key)
        await self.start()
        if scope["method"] != "GET" or scope["path"].startswith(MESSAGES_PATH.rstrip("/")):
            await self.serve(scope, receive, send, api_key)
            session = headers.get("mcp-session-id")
            if scope["method"] == "DELETE" and session:  # the client ended its session
                await database_call(end_session, api_key, session)
            return
        async with stream_slot(api_key) as slot:  # a stream: under the key's cap of streams
            if slot is None:
                retry = {"retry-after": str(streams.RETRY_AFTER_SECONDS)}
                message = streams.refusal_message(api_key)
                await _error(send, 429, "too_many_streams", message, **retry)
                return
            await self.serve(scope, receive, send, api_key)

    async def serve(self, scope: Scope, receive: Any, send: Any, api_key: ApiKey) -> None:
        agent = _headers(scope).get("x-agent-id")
        with bound_api_key(api_key), bound_agent(agent):
            if scope["path"].startswith(STREAMABLE_PATH):
                scope["path"] = STREAMABLE_PATH
                await self.streamable(scope, receive, send)
            else:
                await self.sse(scope, receive, send)

    async def start(self) -> None:
        """Run the session manager (once) in a task of its own on this event loop."""
        if self._ready is None:
            self._ready = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run_manager())
        await self._ready.wait()
        if self._failure is not None:
            raise RuntimeError("MCP session manager failed to start") from self._failure

    async def _run_manager(self) -> None:
        assert self._ready is not None
        try:
            async with self.session_manager.run():
                self._ready.set()
                await asyncio.Future()  # until cancelled at shutdown
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surface it to the waiting requests
            logger.exception("MCP session manager stopped")
            self._failure = exc
            self._ready.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def with_mcp(app: Any) -> Any:
    """Wrap the platform's ASGI app: MCP paths go to the MCP server, lifespan is answered
    here (Channels' router does not speak it), everything else goes to `app`."""
    mcp_app = McpHttpApp(configured_server())

    async def application(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(mcp_app, receive, send)
        elif scope["type"] == "http" and is_mcp_path(scope["path"]):
            await mcp_app(scope, receive, send)
        else:
            await app(scope, receive, send)

    application.mcp_app = mcp_app  # type: ignore[attr-defined]
    return application


async def _lifespan(mcp_app: McpHttpApp, receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await mcp_app.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return
