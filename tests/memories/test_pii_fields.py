"""Every stored text field is masked, through REST and through MCP, by the one chokepoint
(`memories.services.pii.scrub_for_storage`): memory content, context, tags and metadata;
entity names, aliases, descriptions and metadata; relation context and metadata; link
metadata; feedback text; contradiction notes. The project's PII setting decides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from analytics.models import ToolFeedback
from entities.models import Entity, Relation
from memories.models import ContradictionReview, Memory, MemoryLink
from tests.mcpserver.conftest import in_process, structured

MAIL = "bob\u200b@example.com"  # a zero-width space must not hide it
MASKED = "[REDACTED_EMAIL]"


def assert_masked(*values: Any) -> None:
    text = json.dumps(values, ensure_ascii=False)
    assert "example.com" not in text
    assert MASKED in text


def _memory(alice, content: str = "plain fact", **fields: Any) -> dict[str, Any]:
    response = alice.post("/api/v1/memories/", {"content": content, "user_id": "u1", **fields})
    assert response.status_code == 201, response.json()
    return response.json()


# --- REST ------------------------------------------------------------------------------------


def test_rest_masks_every_text_field_of_a_new_memory(alice):
    stored = _memory(
        alice,
        content=f"write to {MAIL}",
        context=f"asked for {MAIL}",
        tags=["ops", f"owner {MAIL}"],
        metadata={"owner": {"mail": MAIL, "cc": [MAIL]}, "api_key": "abc123", "n": 3},
    )
    row = Memory.objects.get(pk=stored["id"])
    assert row.content == f"write to {MASKED}"
    assert row.context == f"asked for {MASKED}"
    assert row.tags == ["ops", f"owner {MASKED}"]
    assert row.metadata == {
        "owner": {"mail": MASKED, "cc": [MASKED]},
        "api_key": "[REDACTED_SECRET]",
        "n": 3,
    }


def test_rest_masks_tags_and_metadata_on_update(alice):
    stored = _memory(alice)
    response = alice.patch(
        f"/api/v1/memories/{stored['id']}/",
        {"tags": [MAIL], "metadata": {"deep": [{"mail": MAIL}]}},
    )
    assert response.status_code == 200, response.json()
    row = Memory.objects.get(pk=stored["id"])
    assert (row.tags, row.metadata) == ([MASKED], {"deep": [{"mail": MASKED}]})


def test_rest_masks_entity_names_aliases_descriptions_and_metadata(alice):
    response = alice.post(
        "/api/v1/entities/",
        {
            "name": f"Bob {MAIL}",
            "entity_type": "person",
            "aliases": [MAIL, "Bobby"],
            "description": f"reach him at {MAIL}",
            "metadata": {"contact": MAIL, "password": "hunter2"},
        },
    )
    assert response.status_code == 201, response.json()
    entity = Entity.objects.get(pk=response.json()["id"])
    assert entity.name == f"Bob {MASKED}"
    assert entity.aliases == [MASKED, "Bobby"]
    assert entity.description == f"reach him at {MASKED}"
    assert entity.metadata == {"contact": MASKED, "password": "[REDACTED_SECRET]"}
    assert_masked(response.json())


def test_rest_masks_an_entity_update(alice):
    created = alice.post("/api/v1/entities/", {"name": "Carol", "entity_type": "person"}).json()
    response = alice.patch(
        f"/api/v1/entities/{created['id']}/",
        {"description": f"mail {MAIL}", "aliases": [MAIL], "metadata": {"m": MAIL}},
    )
    assert response.status_code == 200, response.json()
    entity = Entity.objects.get(pk=created["id"])
    assert_masked(entity.description, entity.aliases, entity.metadata)


def test_rest_masks_relation_context_and_metadata(alice):
    response = alice.post(
        "/api/v1/relations/",
        {
            "source": "Alice",
            "target": "Acme",
            "relation_type": "works_at",
            "context": f"her badge says {MAIL}",
            "metadata": {"by": MAIL},
        },
    )
    assert response.status_code == 201, response.json()
    relation = Relation.objects.get(project=alice.project)
    assert relation.context == f"her badge says {MASKED}"
    assert relation.metadata == {"by": MASKED}


def test_rest_masks_link_metadata(alice):
    first, second = _memory(alice, "first fact"), _memory(alice, "second fact")
    response = alice.post(
        f"/api/v1/memories/{first['id']}/links/",
        {"to_id": second["id"], "metadata": {"why": f"{MAIL} said so", "token": "t0k3n"}},
    )
    assert response.status_code in (200, 201), response.json()
    link = MemoryLink.objects.get(from_memory_id=first["id"], to_memory_id=second["id"])
    assert link.metadata == {"why": f"{MASKED} said so", "token": "[REDACTED_SECRET]"}


def test_rest_masks_a_contradiction_note(alice):
    a, b = _memory(alice, "User is vegetarian"), _memory(alice, "User eats meat")
    review = ContradictionReview.objects.create(
        project=alice.project, memory_a_id=a["id"], memory_b_id=b["id"]
    )
    response = alice.post(
        f"/api/v1/contradictions/{review.pk}/resolve/",
        {"resolution": "keep_both", "note": f"checked with {MAIL}"},
    )
    assert response.status_code == 200, response.json()
    review.refresh_from_db()
    assert review.note == f"checked with {MASKED}"


def test_masking_off_for_the_project_stores_every_field_as_given(alice):
    alice.project.settings = {"pii_masking": False}
    alice.project.save()
    stored = _memory(alice, content=f"mail {MAIL}", tags=[MAIL], metadata={"api_key": "abc"})
    entity = alice.post("/api/v1/entities/", {"name": "Dan", "description": MAIL}).json()
    row = Memory.objects.get(pk=stored["id"])
    assert (row.content, row.tags, row.metadata) == (f"mail {MAIL}", [MAIL], {"api_key": "abc"})
    assert Entity.objects.get(pk=entity["id"]).description == MAIL


def test_masking_off_globally_is_overridden_by_a_project_that_wants_it(alice, settings):
    settings.MEMORY_PII_MASKING = False
    assert Memory.objects.get(pk=_memory(alice, f"a {MAIL}")["id"]).content == f"a {MAIL}"
    alice.project.settings = {"pii_masking": True}
    alice.project.save()
    assert Memory.objects.get(pk=_memory(alice, f"b {MAIL}")["id"]).content == f"b {MASKED}"


def test_another_projects_switch_does_not_unmask_mine(alice, bob):
    alice.project.settings = {"pii_masking": False}
    alice.project.save()
    response = bob.post("/api/v1/entities/", {"name": "Eve", "description": MAIL})
    assert Entity.objects.get(pk=response.json()["id"]).description == MASKED


# --- MCP -------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_store_masks_content_context_tags_metadata_and_entity_names(alice):
    async with in_process(alice) as client:
        stored = structured(
            await client.call_tool(
                "memory_store",
                {
                    "content": f"write to {MAIL}",
                    "context": f"asked for {MAIL}",
                    "tags": [MAIL],
                    "metadata": {"who": [MAIL], "secret": "s3"},
                    "entity_names": [f"Bob {MAIL}"],
                },
            )
        )
    assert_masked(stored)
    row = await Memory.objects.aget(pk=stored["memory"]["id"])
    assert row.content == f"write to {MASKED}" and row.context == f"asked for {MASKED}"
    assert (row.tags, row.metadata) == ([MASKED], {"who": [MASKED], "secret": "[REDACTED_SECRET]"})
    names = [name async for name in Entity.objects.values_list("name", flat=True)]
    assert names == [f"Bob {MASKED}"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_graph_link_and_feedback_tools_mask_their_text(alice):
    async with in_process(alice) as client:
        graph = structured(
            await client.call_tool(
                "entity_create",
                {
                    "entities": [
                        {
                            "name": "Frank",
                            "entity_type": "person",
                            "aliases": [MAIL],
                            "description": f"mail {MAIL}",
                            "metadata": {"m": MAIL},
                        }
                    ],
                    "relations": [
                        {
                            "source": "Frank",
                            "target": "Acme",
                            "relation_type": "works_at",
                            "context": f"per {MAIL}",
                        }
                    ],
                },
            )
        )
        first = structured(await client.call_tool("memory_store", {"content": "one fact"}))
        second = structured(await client.call_tool("memory_store", {"content": "two facts"}))
        first, second = first["memory"], second["memory"]
        structured(
            await client.call_tool(
                "memory_link",
                {"from_id": first["id"], "to_id": second["id"], "metadata": {"why": MAIL}},
            )
        )
        structured(
            await client.call_tool(
                "tool_feedback",
                {
                    "tool_name": "memory_search",
                    "relevant": False,
                    "sufficient": False,
                    "suggestion": f"ask {MAIL}",
                    "context": f"looking for {MAIL}",
                },
            )
        )
    assert_masked(graph)
    entity = await Entity.objects.aget(name="Frank")
    assert_masked(entity.aliases, entity.description, entity.metadata)
    relation = await Relation.objects.aget(relation_type="works_at")
    assert relation.context == f"per {MASKED}"
    link = await MemoryLink.objects.aget(from_memory_id=first["id"], to_memory_id=second["id"])
    assert link.metadata == {"why": MASKED}
    feedback = await ToolFeedback.objects.aget(tool_name="memory_search")
    assert (feedback.suggestion, feedback.context) == (f"ask {MASKED}", f"looking for {MASKED}")
