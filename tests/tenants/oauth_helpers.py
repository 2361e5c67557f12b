"""An MCP client's OAuth steps against the platform, through Django's test client."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

REDIRECT_URI = "http://127.0.0.1:33418/callback"


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def register(client: Client, **metadata: Any) -> Any:
    body = {
        "client_name": "Test MCP client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return client.post("/oauth/register", json.dumps(body), content_type="application/json")


def authorize_url(client_id: str, pkce: Pkce | None, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "s-1",
        "scope": "read write",
    }
    if pkce is not None:
        query |= {"code_challenge": pkce.challenge, "code_challenge_method": "S256"}
    return "/oauth/authorize?" + urlencode({**query, **params})


def consent(client: Client, url: str, api_key: str, *, allow: bool = True, **fields: Any) -> Any:
    """Open the consent page and submit it as a person would: the key, every scope ticked."""
    page = client.get(url)
    assert page.status_code == 200, page.content
    form = page.context["form"]
    data = {field.name: field.value() or "" for field in form.hidden_fields()}
    data |= {"granted": form["granted"].value(), "api_key": api_key, **fields}
    data["allow" if allow else "deny"] = "yes"
    return client.post("/oauth/authorize", data)


def redirect_params(response: Any) -> dict[str, str]:
    assert response.status_code == 302, response.content
    location = response["Location"]
    assert location.startswith(REDIRECT_URI), location
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def exchange(client: Client, client_id: str, code: str, verifier: str | None, **extra: str) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
        **extra,
    }
    if verifier is not None:
        data["code_verifier"] = verifier
    return client.post("/oauth/token", data)


def refresh(client: Client, client_id: str, refresh_token: str) -> Any:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return client.post("/oauth/token", data)


def token_for(client: Client, api_key: str, *, scope: str = "read write", **params: str) -> dict:
    """A registered client's tokens, authorized with `api_key`."""
    client_id = register(client).json()["client_id"]
    pkce = Pkce.new()
    url = authorize_url(client_id, pkce, scope=scope, **params)
    code = redirect_params(consent(client, url, api_key))["code"]
    extra = {"resource": params["resource"]} if "resource" in params else {}
    response = exchange(client, client_id, code, pkce.verifier, **extra)
    assert response.status_code == 200, response.content
    return {**response.json(), "client_id": client_id}
