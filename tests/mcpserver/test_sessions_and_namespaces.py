"""What a user moving from Memento, the SQL-native entity memory server or mcp-ai-memory hits
first, through the SDK's real client under each profile's own tool and argument names:
Memento's session fragments that leave with the session and its agent namespaces with a
shared pool (REST and the standard tools too, where a project turns them on), the SQL-native
server's effective min_confidence and merge-only consolidation, mcp-ai-memory's walks and
graph analysis scoped to a user."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from memories.models import Memory, MemoryHistory
from tests.conftest import make_tenant
from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def _call(client, tool: str, arguments: dict) -> dict:
    return structured(await client.call_tool(tool, arguments))


async def _remember(client, content: str, **extra) -> str:
    body = {"content": content, "topic": "ops", "type": "fact", **extra}
    stored = await _call(client, "remember", body)
    assert stored["success"] is True, stored
    return stored["id"]


async def _recalled(client, text: str, **extra) -> set[str]:
    found = await _call(client, "recall", {"text": text, "includeLinks": False, **extra})
    assert found["success"] is True, found
    return {item["id"] for item in found["results"]}


@sync_to_async
def _age(pk: str, days: float) -> None:
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=pk).update(created_at=then, last_accessed_at=None)


@sync_to_async
def _deleted_for(pk: str) -> str | None:
    entry = MemoryHistory.objects.filter(memory_id=pk, event="DELETE").first()
    return entry.new_values.get("reason") if entry else None


@sync_to_async
def _agent_key(tenant, scopes: list[str]):
    return make_tenant(tenant.project.slug, scopes)


@sync_to_async
def _set(tenant, **settings) -> None:
    tenant.project.settings = settings
    tenant.project.save()


# --- Memento ---------------------------------------------------------------------------------


async def test_memento_session_fragments_leave_with_the_session_unless_reflect_promotes_them(
    alice,
):
    async with in_process(alice, "memento") as client:
        scratch = await _remember(
            client, "Editing src/app.tsx for the login form", scope="session", sessionId="s1"
        )
        keep = await _remember(
            client, "The flaky login test waits on a fixed sleep", scope="session", sessionId="s1"
        )
        context = await _call(client, "context", {"sessionId": "s1", "types": ["fact"]})
        assert {scratch, keep} <= {item["id"] for item in context["working"]}
        assert keep not in await _recalled(client, "flaky login test", sessionId="s2")
        assert keep in await _recalled(client, "flaky login test", sessionId="s1")

        reflected = await _call(
            client,
            "reflect",
            {"summary": "Fixed the login form", "sessionId": "s1", "promote": [keep]},
        )
        assert reflected["success"] is True
        assert reflected["session"]["expired_ids"] == [scratch]
        assert reflected["session"]["promoted_ids"] == [keep]
        later = await _recalled(client, "login form app.tsx flaky test", sessionId="s3")
    assert scratch not in later and keep in later
    assert await _deleted_for(scratch) == "session_closed"


async def test_memento_agents_see_their_own_fragments_and_the_shared_pool(alice):
    agent_key = await _agent_key(alice, ["read", "write"])  # no maintenance (admin) scope
    async with in_process(agent_key, "memento") as client:
        planner = await _remember(client, "Deploy the release on Friday", agentId="planner")
        coder = await _remember(client, "The deploy script is ops/deploy.sh", agentId="coder")
        shared = await _remember(client, "Every deploy needs a green CI run")
        assert await _recalled(client, "deploy", agentId="planner") == {planner, shared}
        assert await _recalled(client, "deploy", agentId="coder") == {coder, shared}
        assert await _recalled(client, "deploy") == {shared}
        assert await _recalled(client, "deploy", agentId="admin") == {shared}  # just a name
        refused = await _call(client, "forget", {"id": coder, "agentId": "planner"})
        assert refused["success"] is False and "not_found" in refused["error"]
        amended = await _call(
            client, "amend", {"id": shared, "keywords": ["ci"], "agentId": "planner"}
        )
        assert amended["success"] is True  # the shared pool is writable by every agent
    async with in_process(alice, "memento") as maintenance:
        assert await _recalled(maintenance, "deploy") == {planner, coder, shared}
        assert await _recalled(maintenance, "deploy", agentId="system") == {
            planner,
            coder,
            shared,
        }


async def test_a_project_turns_namespaces_on_for_its_rest_api_and_standard_tools(alice, charlie):
    await _set(alice, agent_namespaces=True)
    agent_key = await _agent_key(alice, ["read", "write"])
    post = sync_to_async(agent_key.post)
    get = sync_to_async(agent_key.get)
    own = await post("/api/v1/memories/", {"content": "Cache TTL is 5 minutes", "agent_id": "a"})
    other = await post("/api/v1/memories/", {"content": "Cache size is 2 GB", "agent_id": "b"})
    pool = await post("/api/v1/memories/", {"content": "Cache runs on Redis", "user_id": "u1"})
    own, other, pool = (r.json()["id"] for r in (own, other, pool))

    listed = await get("/api/v1/memories/", {"agent_id": "a"})
    assert {m["id"] for m in listed.json()["results"]} == {own, pool}
    assert {m["id"] for m in (await get("/api/v1/memories/")).json()["results"]} == {pool}
    hidden = await get(f"/api/v1/memories/{other}/", HTTP_X_AGENT_ID="a")
    assert hidden.status_code == 404
    assert (await get(f"/api/v1/memories/{other}/", HTTP_X_AGENT_ID="b")).status_code == 200
    everything = await sync_to_async(alice.get)("/api/v1/memories/")  # a maintenance key
    assert {m["id"] for m in everything.json()["results"]} == {own, other, pool}

    async with in_process(agent_key) as client:
        found = await _call(client, "memory_search", {"query": "cache", "agent_id": "a"})
        assert {item["id"] for item in found["results"]} == {own, pool}
        assert (await client.call_tool("memory_get", {"memory_id": other})).is_error
    async with in_process(charlie) as client:
        found = await _call(client, "memory_search", {"query": "cache", "agent_id": "a"})
        assert found["results"] == []


# --- the SQL-native entity memory server ------------------------------------------------------


async def test_sqlnative_min_confidence_is_effective_and_consolidate_only_merges(alice):
    hooks = [
        "React hooks must be called at the top level of a component",
        "Call React hooks only at the top level of your components",
        "React hooks may only be called at the top level of function components",
    ]
    async with in_process(alice, "sqlnative") as client:
        ids = [
            (await _call(client, "store_memory", {"content": text}))["memory"]["id"]
            for text in hooks
        ]
        old = (await _call(client, "store_memory", {"content": "React 16 added hooks"}))["memory"]
        await _age(old["id"], 120)  # four half-lives unread: effective confidence ~0.06
        found = await _call(client, "recall_memories", {"query": "React hooks"})
        assert old["id"] not in {item["id"] for item in found["results"]}
        everything = await _call(
            client, "recall_memories", {"query": "React hooks", "min_confidence": 0.0}
        )
        assert old["id"] in {item["id"] for item in everything["results"]}
        report = await _call(client, "consolidate_memories", {"similarity_threshold": 0.85})
        assert (report["clusters_found"], report["memories_merged"]) == (1, 2)
        assert report["stages_run"] == ["merge"] and report["stages"]["pruned"] == 0
    live = await sync_to_async(lambda: set(Memory.objects.alive().values_list("id", flat=True)))()
    assert {str(pk) for pk in live} == {ids[0], old["id"]}


# --- mcp-ai-memory -----------------------------------------------------------------------------


async def test_aimemory_walks_and_graph_analysis_stay_inside_a_user(alice):
    async def store(client, content: str, user: str) -> str:
        body = {"content": content, "user_id": user}
        return (await _call(client, "memory_store", body))["memory"]["id"]

    async def link(client, a: str, b: str, kind: str) -> None:
        await _call(client, "memory_link", {"from_id": a, "to_id": b, "link_type": kind})

    async with in_process(alice, "aimemory") as client:
        error = await store(client, "Checkout failed with a 502 from the gateway", "u1")
        cause = await store(client, "The gateway pool ran out of connections", "u1")
        fix = await store(client, "Raised the gateway pool to 200 connections", "u1")
        theirs = await store(client, "Bob's gateway dashboard shows pool usage", "u2")
        await link(client, error, cause, "caused_by")
        await link(client, cause, fix, "resolved_by")
        await link(client, cause, theirs, "relates_to")

        walk = {"memory_id": error, "depth": 3}
        anyone = await _call(client, "memory_traverse", walk)
        assert theirs in {node["id"] for node in anyone["nodes"]}
        mine = await _call(client, "memory_traverse", {**walk, "user_id": "u1"})
        assert {node["id"] for node in mine["nodes"]} == {error, cause, fix}
        alias = await _call(client, "memory_graph_search", {**walk, "user_id": "u1"})
        assert {node["id"] for node in alias["nodes"]} == {error, cause, fix}
        outside = await client.call_tool("memory_traverse", {"memory_id": theirs, "user_id": "u1"})
        assert outside.is_error and "not_found" in outside.content[0].text

        analysis = await _call(client, "memory_graph_analysis", {"user_id": "u1"})
        assert analysis["memory_links"]["count"] == 2
        assert (await _call(client, "memory_graph_analysis", {}))["memory_links"]["count"] == 3
