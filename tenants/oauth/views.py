"""The consent page (the authorization endpoint) and client registration (RFC 7591); the
token, revocation and metadata endpoints are django-oauth-toolkit's own (tenants/oauth/urls.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider import views as toolkit
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.models import get_application_model
from oauth2_provider.oauth2_validators import is_valid_resource_uri
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import DynamicClientRegistrationView
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from platformcore.lib import json_input
from platformcore.lib.project_scope import project_scope
from tenants.oauth.forms import ConsentForm
from tenants.oauth.services import grantable_scopes, key_holder
from tenants.services import api_key_verify

TEMPLATE = "oauth/authorize.html"
ERROR_TEMPLATE = "oauth/error.html"
LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
MAX_REDIRECT_URIS = 10


@method_decorator(sensitive_post_parameters("api_key"), name="dispatch")
class ConsentView(OAuthLibMixin, View):
    """GET shows what the client asks for; POST with one of the project's API keys grants
    it (at most the key's scopes) and redirects back with a code; "Deny" redirects back with
    `access_denied`. Errors that make the redirect URI untrustworthy are shown here instead."""

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self._error(error)
        resources = request.GET.getlist("resource")
        if credentials.get("code_challenge_method") != "S256" or not all(
            is_valid_resource_uri(uri) for uri in resources
        ):
            return self._refuse(credentials, "invalid_request", _S256_OR_RESOURCE)
        initial = {**credentials, "scope": " ".join(scopes), "resource": " ".join(resources)}
        form = ConsentForm(initial={**initial, "granted": scopes})
        return self._page(request, form, scopes, credentials["client_id"])

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ConsentForm(request.POST)
        if not form.is_valid():
            return render(request, ERROR_TEMPLATE, {"error": "invalid_request"}, status=400)
        credentials = form.credentials()
        if not _registered(credentials):  # never redirect to where the form says unchecked
            return render(request, ERROR_TEMPLATE, {"error": "invalid_client"}, status=400)
        requested = form.cleaned_data["scope"].split()
        if "allow" not in request.POST:
            return self._authorize(request, credentials, [], allow=False)
        resources = form.cleaned_data["resource"].split()
        if not all(is_valid_resource_uri(uri) for uri in resources):
            return self._refuse(credentials, "invalid_target", _S256_OR_RESOURCE)
        api_key = api_key_verify(form.cleaned_data["api_key"] or "-")
        if api_key is None:
            form.add_error("api_key", "Not a usable API key (unknown, revoked or expired).")
            return self._page(request, form, requested, credentials["client_id"], status=400)
        chosen = [scope for scope in form.cleaned_data["granted"] if scope in requested]
        scopes = grantable_scopes(chosen, api_key)
        if not scopes:
            form.add_error("granted", "This key holds none of the chosen scopes.")
            return self._page(request, form, requested, credentials["client_id"], status=400)
        with project_scope(api_key.project_id):
            request.user = key_holder(api_key)
        if resources:
            credentials["resource"] = resources  # type: ignore[assignment]
        _forget_key(request)
        return self._authorize(request, credentials, scopes, allow=True)

    def _authorize(
        self, request: HttpRequest, credentials: dict[str, Any], scopes: list[str], *, allow: bool
    ) -> HttpResponse:
        try:
            with transaction.atomic():
                uri, _headers, _body, _status = self.create_authorization_response(
                    request=request, scopes=" ".join(scopes), credentials=credentials, allow=allow
                )
        except OAuthToolkitError as error:
            return self._error(error)
        return _redirect(uri)

    def _page(
        self,
        request: HttpRequest,
        form: ConsentForm,
        scopes: list[str],
        client_id: str,
        status: int = 200,
    ) -> HttpResponse:
        application = get_application_model().objects.filter(client_id=client_id).first()
        redirect_host = urlsplit(form["redirect_uri"].value() or "").netloc
        context = {"form": form, "application": application, "scopes": scopes}
        return render(request, TEMPLATE, {**context, "redirect_host": redirect_host}, status=status)

    def _error(self, error: OAuthToolkitError) -> HttpResponse:
        redirect, response = self.error_response(error)
        if redirect and response["error"].redirect_uri:
            return _redirect(response["url"])
        oauth_error = response["error"]
        context = {"error": oauth_error.error, "description": oauth_error.description}
        return render(self.request, ERROR_TEMPLATE, context, status=oauth_error.status_code)

    def _refuse(self, credentials: dict[str, Any], code: str, description: str) -> HttpResponse:
        state = credentials.get("state")
        error = CustomOAuth2Error(error=code, description=description, state=state)
        return self._error(OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"]))


_S256_OR_RESOURCE = (
    'PKCE with code_challenge_method "S256" is required, and each resource must be an absolute URI.'
)


def _registered(credentials: dict[str, str]) -> bool:
    """Whether the posted client exists and the posted redirect URI is one of its own."""
    application = get_application_model().objects.filter(client_id=credentials["client_id"]).first()
    return application is not None and application.redirect_uri_allowed(credentials["redirect_uri"])


def _redirect(uri: str) -> HttpResponse:
    return OAuth2ResponseRedirect(uri, oauth2_settings.ALLOWED_REDIRECT_URI_SCHEMES)


def _forget_key(request: HttpRequest) -> None:
    """oauthlib re-reads the POST body as request parameters: leave the key out of it."""
    cleaned = request.POST.copy()
    cleaned.pop("api_key", None)
    request.POST = cleaned  # type: ignore[assignment]


GRANTS = ("authorization_code", "refresh_token")  # what registration and metadata offer


class TokenView(toolkit.TokenView):
    """The token endpoint, refusing every grant the platform does not offer (password,
    client credentials, device, anything unknown) before any credential is looked at: the
    same answer whatever was sent, and no password hashing for an anonymous caller."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.POST.get("grant_type") not in GRANTS:
            body = {
                "error": "unsupported_grant_type",
                "error_description": f"this server offers the grants {', '.join(GRANTS)}",
            }
            return JsonResponse(body, status=400, headers={"Cache-Control": "no-store"})
        return super().post(request, *args, **kwargs)


class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration for MCP clients, narrowed to OAuth 2.1: the authorization-code
    grant (with refresh tokens) and `code` responses only, redirect URIs over https or to
    this machine (http on a loopback host, RFC 8252), at most ten of them."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            metadata = json_input.loads(request.body)
        except json_input.JsonInputError as exc:  # refused before the library parses it
            body = {"error": "invalid_client_metadata", "error_description": str(exc)}
            return JsonResponse(body, status=400)
        except ValueError:
            metadata = None
        if isinstance(metadata, dict):
            problem = _unsupported(metadata)
            if problem:
                return JsonResponse(
                    {"error": "invalid_client_metadata", "error_description": problem}, status=400
                )
        return super().post(request, *args, **kwargs)


def _unsupported(metadata: dict[str, Any]) -> str | None:
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not set(grant_types) <= {
        "authorization_code",
        "refresh_token",
    }:
        return "grant_types: only authorization_code and refresh_token are supported"
    response_types = metadata.get("response_types", ["code"])
    if not isinstance(response_types, list) or set(response_types) - {"code"}:
        return "response_types: only code is supported"
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not 0 < len(uris) <= MAX_REDIRECT_URIS:
        return f"redirect_uris: between 1 and {MAX_REDIRECT_URIS} URIs"
    for uri in uris:
        parts = urlsplit(uri) if isinstance(uri, str) else None
        if (
            parts is None
            or parts.fragment
            or not (
                parts.scheme == "https"
                or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)
            )
        ):
            return f"redirect_uris: {uri!r} must be https, or http on a loopback host"
    return None
