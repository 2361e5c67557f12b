"""The mem0 clients against what `manage.py serve` runs (daphne and the ASGI application, a
child process on the test database), not only the in-process test server."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from mem0 import AsyncMemoryClient, MemoryClient

from tests.compat.mem0.conftest import tenant_key
from tests.conftest import make_tenant
from tests.mcpserver.conftest import live_server_mcp  # noqa: F401 (fixture)


def test_the_sync_client_works_against_the_asgi_server(live_server_mcp) -> None:  # noqa: F811
    client = MemoryClient(api_key=make_tenant("alice").key, host=live_server_mcp.url)
    added = client.add("Prefers trains to planes", user_id="u1", infer=False)
    memory_id = added["results"][0]["id"]
    found = client.search("how does she travel", filters={"user_id": "u1"})
    assert [hit["id"] for hit in found["results"]] == [memory_id]
    client.delete_all(user_id="u1")
    assert client.get_all(filters={"user_id": "u1"})["count"] == 0


@pytest.mark.anyio
async def test_the_async_client_works_against_the_asgi_server(live_server_mcp) -> None:  # noqa: F811
    key = await sync_to_async(tenant_key)("alice")
    async with AsyncMemoryClient(api_key=key, host=live_server_mcp.url) as client:
        added = await client.add("Prefers tea to coffee", user_id="u1", infer=False)
        memory = await client.get(added["results"][0]["id"])
        assert memory["memory"] == "Prefers tea to coffee"
