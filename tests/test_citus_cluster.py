"""The platform on a running Citus cluster (docs/scaling.md, "Running on Citus").

Runs when the suite runs against a Citus coordinator (`MEMORY_TEST_CITUS=1`, DATABASE_URL at
the coordinator of `python -m benchmarks.citus.cluster start`); skipped otherwise, saying so.
The conftest distributes the test database before the tests; these check the result: every
tenant table distributed by project and co-located, a project's statements routed to one
shard, two projects' rows on different workers, and row-level security's isolation held
on the workers.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.db import connection, transaction

from memories.models import Memory
from platformcore.db import citus
from platformcore.lib.project_scope import project_scope
from tests.conftest import make_tenant

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("MEMORY_TEST_CITUS") != "1",
        reason="needs a Citus cluster: MEMORY_TEST_CITUS=1 with DATABASE_URL at its "
        "coordinator (python -m benchmarks.citus.cluster start)",
    ),
    pytest.mark.django_db,
]


def _explain(queryset: Any) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_every_tenant_table_is_distributed_by_project_and_co_located() -> None:
    with connection.cursor() as cursor:
        plan = citus.plan(cursor)
        kinds = citus.distribution(cursor)
        cursor.execute(
            "SELECT logicalrelid::regclass::text, column_to_column_name(logicalrelid, partkey), "
            "colocationid FROM pg_dist_partition WHERE partmethod = 'h'"
        )
        hashed = {name: (column, group) for name, column, group in cursor.fetchall()}
    assert {table: kinds[table] for table in plan.reference} == dict.fromkeys(
        plan.reference, "reference"
    )
    assert sorted(hashed) == sorted(plan.distributed)
    assert {column for column, _group in hashed.values()} == {"project_id"}
    assert len({group for _column, group in hashed.values()}) == 1  # one co-location group


def test_a_projects_statements_go_to_one_shard(alice) -> None:
    alice.post("/api/v1/memories/", {"content": "User lives in Paris", "user_id": "u1"})
    with project_scope(alice.project.pk), transaction.atomic():
        lookup = _explain(Memory.objects.filter(project=alice.project))
        # a join between tenant tables matches their project too (the SQL compiler)
        join = _explain(Memory.objects.filter(history__event="ADD", project=alice.project))
    for plan in (lookup, join):
        assert "Task Count: 1" in plan, plan
        assert "Router" in plan or "Adaptive" in plan


def test_two_projects_writes_land_on_different_workers() -> None:
    """Among a handful of projects, two have their shard on different workers: each
    project's rows are on the node that holds its shard."""
    tenants = [make_tenant(f"spread{i}") for i in range(6)]
    for tenant in tenants:
        response = tenant.post(
            "/api/v1/memories/", {"content": f"fact of {tenant.project.slug}", "user_id": "u1"}
        )
        assert response.status_code in (200, 201)
    placements = {}
    with connection.cursor() as cursor:
        for tenant in tenants:
            cursor.execute(
                "SELECT p.nodeport FROM pg_dist_shard_placement p "
                "WHERE p.shardid = get_shard_id_for_distribution_column('memories_memory', %s)",
                [tenant.project.pk],
            )
            placements[tenant.project.pk] = cursor.fetchone()[0]
    assert len(set(placements.values())) == 2, placements
    for tenant in tenants:  # and each one's memory is there
        with project_scope(tenant.project.pk):
            assert Memory.objects.filter(project=tenant.project).count() == 1


def test_row_level_security_isolates_projects_on_the_workers(alice, bob) -> None:
    alice.post("/api/v1/memories/", {"content": "alice's secret", "user_id": "u1"})
    bob.post("/api/v1/memories/", {"content": "bob's secret", "user_id": "u1"})
    # no project filter in the statement: every shard is asked, and the workers' policies
    # answer with alice's rows only
    scope = project_scope(alice.project.pk)
    with scope, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT content FROM memories_memory")
        assert [row[0] for row in cursor.fetchall()] == ["alice's secret"]
    assert bob.get("/api/v1/memories/").json()["results"][0]["content"] == "bob's secret"
    listed = alice.get("/api/v1/memories/").json()["results"]
    assert [memory["content"] for memory in listed] == ["alice's secret"]
