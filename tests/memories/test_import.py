"""Importing memories: the service (batches, several in flight) and `manage.py import_memories`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memories.models import Memory
from memories.services.importing import ImportFailed, memories_import
from memories.services.memories import MemoryInput
from platformcore.lib.actor import command
from tenants.services import project_create

TEXTS = [
    "The billing service stores invoices in PostgreSQL",
    "Alice prefers dark mode in every editor",
    "Deploys are frozen on Fridays after 3 pm",
    "The mobile app crashes when the camera permission is denied",
    "Our on-call rotation changes every Monday morning",
    "Bob is allergic to peanuts",
    "The search cluster runs on three nodes in Frankfurt",
    "Quarterly planning happens in the first week of March",
    "Carol likes hiking in the Alps during summer",
    "The payments API times out when the bank gateway is slow",
    "Use ruff to lint every Python file before committing",
]


@pytest.mark.django_db(transaction=True)
def test_import_keeps_several_batches_in_flight_and_applies_every_write_rule() -> None:
    project = project_create(slug="importer")
    items = [MemoryInput(content=text, user_id=f"u{n % 3}") for n, text in enumerate(TEXTS)]
    items.append(MemoryInput(content=TEXTS[0], user_id="u0"))  # exact duplicate, later batch
    seen: list[int] = []
    summary = memories_import(
        project=project,
        items=iter(items),
        actor=command("test"),
        batch_size=4,
        in_flight=2,
        progress=seen.append,
    )
    assert summary.items == len(items) and sum(seen) == len(items)
    stored = Memory.objects.filter(project=project, deleted_at__isnull=True)
    assert summary.created == stored.count() and summary.existing == len(items) - summary.created
    assert stored.filter(content=TEXTS[0]).count() == 1
    assert stored.filter(embedding__isnull=True).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_failed_batch_stops_the_import_and_says_where() -> None:
    project = project_create(slug="importer")
    items = [MemoryInput(content=text, user_id="u1") for text in TEXTS[:8]]
    items[5] = MemoryInput(content="no scope at all")  # batch 2 (items 4-7) fails
    with pytest.raises(ImportFailed) as failed:
        memories_import(project=project, items=items, actor=command("test"), batch_size=4)
    summary = failed.value.summary
    assert summary.failed_at == 4 and summary.items == 4 and "item 5" in summary.error
    assert set(Memory.objects.filter(project=project).values_list("content", flat=True)) == set(
        TEXTS[:4]
    )


@pytest.mark.django_db
def test_out_of_range_batch_or_in_flight_is_refused() -> None:
    project = project_create(slug="importer")
    with pytest.raises(Exception, match="batch_size"):
        memories_import(project=project, items=[], actor=command("t"), batch_size=0)
    with pytest.raises(Exception, match="in_flight"):
        memories_import(project=project, items=[], actor=command("t"), in_flight=99)


@pytest.mark.django_db
def test_import_memories_command_reads_json_lines(tmp_path) -> None:
    project_create(slug="acme")
    path = tmp_path / "memories.jsonl"
    lines = [{"content": text, "user_id": "alice", "tags": ["imported"]} for text in TEXTS[:5]]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    out = StringIO()
    call_command("import_memories", str(path), project="acme", no_progress=True, stdout=out)
    assert "5 memories imported into acme: 5 new" in out.getvalue()
    assert Memory.objects.filter(project__slug="acme", tags__contains=["imported"]).count() == 5


@pytest.mark.django_db
def test_import_memories_command_can_leave_near_duplicates_to_consolidation(tmp_path) -> None:
    project = project_create(slug="acme")
    project.settings = {"consolidation_interval": 0}
    project.save()
    hooks = "React hooks let you use state in function components"
    again = "React hooks allow using state inside function components"
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(json.dumps({"content": c, "user_id": "u"}) for c in (hooks, again)))
    out = StringIO()
    call_command(
        "import_memories",
        str(path),
        project="acme",
        near_duplicates="consolidation",
        no_progress=True,
        stdout=out,
    )
    assert "2 memories imported into acme: 2 new" in out.getvalue()
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("import_memories", str(path), "--near-duplicates=later", project="acme")


@pytest.mark.django_db
def test_import_memories_command_stores_nothing_when_a_line_is_bad(tmp_path) -> None:
    project_create(slug="acme")
    path = tmp_path / "memories.jsonl"
    path.write_text(
        json.dumps({"content": "fine", "user_id": "alice"})
        + "\n{not json\n"
        + json.dumps({"content": "", "user_id": "alice"})
        + "\n"
    )
    with pytest.raises(CommandError) as error:
        call_command("import_memories", str(path), project="acme", no_progress=True)
    assert "line 2: not JSON" in str(error.value) and "line 3:" in str(error.value)
    assert "content" in str(error.value)
    assert not Memory.objects.filter(project__slug="acme").exists()
    with pytest.raises(CommandError, match="no project"):
        call_command("import_memories", str(path), project="nope", no_progress=True)
