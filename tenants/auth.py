"""REST authentication by API key: `Authorization: Bearer <key>` (or `Token <key>`, as mem0's
clients send it) or `X-API-Key: <key>`. An OAuth access token (tenants/oauth) is accepted
in the same places: it stands for the API key that authorized it, narrowed to its scopes.
The live feeds (websocket and SSE) take the same credentials through `StreamCredential`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from platformcore.db.router import note_key
from platformcore.lib.project_scope import enter_project
from platformcore.lib.stages import stage
from platformcore.lib.work_budget import note_credential
from tenants.models import ApiKey, Project
from tenants.oauth.services import bearer_verify
from tenants.services import KEY_PREFIX, api_key_still_usable


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """What `request.user` is for a key-authenticated request."""

    api_key: ApiKey

    @property
    def project(self) -> Project:
        return self.api_key.project

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __str__(self) -> str:
        return f"key:{self.api_key.prefix}"


def raw_key_from_headers(authorization: str | None, x_api_key: str | None) -> str | None:
    if x_api_key:
        return x_api_key.strip()
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() in ("bearer", "token") and token.strip():  # Token: mem0's clients
            return token.strip()
    return None


@dataclass(frozen=True)
class StreamCredential:
    """A long-lived stream's bearer credential (an API key or an OAuth access token) and the
    URL it was presented to (a token is accepted only where it is meant for, RFC 8707)."""

    raw: str
    resource: str

    def verify(self) -> ApiKey | None:
        """The key it stands for (a token's narrowed to its scopes), or None."""
        return bearer_verify(self.raw, self.resource)

    def still_usable(self, api_key: ApiKey) -> bool:
        """Asked every MEMORY_KEY_RECHECK_SECONDS: the key neither revoked nor expired, and a
        token besides neither revoked nor expired."""
        if self.raw.startswith(KEY_PREFIX):
            return api_key_still_usable(api_key.pk)
        return self.verify() is not None


def stream_credential(
    *, authorization: str | None, x_api_key: str | None, query_key: str | None, resource: str
) -> StreamCredential | None:
    """A live feed's credential: from the headers, else `?api_key=` (for browsers, which send
    no header), and there an API key only: a token in a URL ends up in access logs."""
    raw = raw_key_from_headers(authorization, x_api_key)
    if raw is None and query_key and query_key.strip().startswith(KEY_PREFIX):
        raw = query_key.strip()
    return StreamCredential(raw, resource) if raw else None


def asgi_stream_credential(scope: dict[str, Any]) -> StreamCredential | None:
    """`stream_credential` of an ASGI connection (the websocket feed): its headers, its
    `?api_key=`, and its http(s) URL as the resource (a websocket's `ws://` read as
    `http://`)."""
    headers = {name.decode().lower(): value.decode() for name, value in scope.get("headers", [])}
    query = parse_qs(scope.get("query_string", b"").decode())
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    server = scope.get("server") or ("localhost", None)
    host = headers.get("host") or (f"{server[0]}:{server[1]}" if server[1] else server[0])
    return stream_credential(
        authorization=headers.get("authorization"),
        x_api_key=headers.get("x-api-key"),
        query_key=(query.get("api_key") or [None])[0],
        resource=f"{scheme}://{host}{scope.get('path', '/')}",
    )


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        raw_key = raw_key_from_headers(
            request.META.get("HTTP_AUTHORIZATION"), request.META.get("HTTP_X_API_KEY")
        )
        if raw_key is None:
            return None
        with stage("auth"):
            api_key = bearer_verify(raw_key, request.build_absolute_uri(request.path))
        if api_key is None:
            raise exceptions.AuthenticationFailed(
                "Invalid, revoked or expired API key or access token."
            )
        enter_project(api_key.project_id)  # the database shows this project's rows only
        note_credential(raw_key, api_key.project_id)  # its heavy requests: its project's budget
        note_key(api_key.pk)  # its writes keep its reads on the primary a while (replicas)
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        metadata = request.build_absolute_uri("/.well-known/oauth-protected-resource")
        return f'Bearer realm="memory-platform", resource_metadata="{metadata}"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """How the API docs describe the key: `Authorization: Bearer <key>` (or `X-API-Key`)."""

    target_class = "tenants.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A project API key, or an OAuth access token obtained with one "
            "(docs/security.md); `X-API-Key: <key>` is accepted too.",
        }
