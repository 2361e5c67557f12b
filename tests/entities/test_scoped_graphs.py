"""Graphs scoped like memories (entities.scope): a memory of a user builds that user's graph,
project-wide entities are shared with every scope, reads and walks given a scope see it and
the project-wide graph only, and a name is unique per (project, scope)."""

from __future__ import annotations

import pytest

from entities.models import Entity, Relation
from entities.scope import GraphScope
from entities.selectors.search import entities_in_text, graph_boost_scores
from memories.selectors.filters import MemoryFilters
from memories.selectors.search_types import SearchQuery
from tests.mcpserver.conftest import in_process, structured


def _names(body: dict) -> set[tuple[str, str | None]]:
    return {(e["name"], e["user_id"]) for e in body["results"]}


def test_each_users_memories_build_that_users_graph(alice, remember):
    remember("Sarah works at Google", user_id="u1")
    remember("Sarah works at Stripe", user_id="u2")

    sarahs = Entity.objects.filter(project=alice.project, name="Sarah")
    assert sorted(sarahs.values_list("user_id", flat=True)) == ["u1", "u2"]
    # works_at is single-valued, per graph: u2's Stripe does not close u1's Google
    open_jobs = Relation.objects.filter(project=alice.project, relation_type="works_at").filter(
        valid_to__isnull=True
    )
    assert {(r.user_id, r.target.name) for r in open_jobs} == {("u1", "Google"), ("u2", "Stripe")}


def test_a_project_wide_entity_is_reused_by_every_user_and_seen_by_every_scope(alice, remember):
    shared = alice.post("/api/v1/entities/", {"name": "Kubernetes", "entity_type": "technology"})
    remember("Our cluster runs Kubernetes", user_id="u1", entity_names=["Kubernetes"])
    remember("Sarah works at Google", user_id="u1")

    assert Entity.objects.filter(project=alice.project, name="Kubernetes").count() == 1
    u1 = alice.get("/api/v1/entities/", {"user_id": "u1"}).json()
    u2 = alice.get("/api/v1/entities/", {"user_id": "u2"}).json()
    everyone = alice.get("/api/v1/entities/").json()
    assert ("Kubernetes", None) in _names(u1) and ("Sarah", "u1") in _names(u1)
    assert _names(u2) == {("Kubernetes", None)}
    assert _names(everyone) >= _names(u1)
    hidden = Entity.objects.get(project=alice.project, name="Sarah").pk
    assert alice.get(f"/api/v1/entities/{hidden}/", {"user_id": "u2"}).status_code == 404
    assert shared.json()["user_id"] is None


def test_a_name_is_unique_per_scope_not_per_project(alice):
    body = {"name": "Mentor", "entity_type": "person"}
    first = alice.post("/api/v1/entities/", {**body, "user_id": "u1"})
    again = alice.post("/api/v1/entities/", {**body, "user_id": "u1"})
    other = alice.post("/api/v1/entities/", {**body, "user_id": "u2"})
    shared = alice.post("/api/v1/entities/", body)

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert other.status_code == 201 and shared.status_code == 201
    assert len({first.json()["id"], other.json()["id"], shared.json()["id"]}) == 3


def test_relations_and_walks_given_a_scope_follow_only_what_it_sees(alice):
    alice.post("/api/v1/entities/", {"name": "Acme", "entity_type": "organization"})
    for user, person in (("u1", "Ann"), ("u2", "Ben")):
        response = alice.post(
            "/api/v1/relations/",
            {"source": person, "target": "Acme", "relation_type": "works_at", "user_id": user},
        )
        assert response.status_code == 201, response.json()
    acme = Entity.objects.get(project=alice.project, name="Acme")

    as_u1 = alice.get(f"/api/v1/entities/{acme.pk}/graph/", {"user_id": "u1"}).json()
    unscoped = alice.get(f"/api/v1/entities/{acme.pk}/graph/").json()
    relations = alice.get("/api/v1/relations/", {"user_id": "u2"}).json()

    assert {n["name"] for n in as_u1["nodes"]} == {"Acme", "Ann"}
    assert {n["name"] for n in unscoped["nodes"]} == {"Acme", "Ann", "Ben"}
    assert [(r["source"]["name"], r["user_id"]) for r in relations["results"]] == [("Ben", "u2")]


def test_graph_search_of_a_user_walks_that_users_graph(alice):
    alice.post("/api/v1/entities/", {"name": "Acme", "entity_type": "organization"})
    for user, person in (("u1", "Ann"), ("u2", "Ben")):
        alice.post(
            "/api/v1/relations/",
            {"source": person, "target": "Acme", "relation_type": "works_at", "user_id": user},
        )
    ids = dict(Entity.objects.filter(project=alice.project).values_list("name", "pk"))

    def reached(**scope: str) -> set[str]:
        query = SearchQuery(text="Who is at Acme?", filters=MemoryFilters(**scope))
        names = {pk: name for name, pk in ids.items()}
        return {names[pk] for pk in graph_boost_scores(project=alice.project, query=query)}

    assert reached(user_id="u1") == {"Acme", "Ann"}
    assert reached(user_id="u2") == {"Acme", "Ben"}
    assert reached() == {"Acme", "Ann", "Ben"}
    assert entities_in_text(project=alice.project, text="Ann", scope=GraphScope("u2")) == {}


def test_a_project_can_keep_one_graph_for_everyone(alice, remember):
    alice.project.settings = {"graph_scope": "project"}
    alice.project.save(update_fields=["settings"])
    remember("Sarah works at Google", user_id="u1")
    remember("Sarah likes tea", user_id="u2", entity_names=["Sarah"])

    [sarah] = Entity.objects.filter(project=alice.project, name="Sarah")
    assert sarah.user_id is None and sarah.mention_count == 2


def test_scope_input_is_checked(alice):
    response = alice.post("/api/v1/entities/", {"name": "X", "user_id": "u" * 256})
    assert response.status_code == 400 and "user_id" in response.json()["error"]["fields"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_graph_tools_write_and_read_a_users_graph(alice):
    async with in_process(alice) as client:
        await client.call_tool(
            "relation_create",
            {
                "relations": [{"source": "Ann", "target": "Acme", "relation_type": "works_at"}],
                "user_id": "u1",
            },
        )
        await client.call_tool(
            "relation_create",
            {
                "relations": [{"source": "Ann", "target": "Initech", "relation_type": "works_at"}],
                "user_id": "u2",
            },
        )
        u1 = structured(
            await client.call_tool("entity_graph", {"entity_name": "Ann", "user_id": "u1"})
        )
        u2 = structured(
            await client.call_tool("entity_graph", {"entity_name": "Ann", "user_id": "u2"})
        )
        gone = structured(
            await client.call_tool("entity_delete", {"entity_names": ["Ann"], "user_id": "u2"})
        )
    assert {n["name"] for n in u1["nodes"]} == {"Ann", "Acme"}
    assert {n["name"] for n in u2["nodes"]} == {"Ann", "Initech"}
    assert gone["deleted"]["entities"] == 1  # u1's Ann stays
