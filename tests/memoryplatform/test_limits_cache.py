"""The shared "limits" cache without Redis: a table in PostgreSQL, each write one statement.

Rate-limit leases, open-stream slots and the search cache's generations live here, so every
server process agrees on them. What callers rely on: a value set is read back until it
expires, `add` stores only where no live value is (exactly one of two concurrent adds wins),
`touch` extends a live value only, and expired rows go."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.cache import caches
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cache():
    limits = caches["limits"]
    limits.clear()
    yield limits
    limits.clear()


def test_set_and_set_many_are_read_back_and_overwrite(cache) -> None:
    cache.set("a", {"n": 1}, 60)
    cache.set_many({"b": 2, "c": [3]}, 60)
    cache.set("a", {"n": 4}, 60)
    assert cache.get_many(["a", "b", "c", "missing"]) == {"a": {"n": 4}, "b": 2, "c": [3]}
    cache.set("forever", "kept", None)
    assert cache.get("forever") == "kept"


def test_a_value_past_its_expiry_is_gone(cache) -> None:
    cache.set("short", 1, 1)
    time.sleep(2.1)
    assert cache.get("short") is None
    assert cache.add("short", 2, 60) is True  # an expired value does not block add
    assert cache.get("short") == 2


def test_add_stores_only_where_no_live_value_is(cache) -> None:
    assert cache.add("slot", "first", 60) is True
    assert cache.add("slot", "second", 60) is False
    assert cache.get("slot") == "first"


def test_of_concurrent_adds_exactly_one_wins(cache) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def add(index: int) -> None:
        try:
            barrier.wait()
            results.append(cache.add("race", index, 60))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True]


def test_touch_extends_a_live_value_only(cache) -> None:
    cache.set("live", 1, 1)
    assert cache.touch("live", 60) is True
    assert cache.touch("never-set", 60) is False
    time.sleep(2.1)
    assert cache.get("live") == 1


def test_a_write_is_one_statement(cache, django_assert_max_num_queries) -> None:
    with django_assert_max_num_queries(1):
        cache.set_many({"x": 1, "y": 2}, 60)
    with django_assert_max_num_queries(1):
        cache.add("z", 1, 60)


def test_a_write_inside_a_transaction_commits_with_it(cache) -> None:
    from django.db import transaction

    with pytest.raises(RuntimeError), transaction.atomic():
        cache.set("undone", 1, 60)
        raise RuntimeError
    assert cache.get("undone") is None
    assert connection.in_atomic_block is False
