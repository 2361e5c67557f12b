"""The SDK against a live platform: the sync and async clients, pagination, typed errors,
the live feed and the mem0-style facade, over real HTTP to daphne on the test database."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from memory_platform_client import (
    AsyncClient,
    AsyncMemory,
    AuthenticationError,
    Client,
    Memory,
    NotFound,
    PermissionDenied,
    ValidationError,
)
from memory_platform_client.operations import OPERATIONS

from tests.clients.conftest import TIMEOUT
from tests.conftest import Tenant, make_tenant

pytestmark = pytest.mark.slow


def _recording(client: Client) -> set[str]:
    """The operations `client` sends from now on, by name."""
    sent: set[str] = set()
    send = client._call

    def record(operation: str, **kwargs: Any) -> Any:
        sent.add(operation)
        return send(operation, **kwargs)

    client._call = record  # type: ignore[method-assign]
    return sent


def test_memories_are_stored_read_changed_deleted_and_restored(client: Client) -> None:
    memory = client.memories.create("Alice prefers dark mode", user_id="alice", tags=["ui"])
    assert memory["created"] is True
    again = client.memories.create("Alice prefers dark mode", user_id="alice", tags=["ui"])
    assert (again["id"], again["created"]) == (memory["id"], False)

    assert client.memories.get(memory["id"])["tags"] == ["ui"]
    changed = client.memories.update(memory["id"], content="Alice prefers light mode")
    assert (changed["content"], changed["version"]) == ("Alice prefers light mode", 2)
    replaced = client.memories.replace(memory["id"], importance=0.9, pinned=True)
    assert (replaced["importance"], replaced["pinned"]) == (0.9, True)

    client.memories.delete(memory["id"])
    with pytest.raises(NotFound):
        client.memories.get(memory["id"])
    assert client.memories.restore(memory["id"])["deleted_at"] is None
    events = [entry["event"] for entry in client.memories.history(memory["id"])]
    assert events[0] == "ADD" and {"UPDATE", "DELETE", "RESTORE"} <= set(events)

    assert client.memories.delete_scope(user_id="alice") == {"deleted": 1}
    assert client.memories.list(user_id="alice")["count"] == 0


def test_search_answers_in_every_mode_and_with_every_kind_of_filter(client: Client) -> None:
    client.memories.create_many(
        [
            {"content": "Deploys run on Fridays", "user_id": "u1", "memory_type": "procedure"},
            {"content": "We chose PostgreSQL for storage", "user_id": "u1", "tags": ["db"]},
            {"content": "Bob likes PostgreSQL too", "user_id": "u2", "tags": ["db"]},
        ]
    )
    for mode in ("hybrid", "keyword", "semantic", "graph"):
        found = client.memories.search("PostgreSQL storage", mode=mode, user_id="u1")
        assert found["mode"] == mode
        assert all(hit["user_id"] == "u1" for hit in found["results"])
    hits = client.memories.search("PostgreSQL", mode="keyword", tags=["db"])["results"]
    assert {hit["user_id"] for hit in hits} == {"u1", "u2"}
    assert all("score" in hit and "score_parts" in hit for hit in hits)

    expression = {"AND": [{"user_id": "u2"}, {"tags": {"in": ["db"]}}]}
    by_expression = client.memories.search("PostgreSQL", filters=expression)["results"]
    assert [hit["content"] for hit in by_expression] == ["Bob likes PostgreSQL too"]
    procedures = client.memories.search_get("deploys", memory_type="procedure", fusion="rrf")
    assert [hit["memory_type"] for hit in procedures["results"]] == ["procedure"]
    budgeted = client.memories.search("PostgreSQL", token_budget=8, min_similarity=0.0)
    assert budgeted["token_budget"] == 8
    assert budgeted["tokens"] <= 8


def test_search_takes_the_hybrid_tuning_options(client: Client) -> None:
    client.memories.create_many(
        [
            {"content": "Ana: how was the pottery class?", "run_id": "chat", "user_id": "u1"},
            {"content": "Ben: lovely, I made two bowls", "run_id": "chat", "user_id": "u1"},
        ]
    )
    search, floor = client.memories.search, 0.6  # only the question is similar enough
    around = search("pottery class", neighbours=1, neighbour_weight=0.5, min_similarity=floor)
    assert "Ben: lovely, I made two bowls" in [hit["content"] for hit in around["results"]]
    alone = search("pottery class", neighbours=0, date_weight=0.0, min_similarity=floor)
    assert [hit["content"] for hit in alone["results"]] == ["Ana: how was the pottery class?"]
    in_url = client.memories.search_get("pottery class", neighbours=0, min_similarity=floor)
    assert len(in_url["results"]) == 1


def test_pagination_helpers_iterate_over_every_page(client: Client) -> None:
    facts = [
        "The harbour opens at six",
        "Ferries to the island leave hourly from the harbour",
        "Our office cat is called Miso",
        "Invoices are due on the first Monday",
        "The staging database runs PostgreSQL 17",
        "Marta leads the harbour mapping project",
        "Lunch on Thursdays is at the Greek place",
    ]
    client.memories.create_many([{"content": fact, "user_id": "u1"} for fact in facts])
    page = client.memories.list(user_id="u1", limit=3)
    assert (len(page["results"]), page["count"]) == (3, 7)
    every = [memory["id"] for memory in client.memories.iter(user_id="u1", page_size=3)]
    assert len(every) == len(set(every)) == 7
    hits = list(client.memories.iter_search("harbour", mode="keyword", page_size=2))
    assert len({hit["id"] for hit in hits}) == len(hits) == 3

    for name in ("Ada", "Grace", "Linus"):
        client.relations.create("knows", source="Tim", target=name)
    entities = [entity["id"] for entity in client.entities.iter(page_size=2)]
    assert len(set(entities)) == client.entities.list()["count"] >= 4
    relations = [relation["id"] for relation in client.relations.iter(page_size=2)]
    assert len(set(relations)) == client.relations.list()["count"] >= 3


def test_errors_are_typed_another_projects_memory_is_not_found_and_bad_input_named(
    client: Client, live: str, bob: Tenant
) -> None:
    with Client(bob.key, url=live, timeout=TIMEOUT) as bobs:
        secret = bobs.memories.create("Bob's secret plan", user_id="bob")
    with pytest.raises(NotFound) as hidden:
        client.memories.get(secret["id"])
    assert (hidden.value.status, hidden.value.code) == (404, "not_found")
    with pytest.raises(NotFound):
        client.memories.history(secret["id"])
    assert client.memories.search("secret plan", mode="keyword")["results"] == []

    with pytest.raises(ValidationError) as invalid:
        client.memories.create("A memory with a bad confidence", user_id="u1", confidence=7)
    assert invalid.value.status == 400
    assert "confidence" in invalid.value.fields
    with pytest.raises(ValidationError) as too_many:
        client.memories.list(limit=500)
    assert "limit" in too_many.value.fields
    with pytest.raises(ValidationError) as bulk:
        client.memories.create_many([{"content": "ok", "user_id": "u1"}, {"user_id": "u1"}])
    assert "memories.1.content" in bulk.value.fields

    with (
        Client("mp_not_a_key", url=live, timeout=TIMEOUT) as stranger,
        pytest.raises(AuthenticationError) as refused,
    ):
        stranger.memories.list()
    assert refused.value.status == 401
    reader = make_tenant("alice", scopes=["read"])
    with (
        Client(reader.key, url=live, timeout=TIMEOUT) as read_only,
        pytest.raises(PermissionDenied),
    ):
        read_only.memories.create("not allowed", user_id="u1")


def test_every_operation_of_the_api_answers_through_the_sdk(client: Client) -> None:
    sent = _recording(client)
    cause = client.memories.create(
        "The deploy failed: disk full", user_id="u1", memory_type="error", entity_names=["CI"]
    )
    fix = client.memories.create("Cleaned the disk; deploy works", user_id="u1")
    link = client.links.create(fix["id"], cause["id"], link_type="resolved_by")
    assert [item["id"] for item in client.links.list(fix["id"])] == [link["id"]]
    assert client.memories.traverse(fix["id"], depth=1)["center"] == fix["id"]
    assert client.memories.causal_chain(cause["id"])["center"] == cause["id"]
    assert [entity["name"] for entity in client.memories.entities(cause["id"])] == ["CI"]
    client.links.delete(fix["id"], link["id"])
    assert client.memories.add("I live in Lisbon and I love jazz", user_id="u1")["results"]
    assert client.memories.add("Raw note", user_id="u1", infer=False)["results"][0]["event"]
    client.memories.feedback(fix["id"], helpful=True, tool_name="sdk")
    assert client.memories.utility(fix["id"])
    client.memories.search_get("deploy")
    client.memories.list()
    list(client.memories.iter(page_size=50))
    list(client.memories.iter_search("deploy"))
    client.memories.replace(fix["id"], tags=["ops"])
    client.memories.update(fix["id"], tags=["ops", "disk"])
    client.memories.history(fix["id"])
    client.memories.search("deploy")

    lifecycle = client.lifecycle
    assert lifecycle.consolidate(dry_run=True) is not None
    lifecycle.run_decay()
    assert lifecycle.decay_status(fix["id"])
    assert lifecycle.preserve(fix["id"])["id"] == fix["id"]
    assert lifecycle.prune_candidates(limit=5)["threshold"] >= 0
    list(lifecycle.iter_prune_candidates())
    lifecycle.prune(dry_run=True)
    assert lifecycle.pause_decay() and lifecycle.decay_control()["paused"] is True
    assert lifecycle.resume_decay() and lifecycle.decay_control()["paused"] is False
    lifecycle.set_decay_rate(fix["id"], 0.02)
    with pytest.raises(ValidationError):
        lifecycle.decompress(fix["id"])  # not compressed

    assert client.contradictions.list(status="all")["count"] == 0
    unknown = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(NotFound):
        client.contradictions.get(unknown)
    with pytest.raises(NotFound):
        client.contradictions.resolve(unknown, "keep_a")

    reflected = client.session.reflect("Fixed the deploy", user_id="u1", decisions=["Use CI"])
    assert reflected["results"]
    assert client.session.context(user_id="u1", token_budget=500)["token_budget"] == 500
    assert client.session.close("r-closed") is not None

    ada = client.entities.create("Ada", entity_type="person", aliases=["Countess"])
    assert client.entities.get(ada["id"])["name"] == "Ada"
    assert client.entities.update(ada["id"], description="mathematician")["description"]
    assert client.entities.replace(ada["id"], description="poet's daughter")["description"]
    assert client.entities.list(q="Ada")["count"] == 1
    list(client.entities.iter())
    relation = client.relations.create("works_on", source_id=ada["id"], target="Engine")
    assert client.relations.get(relation["id"])["relation_type"] == "works_on"
    assert client.relations.list(entity_id=ada["id"])["count"] == 1
    list(client.relations.iter())
    assert client.relations.close(relation["id"])["valid_now"] is False
    client.relations.delete(relation["id"])
    client.graph.bulk(
        entities=[{"name": "Babbage", "entity_type": "person"}],
        relations=[{"source": "Ada", "target": "Babbage", "relation_type": "knows"}],
    )
    assert client.relations.delete_by_name(
        [{"source": "Ada", "target": "Babbage", "relation_type": "knows"}]
    )
    assert client.entities.graph(ada["id"], depth=1)["center"]["id"] == ada["id"]
    assert client.entities.memories(ada["id"])["count"] == 0
    list(client.entities.iter_memories(ada["id"]))
    assert "nodes" in client.graph.export()
    assert client.graph.export_graphml().lstrip().startswith("<?xml")
    assert client.graph.analysis(top=3) is not None
    client.entities.delete(ada["id"])

    analytics = client.analytics
    assert analytics.overview()
    assert analytics.growth(interval="week", days=14)["interval"] == "week"
    assert "by_type" in analytics.types()
    assert analytics.tags(limit=5)["results"] is not None
    assert analytics.confidence(buckets=4)["results"] is not None
    assert analytics.search(days=7) is not None
    assert analytics.relations() is not None
    assert analytics.feedback(days=7) is not None

    runbook = "# Runbook\n\nRestart the worker when the queue stalls."
    document = client.documents.upload(runbook, title="Runbook", user_id="u1")
    assert client.documents.get(document["id"])["title"] == "Runbook"
    assert client.documents.list(user_id="u1")["count"] == 1
    assert [d["id"] for d in client.documents.iter()] == [document["id"]]
    chunks = [chunk["content"] for chunk in client.documents.iter_chunks(document["id"])]
    assert "Restart the worker" in " ".join(chunks)
    assert client.documents.chunks(document["id"], limit=1)["count"] == len(chunks)
    chunk_id = next(iter(client.documents.iter_chunks(document["id"])))["id"]
    client.documents.cite(cause["id"], chunk_id, quote="Restart the worker")
    cited = client.documents.refs(cause["id"])["document_refs"]
    assert [ref["chunk_id"] for ref in cited] == [chunk_id]
    client.documents.uncite(cause["id"], chunk_id)
    assert client.documents.learn(document["id"], infer=False)["chunks"]
    assert client.documents.original(document["id"]) == runbook.encode()
    assert client.documents.rechunk(document["id"], chunk_size=200)["id"] == document["id"]
    around = client.graph.subgraph(f"document:{document['id']}", depth=1)
    assert around["nodes"]
    client.documents.delete(document["id"])

    episode = client.episodes.start(name="Deploy fix", user_id="u1", run_id="r9")
    client.memories.create("Rolled back the release", user_id="u1", run_id="r9")
    assert client.episodes.list(open=True)["count"] >= 1
    assert [m["content"] for m in client.episodes.get(episode["id"])["memories"]] == [
        "Rolled back the release"
    ]
    assert client.episodes.close(episode["id"], summary="Rolled back")["ended_at"]

    client.tags.describe("ops", "Operations work")
    assert client.tags.get("ops")["description"] == "Operations work"
    assert any(tag["name"] == "ops" for tag in client.tags.list()["results"])
    client.tags.forget("ops")
    first = client.prompts.set("extraction", "Keep ticket numbers.")
    client.prompts.set("extraction", "Keep ticket numbers and owners.")
    assert client.prompts.list(kind="extraction")["results"]
    client.prompts.rollback("extraction", first["version"])

    export = client.exports.create(embeddings=False)
    assert client.exports.get(export["id"])["status"] == "done"  # jobs run inline here
    assert client.exports.download(export["id"])[:2] == b"\x1f\x8b"  # gzip
    with pytest.raises(NotFound):
        client.documents.get(document["id"])

    client.memories.create_many([{"content": "One more", "user_id": "u2"}])
    client.memories.get(fix["id"])
    client.memories.delete(fix["id"])
    client.memories.restore(fix["id"])
    client.memories.delete_scope(run_id="none-such")
    assert client.reset()["deleted"]
    not_sent = set(OPERATIONS) - sent - {"events.stream"}
    assert not not_sent, f"not exercised: {sorted(not_sent)}"


@pytest.mark.anyio
async def test_the_async_client_stores_searches_pages_and_follows_the_live_feed(
    live: str,
) -> None:
    alice = await sync_to_async(make_tenant)("alice")
    async with AsyncClient(alice.key, url=live, timeout=TIMEOUT) as client:
        feed = client.events.stream()
        assert (await anext(feed))["type"] == "subscribed"
        stored = await client.memories.create("Alice drinks oolong", user_id="alice")
        event = await asyncio.wait_for(anext(feed), 30)
        assert (event["type"], event["data"]["id"]) == ("memory_created", stored["id"])
        await feed.aclose()

        notes = [
            "Sencha is best at 70 degrees",
            "Alice owns a cast-iron kettle",
            "Rooibos has no caffeine",
            "The tea shop closes at noon on Sundays",
        ]
        await client.memories.create_many([{"content": n, "user_id": "alice"} for n in notes])
        ids = [m["id"] async for m in client.memories.iter(user_id="alice", page_size=2)]
        assert len(set(ids)) == 5
        found = await client.memories.search("oolong", mode="keyword", user_id="alice")
        assert [hit["id"] for hit in found["results"]] == [stored["id"]]
        with pytest.raises(NotFound):
            await client.memories.get("00000000-0000-0000-0000-000000000000")
        with pytest.raises(ValidationError) as invalid:
            await client.memories.search("   ")
        assert "query" in invalid.value.fields


@pytest.mark.anyio
async def test_the_live_feed_never_carries_another_projects_events(live: str) -> None:
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    async with (
        AsyncClient(alice.key, url=live, timeout=TIMEOUT) as alices,
        AsyncClient(bob.key, url=live, timeout=TIMEOUT) as bobs,
    ):
        feed = alices.events.stream()
        assert (await anext(feed))["type"] == "subscribed"
        await bobs.memories.create("Bob's secret plan", user_id="bob")
        mine = await alices.memories.create("Alice's note", user_id="alice")
        event = await asyncio.wait_for(anext(feed), 30)
        assert event["data"]["id"] == mine["id"]  # bob's event never arrived first
        await feed.aclose()


def test_the_mem0_style_facade_maps_onto_the_platform(live: str, alice: Tenant) -> None:
    with Memory(api_key=alice.key, host=live, timeout=TIMEOUT) as memory:
        added = memory.add("I am allergic to peanuts", user_id="alice", infer=False)
        memory_id = added["results"][0]["id"]
        assert added["results"][0]["event"] == "ADD"
        found = memory.search("peanuts", user_id="alice")["results"]
        assert found[0]["memory"] == "I am allergic to peanuts"
        assert "score" in found[0]
        assert memory.get(memory_id)["memory"] == "I am allergic to peanuts"
        assert [m["id"] for m in memory.get_all(user_id="alice")["results"]] == [memory_id]
        updated = memory.update(memory_id, "I am allergic to peanuts and shellfish")
        assert updated["message"] == "Memory updated successfully!"
        history = memory.history(memory_id)
        assert history[-1]["old_memory"] == "I am allergic to peanuts"
        assert history[-1]["new_memory"] == "I am allergic to peanuts and shellfish"
        assert memory.delete(memory_id) == {"message": "Memory deleted successfully!"}
        with pytest.raises(NotFound):
            memory.get(memory_id)
        with pytest.raises(ValidationError):
            memory.delete_all()
        memory.add("I like hiking", user_id="bob", infer=False)
        assert memory.delete_all(user_id="bob")["deleted"] == 1
        assert memory.reset()["message"] == "Memory store reset successfully!"


@pytest.mark.anyio
async def test_the_async_facade_answers_like_mem0s_async_client(live: str) -> None:
    alice = await sync_to_async(make_tenant)("alice")
    async with AsyncMemory(api_key=alice.key, host=live, timeout=TIMEOUT) as memory:
        await memory.add("I work at the observatory", user_id="alice", infer=False)
        results = (await memory.get_all(user_id="alice", limit=10))["results"]
        assert [m["memory"] for m in results] == ["I work at the observatory"]
