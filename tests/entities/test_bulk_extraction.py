"""The graph side of bulk writes: set-wise resolution, links and relations, with the result of
storing the same memories one at a time."""

from __future__ import annotations

import asyncio
import random

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from django.test.utils import CaptureQueriesContext

from entities.models import Entity, EntityMemory, Relation
from entities.services.entities import EntitySpec, entities_resolve
from entities.services.memory_graph import memories_stored
from memories.models import Memory
from memories.services.bulk import memories_create_bulk
from memories.services.memories import MemoryInput, memory_create
from platformcore.events import project_group
from platformcore.lib.actor import SYSTEM
from tests.fakes.openai_server import tool_calls


@pytest.fixture(autouse=True)
def _one_graph(settings):
    """These stories are about one graph built from many memories (one scope each, so the
    memory store's own near-duplicate merge stays out of them): the project-wide graph.
    tests/entities/test_scoped_graphs.py has the per-scope graphs."""
    settings.MEMORY_GRAPH_SCOPE = "project"


# Facts that reinforce, supersede (works_at is single-valued), retract and re-state, names
# given on store that a later memory types, and spellings that differ by case or punctuation.
STORY = [
    ("Alice works at Google", []),
    ("Alice uses PostgreSQL and Redis", []),
    ("Bob uses PostgreSQL", ["Ops"]),
    ("Alice works at Google, in the search team", []),
    ("Lunch with Erin", ["Erin", "Ops"]),
    ("Alice works at OpenAI", []),
    ("Carol manages Dave", []),
    ("Dave uses Kubernetes", ["Ops", "Dave"]),
    ("Bob no longer uses PostgreSQL", []),
    ("Erin works at Stripe", []),
    ("Alice uses Redis for the cache", []),
    ("Bob uses PostgreSQL again", []),
    ("Alice works at Google", ["Google"]),
    ("Carol collaborates with Erin and Dave", []),
    ("Hugo uses Node.js", []),
    ("Ivan uses NodeJS", []),  # a near-duplicate spelling of a name new in this batch
    ("Hugo uses Docker", ["node.js"]),
]


def items(story: list[tuple[str, list[str]]]) -> list[MemoryInput]:
    # one scope per memory: the memory-side near-duplicate merge stays out of the comparison
    return [
        MemoryInput(content=text, user_id=f"u{index}", entity_names=names)
        for index, (text, names) in enumerate(story)
    ]


def snapshot(project) -> dict[str, object]:
    entities = {
        (e.name, e.entity_type, tuple(sorted(e.aliases)), e.description)
        for e in Entity.objects.filter(project=project)
    }
    links = {
        (link.memory.content, link.entity.name, link.relevance)
        for link in EntityMemory.objects.filter(project=project).select_related("memory", "entity")
    }
    relations = sorted(
        (
            r.source.name,
            r.relation_type,
            r.target.name,
            r.valid_to is None and r.invalidated_at is None,
            round(r.strength, 9),
            r.confidence,
            r.context,
        )
        for r in Relation.objects.filter(project=project).select_related("source", "target")
    )
    return {"entities": entities, "links": links, "relations": relations}


def test_a_bulk_write_builds_the_same_graph_as_storing_the_memories_one_by_one(alice, bob):
    memories_create_bulk(project=alice.project, items=items(STORY), actor=SYSTEM)
    for item in items(STORY):
        memory_create(project=bob.project, data=item, actor=SYSTEM)

    bulk, one_by_one = snapshot(alice.project), snapshot(bob.project)
    assert bulk == one_by_one
    assert ("Alice", "works_at", "Google", True) in [r[:4] for r in bulk["relations"]]
    assert ("Alice", "works_at", "OpenAI", False) in [r[:4] for r in bulk["relations"]]
    assert ("Bob", "uses", "PostgreSQL", False) in [r[:4] for r in bulk["relations"]]


def test_names_given_on_a_bulk_write_reuse_entities_match_aliases_and_get_typed(alice):
    google, frank = entities_resolve(
        project=alice.project,
        specs=[EntitySpec("Google", "organization", aliases=["Alphabet"]), EntitySpec("Frank")],
    )
    results = memories_create_bulk(
        project=alice.project,
        items=[
            MemoryInput(content="Quarterly review notes", user_id="u1", entity_names=["Google"]),
            MemoryInput(content="Search ads planning", user_id="u2", entity_names=["alphabet"]),
            MemoryInput(content="Met Frank for coffee", user_id="u3", entity_names=["Frank"]),
            MemoryInput(content="Frank works at Stripe", user_id="u4"),
            MemoryInput(content="Call about the offsite", user_id="u5", entity_names=["Nadia"]),
            MemoryInput(content="Nadia works at Stripe", user_id="u6"),
        ],
        actor=SYSTEM,
    )

    def linked(index: int, relevance: float = 1.0) -> set[int]:
        links = EntityMemory.objects.filter(memory=results[index].memory, relevance=relevance)
        return set(links.values_list("entity_id", flat=True))

    assert linked(0) == linked(1) == {google.pk}
    assert linked(2) == {frank.pk}
    frank.refresh_from_db()
    assert frank.entity_type == "person"
    nadia = Entity.objects.get(project=alice.project, name="Nadia")
    assert nadia.entity_type == "person"
    assert linked(4) == {nadia.pk}
    assert nadia.pk in linked(5, relevance=0.8)
    assert Entity.objects.filter(project=alice.project, normalized_name="google").count() == 1


async def _events(channel: str) -> list[dict]:
    layer, events = get_channel_layer(), []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 0.2)
        except TimeoutError:
            return events
        events.append(message["event"])


