"""Ids another tenant can see (entities, relations, document chunks) do not reveal how many
rows the other tenants created: they are a keyed permutation of the sequence, unique, stable
across export/import, and exact in every JSON reader (below 2^53)."""

from __future__ import annotations

from django.db import connection

from tests.conftest import Tenant

SAFE_INTEGER = 2**53


def _entity(tenant: Tenant, name: str) -> int:
    response = tenant.post("/api/v1/entities/", {"name": name, "entity_type": "concept"})
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def test_another_tenants_entities_leave_no_trace_in_my_ids(alice: Tenant, bob: Tenant) -> None:
    first = _entity(alice, "Tea")
    for index in range(5):
        _entity(bob, f"Coffee {index}")
    second = _entity(alice, "Milk")
    assert min(first, second) >= 2**52 and max(first, second) < SAFE_INTEGER
    assert abs(second - first) > 10**6  # not a counter: the gap says nothing about bob


def test_the_permutation_is_a_bijection_and_its_inverse_finds_the_position(db: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT memory_permuted_id(n)), "
            "bool_and(memory_permuted_id_position(memory_permuted_id(n)) = n), "
            "max(memory_permuted_id(n)) < %s FROM generate_series(1, 20000) n",
            [SAFE_INTEGER],
        )
        distinct, inverse, safe = cursor.fetchone()
    assert (distinct, inverse, safe) == (20000, True, True)


def test_relations_get_permuted_ids_too(alice: Tenant) -> None:
    tea, milk = _entity(alice, "Tea"), _entity(alice, "Milk")
    relation = alice.post(
        "/api/v1/relations/", {"source_id": tea, "target_id": milk, "relation_type": "goes_with"}
    )
    assert relation.status_code == 201, relation.content
    assert int(relation.json()["id"]) >= 2**52
