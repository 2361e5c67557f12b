"""Decay at read time and reinforcement when a memory is returned."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.models import Memory
from memories.selectors.memories import memory_get
from memories.services.reinforcement import (
    memories_reinforce,
    memories_reinforce_later,
    reinforcements_flush,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


def set_age(memory_id: str, days: float, **fields) -> None:
    then = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None, **fields)


@pytest.mark.parametrize(("days", "expected"), [(0, 1.0), (30, 0.5), (60, 0.25)])
def test_effective_confidence_halves_every_thirty_days(alice, remember, days, expected) -> None:
    memory = remember("the build cache lives in /tmp/cache")
    set_age(memory["id"], days)
    found = memory_get(project=alice.project, memory_id=memory["id"])
    assert found.effective_confidence == pytest.approx(expected, rel=1e-3)


def test_half_life_is_configurable(alice, remember, settings) -> None:
    settings.MEMORY_DECAY_HALF_LIFE_DAYS = 10
    memory = remember("the build cache lives in /tmp/cache")
    set_age(memory["id"], 20)
    found = memory_get(project=alice.project, memory_id=memory["id"])
    assert found.effective_confidence == pytest.approx(0.25, rel=1e-3)


def test_get_reinforces_the_memory_it_returns(alice, remember) -> None:
    memory = remember("the build cache lives in /tmp/cache", confidence=0.5)
    set_age(memory["id"], 15)
    body = alice.get(f"{URL}{memory['id']}/").json()
    assert body["access_count"] == 0  # the body is built before the reinforcement
    row = Memory.objects.get(pk=memory["id"])
    assert row.access_count == 1
    assert row.confidence == pytest.approx(0.6)
    assert timezone.now() - row.last_accessed_at < timedelta(minutes=1)
    again = memory_get(project=alice.project, memory_id=memory["id"])
    assert again.effective_confidence == pytest.approx(0.6, rel=1e-3)  # decay clock restarted


def test_confidence_is_capped_at_one(alice, remember) -> None:
    memory = remember("the build cache lives in /tmp/cache", confidence=0.95)
    alice.get(f"{URL}{memory['id']}/")
    alice.get(f"{URL}{memory['id']}/")
    row = Memory.objects.get(pk=memory["id"])
    assert row.confidence == 1.0 and row.access_count == 2


def test_patch_does_not_count_as_an_access(alice, remember) -> None:
    memory = remember("the build cache lives in /tmp/cache")
    alice.patch(f"{URL}{memory['id']}/", {"tags": ["build"]})
    assert Memory.objects.get(pk=memory["id"]).access_count == 0


def test_search_reinforces_every_returned_memory_in_one_update(alice, remember, settings) -> None:
    settings.MEMORY_DEDUP_THRESHOLD = 1.0  # near-identical steps on purpose: no merging
    ids = [remember(f"deploy checklist step {n}", confidence=0.5)["id"] for n in range(5)]
    other = remember("lunch menu on Friday", confidence=0.5)["id"]
    with CaptureQueriesContext(connection) as queries:
        body = alice.post(
            f"{URL}search/", {"query": "deploy checklist", "mode": "keyword", "limit": 5}
        ).json()
    assert sorted(hit["id"] for hit in body["results"]) == sorted(ids)
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    reinforcing = [sql for sql in updates if "access_count" in sql]
    assert len(reinforcing) == 1
    rows = {str(pk): row for pk, row in Memory.objects.in_bulk([*ids, other]).items()}
    assert {rows[pk].access_count for pk in ids} == {1}
    assert [rows[pk].confidence for pk in ids] == [pytest.approx(0.6)] * 5
    assert rows[other].access_count == 0


def test_reinforcement_touches_only_the_callers_project(alice, charlie, remember) -> None:
    memory = remember("alice's memory")
    assert memories_reinforce(project=charlie.project, memory_ids=[memory["id"]]) == 0
    assert charlie.get(f"{URL}{memory['id']}/").status_code == 404
    assert Memory.objects.get(pk=memory["id"]).access_count == 0


def test_deleted_memories_are_not_reinforced(alice, remember) -> None:
    memory = remember("soon gone")
    alice.delete(f"{URL}{memory['id']}/")
    assert memories_reinforce(project=alice.project, memory_ids=[memory["id"]]) == 0


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_reinforcement_runs_beside_the_request_and_lands() -> None:
    import time

    from tests.conftest import make_tenant

    alice = make_tenant("alice")
    created = alice.post(URL, {"content": "the build cache lives in /tmp/cache", "user_id": "u1"})
    memory_id = created.json()["id"]
    response = alice.post(f"{URL}search/", {"query": "build cache", "mode": "keyword"})
    assert [hit["id"] for hit in response.json()["results"]] == [memory_id]
    deadline = time.monotonic() + 10
    while Memory.objects.get(pk=memory_id).access_count == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Memory.objects.get(pk=memory_id).access_count == 1


@pytest.mark.django_db(transaction=True)
def test_reads_of_one_interval_are_merged_into_one_update_that_counts_each(settings) -> None:
    """A busy server runs one reinforcement UPDATE per interval; a memory read three times in
    it ends as three separate reinforcements would have left it, and a memory id sent with
    another project's key is not touched."""
    from tests.conftest import make_tenant

    settings.MEMORY_REINFORCEMENT_DELAY_MS = 5000  # the test flushes before the thread does
    alice, charlie = make_tenant("alice"), make_tenant("charlie")
    scope = {"user_id": "u1"}
    often = alice.post(
        URL, {"content": "the build cache lives in /tmp/cache", "confidence": 0.75, **scope}
    )
    once = alice.post(URL, {"content": "deploys go out on Tuesdays", "confidence": 0.5, **scope})
    often_id, once_id = often.json()["id"], once.json()["id"]
    for _ in range(3):
        memories_reinforce_later(project=alice.project, memory_ids=[often_id])
    memories_reinforce_later(project=alice.project, memory_ids=[once_id, once_id])
    memories_reinforce_later(project=charlie.project, memory_ids=[often_id])
    before_flush = timezone.now()
    assert Memory.objects.get(pk=often_id).access_count == 0  # queued, not yet applied

    with CaptureQueriesContext(connection) as queries:
        assert reinforcements_flush() == 2
    assert [q["sql"][:6] for q in queries.captured_queries] == ["UPDATE"]
    often_row, once_row = Memory.objects.get(pk=often_id), Memory.objects.get(pk=once_id)
    assert (often_row.access_count, often_row.confidence) == (3, 1.0)  # 0.75 + 0.3, capped
    assert (once_row.access_count, once_row.confidence) == (1, pytest.approx(0.6))
    assert often_row.last_accessed_at <= before_flush  # the time of the read, not the update
    assert reinforcements_flush() == 0


@pytest.mark.django_db(transaction=True)
def test_a_forked_process_does_not_apply_its_parents_queued_reads_again(settings) -> None:
    """A server that forks workers (or a job runner) must not count a read twice."""
    import os

    from tests.conftest import make_tenant

    settings.MEMORY_REINFORCEMENT_DELAY_MS = 5000
    alice = make_tenant("alice")
    memory_id = alice.post(URL, {"content": "the build cache", "user_id": "u1"}).json()["id"]
    memories_reinforce_later(project=alice.project, memory_ids=[memory_id])
    pid = os.fork()
    if pid == 0:  # the child: its own connection (the parent's stays untouched), then flush
        inherited = connection.connection  # kept referenced: never closed from here
        connection.connection = None
        try:
            applied = reinforcements_flush()
            connection.close()
        finally:
            os._exit(0 if applied == 0 and inherited is not None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert reinforcements_flush() == 1
    assert Memory.objects.get(pk=memory_id).access_count == 1
