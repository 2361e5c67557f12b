"""Entities and relations extracted from stored memories: offline and with an LLM."""

from __future__ import annotations

import pytest

from entities.models import Entity, EntityMemory, Relation
from entities.services.graph_extraction import extract_offline
from tests.fakes.openai_server import tool_calls


def graph_of(project) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    entities = dict(Entity.objects.filter(project=project).values_list("name", "entity_type"))
    relations = {
        (r.source.name, r.relation_type, r.target.name)
        for r in Relation.objects.filter(project=project).open().select_related("source", "target")
    }
    return entities, relations


@pytest.mark.parametrize("text", ["Alice works at Google", "Alice at Google"])
def test_offline_extraction_finds_alice_at_google(text):
    extraction = extract_offline(text)
    assert {(e.name, e.entity_type) for e in extraction.entities} == {
        ("Alice", "person"),
        ("Google", "organization"),
    }
    assert [(r.source, r.relation_type, r.target) for r in extraction.relations] == [
        ("Alice", "works_at", "Google")
    ]


def test_offline_extraction_reads_lists_and_technologies():
    extraction = extract_offline("Bob uses PostgreSQL, Redis and django for the API.")
    assert {(r.source, r.relation_type, r.target) for r in extraction.relations} == {
        ("Bob", "uses", "PostgreSQL"),
        ("Bob", "uses", "Redis"),
        ("Bob", "uses", "Django"),
    }
    assert {e.name: e.entity_type for e in extraction.entities}["Redis"] == "technology"


def test_offline_extraction_ignores_plain_sentences():
    assert extract_offline("The user prefers dark mode").entities == []
    assert [e.name for e in extract_offline("Deploy failed on staging").entities] == []


def test_storing_a_memory_extracts_its_graph_offline(alice, remember):
    memory = remember("Alice works at Google")
    entities, relations = graph_of(alice.project)
    assert entities == {"Alice": "person", "Google": "organization"}
    assert relations == {("Alice", "works_at", "Google")}
    linked = EntityMemory.objects.filter(memory_id=memory["id"]).count()
    assert linked == 2


def test_the_same_fact_twice_reinforces_one_relation(alice, remember):
    remember("Alice works at Google")
    remember("Alice works at Google, in the search team")
    relations = Relation.objects.filter(project=alice.project)
    assert relations.count() == 1
    assert relations.get().strength > 0.5


def test_a_contradicting_fact_closes_the_current_relation(alice, remember):
    remember("Alice works at Google")
    remember("Alice works at OpenAI")
    _, relations = graph_of(alice.project)
    assert relations == {("Alice", "works_at", "OpenAI")}
    closed = Relation.objects.get(project=alice.project, target__name="Google")
    assert closed.valid_to is not None and closed.invalidated_at is not None


def test_a_retraction_closes_the_relation(alice, remember):
    remember("Alice works at Google")
    remember("Alice no longer works at Google")
    _, relations = graph_of(alice.project)
    assert relations == set()
    assert Relation.objects.filter(project=alice.project).count() == 1


def test_a_typed_mention_upgrades_an_unknown_entity(alice, remember):
    # a name no gazetteer knows: only "works at" says it is a person
    remember("Lunch with Quorra", entity_names=["Quorra"])
    assert Entity.objects.get(project=alice.project, name="Quorra").entity_type == "unknown"
    remember("Quorra works at Google")
    assert Entity.objects.filter(project=alice.project, name="Quorra").count() == 1
    assert Entity.objects.get(project=alice.project, name="Quorra").entity_type == "person"


def test_near_duplicate_names_merge_into_one_entity_with_an_alias(alice):
    from entities.services.entities import EntitySpec, entities_resolve

    first = entities_resolve(project=alice.project, specs=[EntitySpec("Node.js", "technology")])[0]
    again = entities_resolve(project=alice.project, specs=[EntitySpec("Node.JS ", "technology")])[0]
    assert again.pk == first.pk
    near = entities_resolve(project=alice.project, specs=[EntitySpec("NodeJS", "technology")])[0]
    assert Entity.objects.filter(project=alice.project).count() in (1, 2)
    if near.pk == first.pk:
        assert "NodeJS" in Entity.objects.get(pk=first.pk).aliases