def test_a_new_entity_mentioned_by_several_memories_of_a_batch_is_created_once(
    alice, django_capture_on_commit_callbacks
):
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(project_group(alice.project.pk), channel)
    texts = ["Quentin uses Terraform", "Quentin works at Stripe", "Rosa uses Terraform daily"]
    with django_capture_on_commit_callbacks(execute=True):
        results = memories_create_bulk(
            project=alice.project,
            items=[MemoryInput(content=text, user_id=f"u{i}") for i, text in enumerate(texts)],
            actor=SYSTEM,
        )

    quentin = Entity.objects.get(project=alice.project, name="Quentin")
    terraform = Entity.objects.get(project=alice.project, name="Terraform")
    links = EntityMemory.objects.filter(project=alice.project)
    assert set(links.filter(entity=quentin).values_list("memory_id", flat=True)) == {
        results[0].memory.pk,
        results[1].memory.pk,
    }
    assert links.filter(entity=terraform).count() == 2
    created = [
        event["data"]["name"]
        for event in async_to_sync(_events)(channel)
        if event["type"] == "entity_created"
    ]
    assert sorted(created) == ["Quentin", "Rosa", "Stripe", "Terraform"]


def test_a_memory_whose_extraction_fails_is_stored_and_the_others_keep_their_graph(alice):
    too_long = "Overlong" + "name" * 80  # one capitalised word of 328 characters
    texts = ["Grace works at Stripe", f"Lunch with {too_long} about Kubernetes", "Hugo uses Docker"]
    results = memories_create_bulk(
        project=alice.project,
        items=[MemoryInput(content=text, user_id=f"u{i}") for i, text in enumerate(texts)],
        actor=SYSTEM,
    )

    assert all(result.created for result in results)
    assert Memory.objects.filter(project=alice.project).count() == 3
    pairs = set(
        Relation.objects.filter(project=alice.project).values_list("source__name", "target__name")
    )
    assert pairs == {("Grace", "Stripe"), ("Hugo", "Docker")}
    assert not EntityMemory.objects.filter(memory=results[1].memory).exists()


def test_a_name_another_writer_inserted_meanwhile_is_folded_into_theirs(alice):
    from entities.services.resolution import _Batch

    spec = EntitySpec("Zora", "person", description="runs the data team").cleaned(
        project=alice.project
    )
    batch = _Batch.load(alice.project, [spec])  # before the other writer's row exists
    theirs = Entity.objects.create(
        project=alice.project, name="Zora", normalized_name="zora", entity_type="person",
        lookup_keys=["zora"],
    )  # fmt: skip
    slots = batch.resolve_group([spec])
    batch.flush()

    assert batch.entities[slots[0]].pk == theirs.pk
    theirs.refresh_from_db()
    assert theirs.description == "runs the data team"
    assert Entity.objects.filter(project=alice.project, name="Zora").count() == 1


def llm_entities(*entities: dict) -> tuple[str, dict]:
    return ("extract_entities", {"entities": list(entities)})


def test_a_batch_that_fails_in_the_database_falls_back_to_one_memory_at_a_time(
    alice, fake_openai, settings
):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    fake_openai.reply(
        tool_calls([llm_entities({"name": "Ivy", "type": "person"})]),
        # PostgreSQL text cannot hold NUL: this memory's entity cannot be stored
        tool_calls([llm_entities({"name": "Jade", "type": "person", "description": "a\x00b"})]),
        tool_calls([llm_entities({"name": "Kai", "type": "person"})]),
    )
    texts = ["first note", "second note", "third note"]
    results = memories_create_bulk(
        project=alice.project,
        items=[MemoryInput(content=text, user_id=f"u{i}") for i, text in enumerate(texts)],
        actor=SYSTEM,
    )

    assert Memory.objects.filter(project=alice.project).count() == 3
    names = set(Entity.objects.filter(project=alice.project).values_list("name", flat=True))
    assert names == {"Ivy", "Kai"}
    assert EntityMemory.objects.filter(memory=results[2].memory).count() == 1


PEOPLE = ["Alice", "Bob", "Carol", "Dave", "Erin", "Farid", "Grace", "Hiro"]
ORGS = ["Google", "Stripe", "Acme Corp", "Shopify"]
TOOLS = ["PostgreSQL", "Redis", "Kubernetes", "Docker", "Terraform", "Django"]
TEMPLATES = [
    "{p} works at {o}",
    "{p} uses {t} and {t2}",
    "{p} collaborates with {p2}",
    "{p} no longer uses {t}",
    "{p} manages {p2}",
]


def generated(count: int, rng: random.Random) -> list[MemoryInput]:
    texts = []
    for index in range(count):
        p, p2 = rng.sample(PEOPLE, 2)
        t, t2 = rng.sample(TOOLS, 2)
        text = rng.choice(TEMPLATES).format(p=p, p2=p2, o=rng.choice(ORGS), t=t, t2=t2)
        texts.append(f"{text} (note {index})")
    return [MemoryInput(content=text, user_id=f"u{i}") for i, text in enumerate(texts)]


def graph_step_queries(project, batch: list[MemoryInput], settings) -> int:
    settings.MEMORY_GRAPH_EXTRACTION = "off"  # the write stores; its graph step is measured
    results = memories_create_bulk(project=project, items=batch, actor=SYSTEM)
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    with CaptureQueriesContext(connection) as queries:
        memories_stored(project=project, stored=[(r.memory, True, []) for r in results])
    return len(queries)


def test_the_graph_step_of_a_bulk_write_needs_no_more_queries_for_more_memories(alice, settings):
    memories = generated(80, random.Random(3))
    graph_step_queries(alice.project, memories[:20], settings)  # a graph exists, as usual

    ten = graph_step_queries(alice.project, memories[20:30], settings)
    fifty = graph_step_queries(alice.project, memories[30:80], settings)

    assert fifty <= ten + 2
    assert fifty <= 25
