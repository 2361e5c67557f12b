"""The keyword (GIN) indexes' bloat: estimated from their density at build, and rebuilt
concurrently once past the limit, with the figure in the metrics."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection

from memories.models import Memory
from memories.services.content import content_hash
from memories.services.keyword_index import keyword_indexes_bloat, keyword_indexes_maintain
from platformcore.db.rls import as_owner
from platformcore.metrics import KEYWORD_INDEX_BLOAT, MAINTENANCE_ITEMS
from tenants.services import project_create

pytestmark = pytest.mark.django_db(transaction=True)
INDEX = "memory_search_vector_gin"
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def store(project, count: int) -> None:
    rows = []
    for n in range(count):
        text = f"note {n} about {WORDS[n % 13]} {WORDS[(n * 7) % 13]} and item{n}"
        rows.append(
            Memory(project=project, content=text, content_hash=content_hash(text), user_id="u1")
        )
    Memory.objects.bulk_create(rows)


def vacuum() -> None:
    """As autovacuum would (the table's owner: the runtime role may not vacuum)."""
    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")


def comment() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT obj_description(%s::regclass, 'pg_class')", [INDEX])
        return json.loads(cursor.fetchone()[0] or "{}")


def measured(name: str):
    return next(item for item in keyword_indexes_bloat() if item.index == name)


def test_an_index_measured_first_reads_no_bloat_and_records_its_density():
    store(project_create(slug="gin-alice"), 300)
    vacuum()
    first = measured(INDEX)
    assert first.bloat == 0.0 and first.rows == 300
    assert comment()["bytes_per_row_at_build"] == pytest.approx(first.size_bytes / 300, rel=1e-3)
    names = {item.index for item in keyword_indexes_bloat()}
    assert {"memory_tags_gin", "chunk_search_vector_gin", "entity_lookup_keys_gin"} <= names


def test_an_index_whose_rows_were_deleted_is_reindexed_concurrently_once_past_the_limit():
    project = project_create(slug="gin-bob")
    store(project, 2000)
    vacuum()
    baseline = measured(INDEX)
    Memory.objects.filter(project=project, content__regex=r"item[0-9]*[1-9]$").delete()
    vacuum()
    worn = measured(INDEX)
    assert worn.rows == 200 and worn.size_bytes >= baseline.size_bytes
    assert worn.bloat > 0.5

    checked = keyword_indexes_maintain(max_bloat=0.3, min_bytes=0, reindex=False)
    assert not any(item.reindexed for item in checked)
    before = MAINTENANCE_ITEMS.labels("keyword_reindex", INDEX)._value.get()
    report = {item.index: item for item in keyword_indexes_maintain(max_bloat=0.3, min_bytes=0)}
    assert report[INDEX].reindexed
    assert report[INDEX].size_bytes < worn.size_bytes
    assert measured(INDEX).bloat < 0.1
    assert KEYWORD_INDEX_BLOAT.labels(INDEX)._value.get() == 0.0
    assert MAINTENANCE_ITEMS.labels("keyword_reindex", INDEX)._value.get() == before + 1
    assert Memory.objects.filter(project=project, content__search="charlie").exists()


def test_the_command_reports_each_index_and_reindexes_nothing_when_checking_only(capsys):
    call_command("keyword_index_health", "--check-only")
    out = capsys.readouterr().out
    assert INDEX in out and "reindexed" not in out
