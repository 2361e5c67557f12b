"""Concurrent writes on real connections (one per thread, committed): duplicates stored at the
same moment through different entry points give one memory with one history entry, and
concurrent updates of one memory each leave a version and a history entry, none lost."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from django.db import connection

from memories.models import HistoryEvent, Memory, MemoryHistory
from platformcore.lib.project_scope import all_projects
from tests.conftest import Tenant, make_tenant

T = TypeVar("T")


def at_once(calls: list[Callable[[], T]]) -> list[T]:
    """Run `calls` on as many threads, released together; each thread its own connection."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T:
        try:
            barrier.wait(timeout=30)
            return call()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def single(tenant: Tenant, content: str) -> Callable[[], tuple[int, str]]:
    def call() -> tuple[int, str]:
        response = tenant.post("/api/v1/memories/", {"content": content, "user_id": "u1"})
        return response.status_code, response.json()["id"]

    return call


def in_bulk(tenant: Tenant, content: str) -> Callable[[], tuple[int, str]]:
    def call() -> tuple[int, str]:
        body = {"memories": [{"content": content, "user_id": "u1"}]}
        response = tenant.post("/api/v1/memories/bulk/", body)
        return response.status_code, response.json()["results"][0]["id"]

    return call


def history_of(memory_id: Any) -> list[MemoryHistory]:
    with all_projects("test: read the history"):
        return list(MemoryHistory.objects.filter(memory_id=memory_id).order_by("created_at"))


@pytest.mark.django_db(transaction=True)
def test_duplicates_stored_at_once_by_single_and_bulk_writes_give_one_memory() -> None:
    alice = make_tenant("alice")
    content = "The deploy window is Tuesday at 10:00"
    calls = [single(alice, content) for _ in range(4)] + [in_bulk(alice, content) for _ in range(4)]

    results = at_once(calls)

    with all_projects("test: count the rows"):
        rows = list(Memory.objects.filter(project=alice.project))
    assert len(rows) == 1
    assert {memory_id for _, memory_id in results} == {str(rows[0].pk)}
    assert [code for code, _ in results].count(201) == 1  # one writer created it
    assert all(code in (200, 201) for code, _ in results)
    events = [entry.event for entry in history_of(rows[0].pk)]
    assert events.count(HistoryEvent.ADD) == 1  # stored once; a bulk duplicate is a MERGE into it
    assert set(events) <= {HistoryEvent.ADD, HistoryEvent.MERGE}


@pytest.mark.django_db(transaction=True)
def test_concurrent_updates_of_one_memory_each_leave_a_version_and_history() -> None:
    alice = make_tenant("alice")
    created = alice.post("/api/v1/memories/", {"content": "version 0", "user_id": "u1"}).json()
    writers = 6

    def update(n: int) -> Callable[[], int]:
        def call() -> int:
            path = f"/api/v1/memories/{created['id']}/"
            return alice.patch(path, {"content": f"version from writer {n}"}).status_code

        return call

    codes = at_once([update(n) for n in range(writers)])

    assert codes == [200] * writers
    memory = alice.get(f"/api/v1/memories/{created['id']}/").json()
    assert memory["version"] == 1 + writers  # no update overwrote another's version
    updates = [entry for entry in history_of(created["id"]) if entry.event == HistoryEvent.UPDATE]
    assert len(updates) == writers
    # each update started from the content the previous one left: a chain, none lost
    previous: str | None = "version 0"
    for entry in updates:
        assert entry.old_content == previous
        previous = entry.new_content
    assert previous == memory["content"]
    assert sorted(entry.new_content or "" for entry in updates) == sorted(
        f"version from writer {n}" for n in range(writers)
    )
