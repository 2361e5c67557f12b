"""update_rows writes each row's own values, whatever they hold, and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memories.models import Memory
from memories.services.memories import MemoryInput, memory_create
from platformcore.lib.actor import SYSTEM
from platformcore.lib.bulk import update_rows


@pytest.fixture
def stored(alice):
    def store(content: str) -> Memory:
        data = MemoryInput(content=content, user_id="u1", tags=["keep"], metadata={"a": 1})
        return memory_create(project=alice.project, data=data, actor=SYSTEM).memory

    return store


def test_each_row_gets_its_own_values_of_every_kind(stored):
    first, second, untouched = stored("Ada likes tea"), stored("Bo plays go"), stored("Cy runs")
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    first.tags = ['comma, "quote"', "{brace}", "back\\slash", "ünï"]
    first.metadata = {"nested": {"list": [1, None, "x"]}, "quote": "it's"}
    first.confidence, first.version, first.pinned, first.updated_at = 0.25, 7, True, when
    second.tags, second.metadata, second.confidence = [], {}, 0.75
    second.embedding = [0.5] * len(second.embedding)
    first.expires_at, second.expires_at = when, None
    second.agent_id = "agent-7"

    assert (
        update_rows(
            [first, second],
            [
                "tags",
                "metadata",
                "confidence",
                "version",
                "pinned",
                "updated_at",
                "embedding",
                "expires_at",
                "agent_id",
            ],
        )
        == 2
    )

    one, two, three = (Memory.objects.get(pk=m.pk) for m in (first, second, untouched))
    assert one.tags == ['comma, "quote"', "{brace}", "back\\slash", "ünï"]
    assert one.metadata == {"nested": {"list": [1, None, "x"]}, "quote": "it's"}
    assert (one.confidence, one.version, one.pinned, one.updated_at) == (0.25, 7, True, when)
    assert (two.tags, two.metadata, two.confidence, two.agent_id) == ([], {}, 0.75, "agent-7")
    assert (one.expires_at, two.expires_at) == (when, None)
    assert list(two.embedding) == [0.5] * len(second.embedding)
    assert (three.tags, three.metadata, three.confidence) == (["keep"], {"a": 1}, 1.0)


def test_fields_not_named_are_left_alone_and_a_missing_row_is_skipped(stored):
    memory = stored("Dee writes Rust")
    memory.confidence, memory.importance = 0.1, 0.9
    gone = Memory(pk="00000000-0000-0000-0000-000000000000", confidence=0.5)
    assert update_rows([memory, gone], ["confidence"]) == 1
    row = Memory.objects.get(pk=memory.pk)
    assert (row.confidence, row.importance) == (0.1, 0.5)
    assert update_rows([], ["confidence"]) == 0


def test_bulk_writes_store_every_character_as_given(alice):
    from memories.services.bulk import memories_create_bulk

    content = 'Tab\there, newline\nthere, back\\slash, "quotes", \\N and {braces} ünï 🙂'
    items = [
        MemoryInput(
            content=content,
            user_id="u1",
            tags=['comma, "quote"', "{brace}", "back\\slash", "\\N"],
            metadata={"nested": {"list": [1, None, "x\ty"]}, "none": None, "quote": "it's"},
            context="line one\nline two",
        ),
        MemoryInput(content="Plain memory", user_id="u2"),
    ]
    results = memories_create_bulk(project=alice.project, items=items, actor=SYSTEM)
    first = Memory.objects.get(pk=results[0].memory.pk)
    assert first.content == content
    assert first.tags == ['comma, "quote"', "{brace}", "back\\slash", "\\N"]
    assert first.metadata == {"nested": {"list": [1, None, "x\ty"]}, "none": None, "quote": "it's"}
    assert first.context == "line one\nline two"
    second = Memory.objects.get(pk=results[1].memory.pk)
    assert (second.tags, second.metadata, second.agent_id) == ([], {}, None)
    assert first.history.count() == 1 and second.embedding is not None
