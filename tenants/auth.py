"""REST authentication by API key: `Authorization: Bearer <key>` (or `Token <key>`, as mem0's
clients send it) or `X-API-Key: <key>`. An OAuth access token (tenants/oauth) is accepted
in the same places: it stands for the API key that authorized it, narrowed to its scopes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memoryplatform.db.router import note_key
from memoryplatform.lib.rls import enter_project
from tenants.models import ApiKey, Project
from tenants.oauth.services import bearer_verify


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


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        raw_key = raw_key_from_headers(
            request.META.get("HTTP_AUTHORIZATION"), request.META.get("HTTP_X_API_KEY")
        )
        if raw_key is None:
            return None
        api_key = bearer_verify(raw_key, request.build_absolute_uri(request.path))
        if api_key is None:
            raise exceptions.AuthenticationFailed(
                "Invalid, revoked or expired API key or access token."
            )
        enter_project(api_key.project_id)  # the database shows this project's rows only
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
