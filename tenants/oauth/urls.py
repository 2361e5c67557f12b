"""The authorization server and the protected-resource metadata, at the origin's root.

Names follow django-oauth-toolkit's (namespace `oauth2_provider`) so its metadata documents
find the endpoints. The protected-resource document exists for the origin (every endpoint,
REST included) and, in RFC 9728's path form, for each MCP endpoint."""

from __future__ import annotations

from django.urls import path, re_path
from oauth2_provider import views as toolkit

from tenants.oauth.views import ConsentView, RegistrationView, TokenView

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        toolkit.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource",
        toolkit.OAuthProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/(?P<resource_path>mcp|sse)$",
        toolkit.OAuthProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata-path",
    ),
    path("oauth/authorize", ConsentView.as_view(), name="authorize"),
    path("oauth/token", TokenView.as_view(), name="token"),
    path("oauth/revoke", toolkit.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register", RegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>",
        toolkit.DynamicClientRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
    # where clients of the 2025-03-26 MCP authorization spec (and Memento's) look without
    # metadata: the same endpoints at the origin's root
    path("authorize", ConsentView.as_view(), name="authorize-root"),
    path("token", TokenView.as_view(), name="token-root"),
    path("register", RegistrationView.as_view(), name="register-root"),
]