def test_extraction_can_be_turned_off(alice, remember, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "off"
    remember("Alice works at Google")
    assert not Entity.objects.filter(project=alice.project).exists()


def test_bulk_store_extracts_every_new_memory(alice):
    from memories.services.bulk import memories_create_bulk
    from memories.services.memories import MemoryInput
    from platformcore.lib.actor import SYSTEM

    memories_create_bulk(
        project=alice.project,
        items=[
            MemoryInput(content="Carol manages Dave", user_id="u1"),
            MemoryInput(content="Dave uses Kubernetes", user_id="u1", entity_names=["Ops"]),
        ],
        actor=SYSTEM,
    )
    _, relations = graph_of(alice.project)
    assert relations == {("Carol", "manages", "Dave"), ("Dave", "uses", "Kubernetes")}
    assert Entity.objects.filter(project=alice.project, name="Ops").exists()


ENTITIES = (
    "extract_entities",
    {
        "entities": [
            {"name": "Alice", "type": "person", "description": "an engineer"},
            {"name": "Google", "type": "organization"},
        ]
    },
)
RELATIONS = (
    "extract_relations",
    {"relations": [{"source": "Alice", "relation": "works at", "target": "Google"}]},
)


def test_llm_extraction_uses_the_seed_tools(alice, remember, fake_openai, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    fake_openai.reply(tool_calls([ENTITIES, RELATIONS]))
    remember("She joined the big search company last spring.")
    entities, relations = graph_of(alice.project)
    assert entities == {"Alice": "person", "Google": "organization"}
    assert relations == {("Alice", "works_at", "Google")}
    request = fake_openai.chat_requests()[0]["body"]
    assert {tool["function"]["name"] for tool in request["tools"]} == {
        "extract_entities",
        "extract_relations",
    }
    assert Relation.objects.get(project=alice.project).confidence == 0.9
    assert Entity.objects.get(project=alice.project, name="Alice").description == "an engineer"


def test_a_models_own_word_for_a_relation_type_is_ours_and_a_new_employer_ends_the_old(
    alice, remember, fake_openai, settings
):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    people = ("extract_entities", {"entities": [{"name": "Alice", "type": "person"}]})
    fake_openai.reply(
        tool_calls([people, ("extract_relations", {"relations": [_works_for("Google")]})]),
        tool_calls([people, ("extract_relations", {"relations": [_works_for("Siemens")]})]),
    )
    remember("Alice is at the big search company.")
    remember("Alice moved to the Munich engineering firm.")
    _, relations = graph_of(alice.project)
    assert relations == {("Alice", "works_at", "Siemens")}  # Google's ended, kept in history
    assert Relation.objects.filter(project=alice.project, relation_type="works_at").count() == 2


def _works_for(employer: str) -> dict[str, str]:
    return {"source": "Alice", "relation": "works for", "target": employer}


def test_llm_extraction_runs_as_a_job_after_commit(
    alice, remember, fake_openai, django_capture_on_commit_callbacks
):
    fake_openai.reply(tool_calls([ENTITIES, RELATIONS]))
    with django_capture_on_commit_callbacks(execute=True):
        remember("She joined the big search company last spring.")
    _, relations = graph_of(alice.project)
    assert relations == {("Alice", "works_at", "Google")}


def test_llm_failure_falls_back_to_the_offline_extractor(alice, remember, fake_openai, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    fake_openai.reply(500, 500, 500)
    memory = remember("Alice works at Google")
    assert memory["content"] == "Alice works at Google"
    _, relations = graph_of(alice.project)
    assert relations == {("Alice", "works_at", "Google")}


def test_odd_llm_relations_are_skipped_not_fatal(alice, remember, fake_openai, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    bad = ("extract_relations", {"relations": [{"source": "A", "relation": "!!!", "target": "B"}]})
    fake_openai.reply(tool_calls([bad, ("extract_entities", {"entities": "nonsense"})]))
    memory = remember("Something happened")
    assert memory["id"]
    assert not Relation.objects.filter(project=alice.project).exists()


def test_updating_a_memory_with_a_new_fact_updates_the_graph(alice, remember):
    memory = remember("Alice works at Google")
    response = alice.patch(
        f"/api/v1/memories/{memory['id']}/", {"content": "Alice works at OpenAI"}
    )
    assert response.status_code == 200
    _, relations = graph_of(alice.project)
    assert relations == {("Alice", "works_at", "OpenAI")}
