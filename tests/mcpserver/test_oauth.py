"""MCP clients authorized with OAuth: the SDK's own client flow against a live server, and
the 401 that starts it."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from oauth2_provider.models import AccessToken

from mcpserver.asgi import with_mcp
from memories.models import Memory
from platformcore.lib.project_scope import project_scope
from tests.conftest import Tenant
from tests.mcpserver.conftest import structured
from tests.tenants.oauth_helpers import REDIRECT_URI, token_for

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


class MemoryStorage:
    """Where the SDK keeps its registration and tokens (a client would use a file)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class _FormFields(HTMLParser):
    """What a browser submits from the consent form: hidden fields and ticked boxes."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        kind, name = named.get("type"), named.get("name")
        if tag != "input" or not name:
            return
        if kind == "hidden" or (kind == "checkbox" and "checked" in named):
            self.fields.append((name, named.get("value") or ""))


class Person:
    """Opens the authorization URL the client hands over, pastes the project's API key into
    the consent form and submits it; the redirect back carries the code for the client."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        async with httpx.AsyncClient() as browser:  # keeps the CSRF cookie between the two
            page = await browser.get(authorization_url)
            assert page.status_code == 200, page.text
            form = _FormFields()
            form.feed(page.text)
            data: dict[str, list[str]] = {"api_key": [self.api_key], "allow": ["yes"]}
            for name, value in form.fields:
                data.setdefault(name, []).append(value)
            answer = await browser.post(authorization_url, data=data)
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        assert location.startswith(REDIRECT_URI)
        query = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        self.result = AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def remember(tenant: Tenant, content: str) -> Memory:
    """A memory written straight to the table: no embedding, so no model to load."""
    with project_scope(tenant.project.id):
        return Memory.objects.create(
            project=tenant.project, content=content, content_hash=content, user_id="u1"
        )


def _client_metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="Memory test client",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


@pytest.mark.slow
async def test_the_sdk_client_authorizes_with_oauth_and_calls_tools(live_server_mcp, alice, bob):
    mine = await sync_to_async(remember)(alice, "alice's note")
    theirs = await sync_to_async(remember)(bob, "bob's note")
    person, storage = Person(alice.key), MemoryStorage()
    provider = OAuthClientProvider(
        server_url=f"{live_server_mcp.url}/mcp",
        client_metadata=_client_metadata(),
        storage=storage,
        redirect_handler=person.open,
        callback_handler=person.callback,
    )
    async with (
        create_mcp_http_client(auth=provider) as http,
        streamable_http_client(f"{live_server_mcp.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = structured(await session.call_tool("memory_get", {"memory_id": str(mine.id)}))
        assert found["content"] == "alice's note"
        other = await session.call_tool("memory_get", {"memory_id": str(theirs.id)})
        assert other.is_error  # bob's memory: another project's, so not found
        assert structured(await session.call_tool("memory_stats", {}))["total_memories"] == 1

    assert person.result is not None and storage.tokens is not None
    assert storage.tokens.refresh_token
    assert set((storage.tokens.scope or "").split()) == {"read", "write", "admin"}


@pytest.fixture
def mcp_app():
    async def elsewhere(scope, receive, send):  # what is not MCP: not reached here
        raise AssertionError(scope["path"])

    return with_mcp(elsewhere)


async def _post(app, path: str, token: str | None = None) -> httpx.Response:
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        return await http.post(path, json=INITIALIZE, headers=headers)


async def test_a_401_names_the_protected_resource_metadata(mcp_app):
    for path in ("/mcp", "/sse"):
        response = await _post(mcp_app, path)
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        metadata = f"http://127.0.0.1:8000/.well-known/oauth-protected-resource{path}"
        assert f'resource_metadata="{metadata}"' in challenge
        assert "invalid_token" not in challenge


async def test_a_bad_token_is_401_with_invalid_token(mcp_app):
    response = await _post(mcp_app, "/mcp", "not-a-token")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_a_token_in_the_query_string_is_not_read(mcp_app, alice):
    tokens = await sync_to_async(token_for)(Client(), alice.key)
    response = await _post(mcp_app, f"/sse?api_key={tokens['access_token']}")
    assert response.status_code == 401
    assert "invalid_token" not in response.headers["www-authenticate"]  # as if none was sent


async def test_an_expired_token_is_refused_by_the_mcp_endpoint(mcp_app, alice):
    tokens = await sync_to_async(token_for)(Client(), alice.key)
    assert (await _post(mcp_app, "/mcp", tokens["access_token"])).status_code == 200
    expired = timezone.now() - timedelta(seconds=1)
    await sync_to_async(AccessToken.objects.update)(expires=expired)
    response = await _post(mcp_app, "/mcp", tokens["access_token"])
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
