"""Open entity types, mention counters, entity tags and the tag registry (MemorizedMCP-TS's
`entities` and `tags` tables), through REST and MCP."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from entities.models import Entity
from entities.services.memory_graph import entity_memories_link
from tests.mcpserver.conftest import in_process, structured


def _entity(tenant, name: str, **fields):
    response = tenant.post("/api/v1/entities/", {"name": name, **fields})
    assert response.status_code in (200, 201), response.json()
    return response.json()


# --- open types ----------------------------------------------------------------------------


def test_a_projects_own_type_is_stored_folded_and_listed_by_it(alice):
    team = _entity(alice, "Platform", entity_type="team")
    band = _entity(alice, "Ramones", entity_type="Rock Band")
    _entity(alice, "Ada", entity_type="person")

    assert (team["entity_type"], band["entity_type"]) == ("team", "rock_band")
    listed = alice.get("/api/v1/entities/", {"entity_type": "team,rock_band"}).json()
    assert {e["name"] for e in listed["results"]} == {"Platform", "Ramones"}


def test_the_database_refuses_a_type_that_is_no_identifier(alice):
    with pytest.raises(IntegrityError), transaction.atomic():
        Entity.objects.create(
            project=alice.project, name="X", normalized_name="x", entity_type="A b"
        )


def test_an_entity_type_can_be_changed_to_a_new_one(alice):
    entity = _entity(alice, "Ops", entity_type="unknown")
    response = alice.patch(f"/api/v1/entities/{entity['id']}/", {"entity_type": "team"})
    assert response.status_code == 200 and response.json()["entity_type"] == "team"


# --- mentions ------------------------------------------------------------------------------


def test_each_memory_mentioning_an_entity_counts_once_with_first_and_last_seen(alice, remember):
    first = remember("Lunch with Quorra", entity_names=["Quorra"])
    remember("Quorra joined the platform team", entity_names=["Quorra"])
    quorra = Entity.objects.get(project=alice.project, name="Quorra")
    assert quorra.mention_count == 2
    assert quorra.first_seen is not None and quorra.first_seen <= quorra.last_seen

    link = (first["id"], quorra.pk, 1.0)
    entity_memories_link(project=alice.project, links=[link])  # linked again: no new mention
    quorra.refresh_from_db()
    assert quorra.mention_count == 2
    body = alice.get(f"/api/v1/entities/{quorra.pk}/").json()
    assert body["mention_count"] == 2 and body["first_seen"] and body["last_seen"]


def test_an_entity_created_without_a_memory_has_no_mentions_yet(alice):
    body = _entity(alice, "Nobody", entity_type="person")
    assert (body["mention_count"], body["first_seen"], body["last_seen"]) == (0, None, None)


# --- entity tags and the tag registry ------------------------------------------------------


def test_entities_carry_tags_that_lists_filter_by(alice):
    pg = _entity(alice, "PostgreSQL", entity_type="technology", tags=["db", "infra"])
    _entity(alice, "Redis", entity_type="technology", tags=["infra"])
    alice.patch(f"/api/v1/entities/{pg['id']}/", {"tags": ["db", "infra", "core"]})

    both = alice.get("/api/v1/entities/", {"tags": "db,infra"}).json()
    assert [e["name"] for e in both["results"]] == ["PostgreSQL"]
    assert both["results"][0]["tags"] == ["db", "infra", "core"]


def test_the_registry_lists_every_tag_in_use_with_counts_and_descriptions(alice, remember):
    remember("Deploys run at 9am", tags=["ops", "schedule"])
    remember("Rollbacks need two approvals", tags=["ops"])
    _entity(alice, "Grafana", entity_type="technology", tags=["ops"])
    described = alice.client.put(
        "/api/v1/tags/ops/", {"description": "Operations runbooks"}, format="json"
    )
    assert described.status_code == 200, described.json()
    alice.client.put("/api/v1/tags/later/", {"description": "Not used yet"}, format="json")

    body = alice.get("/api/v1/tags/").json()

    rows = {t["name"]: t for t in body["results"]}
    assert body["results"][0]["name"] == "ops"  # the most used first
    assert rows["ops"] == {
        "name": "ops",
        "description": "Operations runbooks",
        "memory_count": 2,
        "entity_count": 1,
        "registered": True,
    }
    assert (rows["schedule"]["memory_count"], rows["schedule"]["registered"]) == (1, False)
    assert rows["later"]["memory_count"] == 0 and body["count"] == 3
    assert alice.get("/api/v1/tags/", {"q": "SCHED"}).json()["count"] == 1
    assert alice.get("/api/v1/tags/schedule/").json()["memory_count"] == 1


def test_a_deleted_memory_no_longer_counts_and_an_unknown_tag_is_404(alice, remember):
    memory = remember("Temporary note", tags=["tmp"])
    alice.delete(f"/api/v1/memories/{memory['id']}/")
    assert alice.get("/api/v1/tags/tmp/").status_code == 404
    assert alice.delete("/api/v1/tags/tmp/").status_code == 404


def test_bad_tag_input_is_a_400_naming_the_field(alice):
    response = alice.client.put("/api/v1/tags/ops/", {"description": 5}, format="json")
    assert response.status_code == 400 and "description" in response.json()["error"]["fields"]
    response = alice.client.put(f"/api/v1/tags/{'x' * 101}/", {"description": ""}, format="json")
    assert response.status_code == 400 and "name" in response.json()["error"]["fields"]


def test_charlie_sees_none_of_alices_tags(alice, charlie, remember):
    remember("Alice's secret plan", tags=["secret"])
    alice.client.put("/api/v1/tags/secret/", {"description": "hush"}, format="json")
    assert charlie.get("/api/v1/tags/").json() == {
        "results": [],
        "count": 0,
        "limit": 20,
        "offset": 0,
    }
    assert charlie.get("/api/v1/tags/secret/").status_code == 404
    assert charlie.delete("/api/v1/tags/secret/").status_code == 404


# --- MCP -----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_describes_and_lists_tags_and_sqlnative_requires_entity_type(alice):
    async with in_process(alice) as client:
        made = structured(
            await client.call_tool(
                "entity_create",
                {"entities": [{"name": "Ops", "entity_type": "team", "tags": ["infra"]}]},
            )
        )
        described = structured(
            await client.call_tool("tag_describe", {"name": "infra", "description": "Servers"})
        )
        listed = structured(await client.call_tool("tag_list", {}))
    assert made["entities"][0]["entity_type"] == "team"
    assert (described["description"], described["entity_count"]) == ("Servers", 1)
    assert [t["name"] for t in listed["results"]] == ["infra"]

    async with in_process(alice, "sqlnative") as client:
        untyped = await client.call_tool("create_entities", {"entities": [{"name": "Bo"}]})
        typed = await client.call_tool(
            "create_entities", {"entities": [{"name": "Bo", "entity_type": "drummer"}]}
        )
    assert untyped.is_error and "entity_type" in untyped.content[0].text
    assert structured(typed)["entities"][0]["entity_type"] == "drummer"


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_naming_the_same_entity_lose_no_mention():
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from tests.conftest import make_tenant

    alice = make_tenant("alice")
    _entity(alice, "Quorra", entity_type="person")

    def store(index: int) -> int:
        try:
            response = alice.post(
                "/api/v1/memories/",
                {
                    "content": f"Note {index} about Quorra",
                    "user_id": f"u{index}",
                    "entity_names": ["Quorra"],
                },
            )
            return response.status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(store, range(8)))

    assert codes == [201] * 8
    assert Entity.objects.get(project=alice.project, name="Quorra").mention_count == 8
