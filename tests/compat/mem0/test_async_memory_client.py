"""mem0's `AsyncMemoryClient` (mem0ai 2.2), unchanged, against the live platform: the same
methods as the sync client, awaited."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from mem0 import AsyncMemoryClient
from mem0.exceptions import MemoryError, MemoryNotFoundError, ValidationError

from tests.compat.mem0.conftest import tenant_key

pytestmark = pytest.mark.anyio


async def _client(live_server, slug: str) -> AsyncMemoryClient:
    key = await sync_to_async(tenant_key)(slug)
    return AsyncMemoryClient(api_key=key, host=live_server.url)


async def _add(client: AsyncMemoryClient, text: str, user_id: str = "u1") -> str:
    result = await client.add(text, user_id=user_id, infer=False)
    assert [event["event"] for event in result["results"]] == ["ADD"]
    return result["results"][0]["id"]


async def test_the_async_client_runs_every_memory_method(live_server) -> None:
    async with await _client(live_server, "alice") as client:
        assert client.project_id == "alice"
        first = await _add(client, "Speaks Italian and German")
        second = await _add(client, "Works night shifts")
        assert (await client.get(first))["memory"] == "Speaks Italian and German"
        listed = await client.get_all(filters={"user_id": "u1"}, page=1, page_size=10)
        assert listed["count"] == 2
        found = await client.search("which languages", filters={"user_id": "u1"}, top_k=1)
        assert [hit["id"] for hit in found["results"]] == [first]

        await client.update(first, text="Speaks Italian, German and French")
        assert [e["event"] for e in await client.history(first)] == ["ADD", "UPDATE"]
        await client.batch_update([{"memory_id": second, "text": "Works day shifts"}])
        assert (await client.get(second))["memory"] == "Works day shifts"
        assert (await client.feedback(first, "POSITIVE"))["feedback"] == "POSITIVE"

        export = await client.create_memory_export(schema={}, filters={"user_id": "u1"})
        exported = await client.get_memory_export(memory_export_id=export["id"])
        assert exported["count"] == 2

        users = (await client.users())["results"]
        assert [(u["type"], u["name"], u["total_memories"]) for u in users] == [("user", "u1", 2)]
        await client.batch_delete([{"memory_id": second}])
        await client.delete(first)
        with pytest.raises(MemoryNotFoundError):
            await client.get(first)

        await _add(client, "Lives in Turin", user_id="u2")
        await _add(client, "Lives in Lyon", user_id="u3")
        await client.delete_all(user_id="u2")
        await client.delete_users(user_id="u3")
        assert (await client.get_all())["count"] == 0
        with pytest.raises(ValidationError):
            await client.delete_all()
        with pytest.raises(MemoryError, match="not supported"):
            await client.get_profile("u1")


async def test_another_projects_async_client_sees_none_of_alices_memories(live_server) -> None:
    async with await _client(live_server, "alice") as alice:
        memory_id = await _add(alice, "Alice's travel plans")
    async with await _client(live_server, "bob") as bob:
        assert (await bob.get_all())["count"] == 0
        assert (await bob.search("travel plans"))["results"] == []
        assert (await bob.users())["results"] == []
        with pytest.raises(MemoryNotFoundError):
            await bob.get(memory_id)
        with pytest.raises(MemoryNotFoundError):
            await bob.delete(memory_id)
