from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from memories.models import Memory
from tests.conftest import make_tenant


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_identical_stores_give_one_row() -> None:
    alice = make_tenant("alice")

    def store(_: int) -> tuple[int, str]:
        try:
            response = alice.post(
                "/api/v1/memories/", {"content": "Concurrent fact", "user_id": "u1"}
            )
            return response.status_code, response.json()["id"]
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(store, range(10)))

    assert Memory.objects.filter(project=alice.project).count() == 1
    assert {memory_id for _, memory_id in results} == {str(Memory.objects.get().pk)}
    assert sorted(code for code, _ in results).count(201) == 1
    assert all(code in (200, 201) for code, _ in results)
