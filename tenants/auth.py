"""REST authentication by API key: `Authorization: Bearer <key>` (or `Token <key>`, as mem0's
clients send it) or `X-API-Key: <key>`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memoryplatform.lib.rls import enter_project
from tenants.models import ApiKey, Project
from tenants.services import api_key_verify


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
        api_key = api_key_verify(raw_key)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
        enter_project(api_key.project_id)  # the database shows this project's rows only
        return ApiKeyPrincipal(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memory-platform"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """How the API docs describe the key: `Authorization: Bearer <key>` (or `X-API-Key`)."""

    target_class = "tenants.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A project API key; `X-API-Key: <key>` is accepted too.",
        }
