"""Entity filters: memories linked to knowledge-graph entities, on list and every search mode."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
import yaml
from django.db import connection

from entities.models import Entity, EntityMemory
from memories.embeddings import get_embedder
from memories.models import Memory
from memories.selectors.filters import MemoryFilters, apply_filters
from memories.selectors.memories import memory_queryset
from memories.selectors.search import memory_search
from memories.selectors.search_types import SearchQuery
from platformcore.db.rls import as_owner
from tests.conftest import Tenant
from tests.mcpserver.conftest import in_process, structured

LIST = "/api/v1/memories/"
SEARCH = "/api/v1/memories/search/"
MODES = ["keyword", "semantic", "hybrid", "graph"]


@pytest.fixture(autouse=True)
def no_extraction(settings) -> None:
    """Only the links the tests name: offline extraction would add its own."""
    settings.MEMORY_GRAPH_EXTRACTION = "off"


@pytest.fixture
def hikes(alice: Tenant) -> dict[str, str]:
    """Alice (alias Ally) and Bob, and four hiking memories linked to none, one or both."""
    response = alice.post(
        "/api/v1/entities/", {"name": "Alice", "entity_type": "person", "aliases": ["Ally"]}
    )
    assert response.status_code == 201, response.json()
    stored = {
        "alice": ("Alice went hiking in the mountains", ["Ally"], ["outdoors"], "episode"),
        "both": ("Alice and Bob went hiking by the lake", ["Alice", "Bob"], ["outdoors"], "fact"),
        "bob": ("Bob goes hiking at dawn", ["Bob"], ["outdoors"], "episode"),
        "none": ("Hiking boots need waterproofing", [], ["outdoors"], "episode"),
    }
    ids = {}
    for label, (content, names, tags, memory_type) in stored.items():
        body = {"content": content, "entity_names": names, "tags": tags, "user_id": "u1"}
        response = alice.post(LIST, {**body, "memory_type": memory_type})
        assert response.status_code == 201, response.json()
        ids[label] = response.json()["id"]
    ids["alice_entity"] = str(Entity.objects.get(project=alice.project, name="Alice").pk)
    ids["bob_entity"] = str(Entity.objects.get(project=alice.project, name="Bob").pk)
    return ids


def listed(tenant: Tenant, **params) -> set[str]:
    response = tenant.get(LIST, params)
    assert response.status_code == 200, response.json()
    return {memory["id"] for memory in response.json()["results"]}


def searched(tenant: Tenant, method: str = "post", **body) -> set[str]:
    body.setdefault("min_similarity", 0)
    send = tenant.get if method == "get" else tenant.post
    response = send(SEARCH, body)
    assert response.status_code == 200, response.json()
    return {hit["id"] for hit in response.json()["results"]}


def pick(ids: dict[str, str], *labels: str) -> set[str]:
    return {ids[label] for label in labels}


@pytest.mark.django_db
def test_list_filters_by_entity_id_by_name_and_by_alias(alice, hikes) -> None:
    about_alice = pick(hikes, "alice", "both")
    assert listed(alice, entity_ids=hikes["alice_entity"]) == about_alice
    assert listed(alice, entities="alice") == about_alice
    assert listed(alice, entities="  ALLY ") == about_alice  # alias, case and spaces folded
    assert listed(alice, entities="Bob") == pick(hikes, "both", "bob")


@pytest.mark.django_db
def test_several_entities_must_all_match(alice, hikes) -> None:
    both = pick(hikes, "both")
    assert listed(alice, entities="Alice,Bob") == both
    assert listed(alice, entity_ids=f"{hikes['alice_entity']},{hikes['bob_entity']}") == both
    assert listed(alice, entity_ids=hikes["alice_entity"], entities="Bob") == both


@pytest.mark.django_db
def test_entity_filters_combine_with_tags_and_type(alice, hikes) -> None:
    assert listed(alice, entities="Alice", memory_type="episode") == pick(hikes, "alice")
    assert listed(alice, entities="Bob", tags="outdoors", memory_type="fact") == pick(hikes, "both")
    assert listed(alice, entities="Bob", tags="indoors") == set()


@pytest.mark.django_db
@pytest.mark.parametrize("mode", MODES)
def test_each_search_mode_filters_by_entity_name_and_id(alice, hikes, mode) -> None:
    # graph mode walks from the entities the query names: name both so it reaches all links
    query = "hiking with Alice and Bob"
    about_bob = pick(hikes, "both", "bob")
    assert searched(alice, query=query, mode=mode, entities=["Bob"]) == about_bob
    by_id = searched(alice, "get", q=query, mode=mode, entity_ids=hikes["bob_entity"])
    assert by_id == about_bob
    assert searched(alice, "get", q=query, mode=mode, entities="ally,bob") == pick(hikes, "both")


@pytest.mark.django_db
@pytest.mark.parametrize("mode", MODES)
def test_each_search_mode_combines_entities_with_tags_and_type(alice, hikes, mode) -> None:
    body = {"query": "hiking with Alice and Bob", "mode": mode, "tags": ["outdoors"]}
    assert searched(alice, **body, entities=["Ally"], memory_types=["episode"]) == pick(
        hikes, "alice"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_entity_matches_nothing_in_search(alice, hikes, mode) -> None:
    body = {"query": "hiking with Alice and Bob", "mode": mode}
    assert searched(alice, **body, entities=["Carol"]) == set()
    assert searched(alice, **body, entity_ids=[987654321]) == set()


@pytest.mark.django_db
def test_an_unknown_entity_name_or_id_lists_nothing(alice, hikes) -> None:
    assert listed(alice, entities="Carol") == set()
    assert listed(alice, entity_ids="987654321") == set()


@pytest.mark.django_db
def test_an_unknown_resolved_name_is_an_empty_ranking_not_an_error(alice, hikes) -> None:
    from memories.selectors.search.keyword import keyword_ranked
    from memories.selectors.search.semantic import semantic_ranked

    for filters in (MemoryFilters(entities=["Carol"]), MemoryFilters(expression={"entity": "x"})):
        queryset = apply_filters(
            memory_queryset(project=alice.project), filters, project=alice.project
        )
        assert keyword_ranked(queryset, "hiking", limit=10) == []
        vector = get_embedder().embed("hiking")
        assert semantic_ranked(queryset, vector, limit=10, min_similarity=0.0) == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("get", {"entity_ids": "abc"}, "entity_ids"),
        ("get", {"entity_ids": "0"}, "entity_ids"),
        ("get", {"entity_ids": str(2**63)}, "entity_ids"),
        ("search", {"entity_ids": ["7x"]}, "entity_ids"),
        ("search", {"entity_ids": 5}, "entity_ids"),
        ("search", {"entities": [""]}, "entities"),
        ("search", {"entities": [42]}, "entities"),
        ("search", {"entities": [f"e{i}" for i in range(21)]}, "entities"),
    ],
)
def test_a_malformed_entity_filter_is_a_400_naming_the_field(alice, method, params, field) -> None:
    if method == "get":
        response = alice.get(LIST, params)
    else:
        response = alice.post(SEARCH, {"query": "hiking", **params})
    assert response.status_code == 400, response.json()
    fields = response.json()["error"]["fields"]  # "entity_ids" or the item, "entity_ids.0"
    assert any(name.split(".")[0] == field for name in fields), fields


@pytest.mark.django_db
@pytest.mark.parametrize("mode", MODES)
def test_charlie_cannot_reach_alices_entities(alice, charlie, hikes, mode) -> None:
    charlie.post(LIST, {"content": "Alice went hiking", "entity_names": ["Alice"], "user_id": "u1"})
    alice_entity = hikes["alice_entity"]
    assert listed(charlie, entity_ids=alice_entity) == set()
    query = "hiking with Alice"
    assert searched(charlie, query=query, mode=mode, entity_ids=[alice_entity]) == set()
    # charlie's own "Alice" is charlie's entity: alice's memories stay out of reach
    own = searched(charlie, query=query, mode=mode, entities=["Alice"])
    assert len(own) == 1
    assert own.isdisjoint(hikes.values())


@pytest.mark.django_db
def test_filter_language_has_entity_and_entity_id_fields(alice, hikes) -> None:
    def where(expression: dict) -> set[str]:
        return listed(alice, filters=json.dumps(expression))

    assert where({"entity": "ally"}) == pick(hikes, "alice", "both")
    assert where({"entity": {"in": ["Alice", "Bob"]}}) == pick(hikes, "alice", "both", "bob")
    assert where({"entity": {"nin": ["Alice", "Bob"]}}) == pick(hikes, "none")
    assert where({"NOT": {"entity": {"eq": "Bob"}}}) == pick(hikes, "alice", "none")
    assert where({"entity": {"ne": "Bob"}}) == pick(hikes, "alice", "none")
    bob_id = int(hikes["bob_entity"])
    assert where({"field": "entity_id", "operator": "eq", "value": bob_id}) == pick(
        hikes, "both", "bob"
    )
    either = {"OR": [{"entity_id": {"eq": bob_id}}, {"tags": {"in": ["nothing"]}}]}
    assert where({"AND": [either, {"entity": "Alice"}]}) == pick(hikes, "both")
    assert where({"entity": "Carol"}) == set()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("expression", "path"),
    [
        ({"entity": {"gt": "Alice"}}, "filters.entity.gt"),
        ({"entity": ""}, "filters.entity"),
        ({"entity_id": "12"}, "filters.entity_id"),
        ({"entity_id": {"in": [1, True]}}, "filters.entity_id.in[1]"),
    ],
)
def test_a_bad_entity_condition_is_a_400_with_its_path(alice, expression, path) -> None:
    response = alice.post(SEARCH, {"query": "hiking", "filters": expression})
    assert response.status_code == 400, response.json()
    assert path in response.json()["error"]["fields"], response.json()


@pytest.mark.django_db
def test_entity_names_become_the_projects_entity_ids_in_the_sql(alice, charlie, hikes) -> None:
    """Constants, not a join on names: the planner's statistics on the links then pick an
    exact plan for a rare entity and the HNSW scan for a common one."""
    charlie.post(LIST, {"content": "Ally again", "entity_names": ["Ally"], "user_id": "u1"})
    sql = str(
        apply_filters(
            memory_queryset(project=alice.project),
            MemoryFilters(entities=["ALLY"]),
            project=alice.project,
        ).query
    )
    assert f'entity_id" IN ({hikes["alice_entity"]})' in sql
    assert "lookup_keys" not in sql


@pytest.mark.django_db
def test_the_openapi_schema_documents_the_entity_parameters(anonymous) -> None:
    schema = yaml.safe_load(anonymous.get("/api/schema/").content)
    for path in ("/api/v1/memories/", "/api/v1/memories/search/"):
        names = {parameter["name"] for parameter in schema["paths"][path]["get"]["parameters"]}
        assert {"entities", "entity_ids"} <= names, path


def _near(vector: list[float], rng: random.Random) -> list[float]:
    return [value + rng.gauss(0.0, 0.02) for value in vector]


@pytest.mark.django_db
def test_semantic_search_with_a_selective_entity_filter_still_returns_limit_results(
    alice,
) -> None:
    """Through the HNSW index (sorting disabled, so the planner must use it) 12 linked memories
    among 600 near neighbours: the iterative scan keeps going until `limit` rows pass."""
    rng = random.Random(7)
    vector = get_embedder().embed("trail running in the alps")
    memories = Memory.objects.bulk_create(
        Memory(
            project=alice.project,
            content=f"trail note {i}",
            content_hash=hashlib.sha256(f"trail note {i}".encode()).hexdigest(),
            user_id="u1",
            embedding=_near(vector, rng),
        )
        for i in range(600)
    )
    entity = Entity.objects.create(project=alice.project, name="Alps", normalized_name="alps")
    entity.lookup_keys = ["alps"]
    entity.save()
    linked = rng.sample(memories, 12)
    EntityMemory.objects.bulk_create(
        EntityMemory(project=alice.project, entity=entity, memory=memory) for memory in linked
    )
    with as_owner(connection), connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute("ANALYZE memories_memory; SET enable_sort = off")
    query = SearchQuery(
        text="trail running in the alps",
        mode="semantic",
        filters=MemoryFilters(entities=["Alps"]),
        limit=10,
        min_similarity=0.0,
    )
    hits = memory_search(project=alice.project, query=query).hits
    assert len(hits) == 10
    assert {hit.memory.pk for hit in hits} <= {memory.pk for memory in linked}
    assert "memory_embedding_hnsw" in _semantic_plan(alice, vector)


def _semantic_plan(tenant: Tenant, vector: list[float]) -> str:
    """EXPLAIN of the statement semantic search runs (the graph's part, and the pending rows)."""
    from memories.selectors.search import search_queryset
    from memories.selectors.search.semantic import _ranked_statement
    from platformcore.lib.vectors import vector_literal

    query = SearchQuery(text="x", filters=MemoryFilters(entities=["Alps"]))
    queryset = search_queryset(project=tenant.project, query=query)
    sql, params = _ranked_statement(queryset, vector_literal(vector), 50, False)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_search_tool_filters_by_entity(alice, charlie) -> None:
    from asgiref.sync import sync_to_async

    @sync_to_async
    def store(tenant: Tenant, content: str, names: list[str]) -> str:
        response = tenant.post(LIST, {"content": content, "entity_names": names, "user_id": "u"})
        assert response.status_code == 201, response.json()
        return response.json()["id"]

    with_alice = await store(alice, "Alice reviewed the release notes", ["Alice"])
    await store(alice, "Bob reviewed the release notes too", ["Bob"])
    alice_id = await sync_to_async(
        lambda: Entity.objects.get(project=alice.project, name="Alice").pk
    )()
    async with in_process(alice) as client:
        by_name = structured(
            await client.call_tool(
                "memory_search", {"query": "release notes", "entities": ["alice"]}
            )
        )
        by_id = structured(
            await client.call_tool(
                "memory_search", {"query": "release notes", "entity_ids": [alice_id]}
            )
        )
        unknown = structured(
            await client.call_tool(
                "memory_search", {"query": "release notes", "entities": ["Carol"]}
            )
        )
    assert [hit["id"] for hit in by_name["results"]] == [with_alice]
    assert [hit["id"] for hit in by_id["results"]] == [with_alice]
    assert unknown["results"] == []
    async with in_process(charlie) as client:
        nothing = structured(
            await client.call_tool(
                "memory_search", {"query": "release notes", "entity_ids": [alice_id]}
            )
        )
    assert nothing["results"] == []


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_a_repeated_search_by_entity_name_sees_entities_named_since(alice, hikes, mode) -> None:
    # the same filters again: searches remember their compiled filters, but not the entity
    # ids a name resolved to, which change as the graph grows
    body = {"query": "hiking at dawn with Carol", "mode": mode}
    expression = {"filters": {"entity": "Carol"}}
    assert searched(alice, **body, entities=["Carol"]) == set()
    assert searched(alice, **body, **expression) == set()
    response = alice.post(
        LIST,
        {"content": "Carol goes hiking at dawn too", "entity_names": ["Carol"], "user_id": "u1"},
    )
    assert response.status_code == 201, response.json()
    assert searched(alice, **body, entities=["Carol"]) == {response.json()["id"]}
    assert searched(alice, **body, **expression) == {response.json()["id"]}
