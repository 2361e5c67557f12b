"""Row-level security: PostgreSQL itself keeps each project's rows to the project, whatever
query the code sends (platformcore/db/rls.py, platformcore/lib/project_scope.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.utils import NotSupportedError, ProgrammingError
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from mcpserver.auth import bound_api_key
from mcpserver.tools import call
from memories import tasks
from memories.models import Memory
from platformcore.db import rls as db_rls
from platformcore.lib.db_threads import beside
from platformcore.lib.project_scope import (
    ALL_PROJECTS,
    all_projects,
    current_scope,
    no_project,
    project_scope,
)
from tenants.models import ApiKey
from tests.conftest import Tenant, make_tenant


class UnscopedCount(APIView):
    """A view that forgets to scope its query: what row-level security is there to catch."""

    permission_classes: list[Any] = []  # anyone, even without a key

    def get(self, request: Any) -> Response:
        return Response({"projects": sorted({m.project_id for m in Memory.objects.all()})})


urlpatterns = [path("unscoped/", UnscopedCount.as_view())]


def store(tenant: Tenant, *contents: str) -> None:
    for content in contents:
        Memory.objects.create(
            project=tenant.project, content=content, content_hash=content, user_id="u1"
        )


def _query(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchone()


def _run_tool(api_key: ApiKey, body: Any) -> Any:
    async def run() -> Any:
        with bound_api_key(api_key):
            return await call("read", body)

    return asyncio.run(run())


@pytest.mark.django_db
def test_every_table_with_a_project_id_has_forced_row_level_security() -> None:
    with connection.cursor() as cursor:
        tables = db_rls.tenant_tables(cursor)
    assert {"memories_memory", "entities_relation", "tenants_apikey"} <= {t[0] for t in tables}
    unprotected = [table for table, enabled, forced, policy in tables if not enabled]
    unforced = [table for table, enabled, forced, policy in tables if not forced]
    without_policy = [table for table, enabled, forced, policy in tables if not policy]
    assert (unprotected, unforced, without_policy) == ([], [], [])


@pytest.mark.django_db
def test_the_platform_acts_as_a_role_that_neither_owns_the_tables_nor_bypasses_policies() -> None:
    role, superuser, bypass = _query(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    )
    assert (role, superuser, bypass) == ("memory_app", False, False)
    (owner,) = _query("SELECT tableowner FROM pg_tables WHERE tablename = 'memories_memory'")
    assert owner != role


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_an_unscoped_query_in_a_request_returns_only_the_callers_rows(alice, bob) -> None:
    store(alice, "alice's")
    store(bob, "bob's")
    assert alice.get("/unscoped/").json() == {"projects": [alice.project.pk]}
    assert bob.get("/unscoped/").json() == {"projects": [bob.project.pk]}
    assert Memory.objects.count() == 2  # the test itself spans projects, and still does


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_a_request_without_a_valid_key_sees_no_rows(alice, anonymous) -> None:
    store(alice, "alice's")
    assert anonymous.get("/unscoped/").json() == {"projects": []}


@pytest.mark.django_db(transaction=True)
def test_an_unscoped_query_in_an_mcp_tool_call_returns_only_the_callers_rows() -> None:
    alice, bob = make_tenant("alice"), make_tenant("bob")
    store(alice, "alice's")
    store(bob, "bob's")
    api_key = ApiKey.objects.filter(project=bob.project).get()
    projects = _run_tool(api_key, lambda key: {m.project_id for m in Memory.objects.all()})
    assert projects == {bob.project.pk}


@pytest.mark.django_db
def test_no_scope_at_all_sees_no_tenant_rows(alice) -> None:
    store(alice, "alice's")
    with no_project():
        assert Memory.objects.count() == 0
        assert ApiKey.objects.count() == 0


@pytest.mark.django_db
def test_a_project_scope_cannot_write_another_projects_row(alice, bob) -> None:
    refused = pytest.raises(ProgrammingError, match="row-level")
    with project_scope(alice.project.pk), refused, transaction.atomic():
        store(bob, "planted in bob's project")
    with project_scope(alice.project.pk):
        store(alice, "alice's own")
        assert Memory.objects.count() == 1


@pytest.mark.django_db
def test_a_project_scope_cannot_move_a_row_to_another_project(alice, bob) -> None:
    store(alice, "alice's")
    # on Citus the project is the distribution column, which no update may change either
    refused = pytest.raises(
        (ProgrammingError, NotSupportedError), match=r"row-level|modifying the partition value"
    )
    with project_scope(alice.project.pk), refused, transaction.atomic():
        Memory.objects.update(project=bob.project)


@pytest.mark.django_db
def test_the_scope_is_sent_again_after_a_rollback_undid_it(alice, bob) -> None:
    store(alice, "alice's")
    store(bob, "bob's")
    with project_scope(alice.project.pk):
        assert Memory.objects.count() == 1
        with pytest.raises(RuntimeError), transaction.atomic():
            with project_scope(bob.project.pk):
                assert Memory.objects.get().content == "bob's"
            raise RuntimeError  # the savepoint's rollback undoes bob's setting
        assert Memory.objects.get().content == "alice's"
    assert Memory.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_work_beside_the_caller_runs_in_the_callers_scope() -> None:
    alice, bob = make_tenant("alice"), make_tenant("bob")
    store(alice, "alice's")
    store(bob, "bob's")
    with project_scope(bob.project.pk):
        seen = beside(lambda: (current_scope(), list(Memory.objects.values_list("content"))))
        assert seen.result() == (bob.project.pk, [("bob's",)])


@pytest.mark.django_db
def test_crossing_projects_is_logged_with_its_reason(alice, bob, caplog) -> None:
    store(alice, "alice's")
    store(bob, "bob's")
    logged = caplog.at_level(logging.INFO, logger="memoryplatform.rls")
    with no_project(), logged, all_projects("nightly export"):
        assert current_scope() is ALL_PROJECTS
        assert Memory.objects.count() == 2
    assert "all projects: nightly export" in caplog.text
    with pytest.raises(ValueError):
        all_projects(" ").__enter__()


@pytest.mark.django_db
def test_a_job_works_on_each_project_in_its_own_scope(alice, bob) -> None:
    store(alice, "alice's")
    store(bob, "bob's")
    seen = []
    with no_project():
        for project in tasks._projects(None):
            seen.append((project.slug, [m.content for m in Memory.objects.all()]))
        assert Memory.objects.count() == 0  # the job's scopes end with it
    assert sorted(seen) == [("alice", ["alice's"]), ("bob", ["bob's"])]


@pytest.mark.django_db
def test_an_operators_command_works_across_projects(alice, bob, capsys) -> None:
    with no_project():
        call_command("list_api_keys")
    out = capsys.readouterr().out
    assert "alice" in out and "bob" in out


@pytest.mark.django_db(transaction=True)
def test_installing_the_policies_again_changes_nothing() -> None:
    with db_rls.owner_connection("default", "test: install again"):
        assert db_rls.install(connection, "memory_app") == []
        (user,) = _query("SELECT current_user")
        assert user != "memory_app"
    assert _query("SELECT current_user") == ("memory_app",)


@pytest.mark.django_db(transaction=True)
def test_schema_changes_at_run_time_act_as_the_owner_and_come_back_to_the_role() -> None:
    with db_rls.as_owner(connection):
        (user,) = _query("SELECT current_user")
        assert user != "memory_app"
    assert _query("SELECT current_user") == ("memory_app",)


def test_a_connection_back_in_its_pool_keeps_no_scope() -> None:
    import psycopg

    from platformcore.db.postgresql.base import _clear_scope

    params = connection.get_connection_params()
    with psycopg.connect(**{**params, "autocommit": True}) as conn:
        conn.execute(*db_rls.scope_statement(42))
        _clear_scope(conn)
        row = conn.execute(
            "SELECT current_setting('app.project_id', true), "
            "current_setting('app.all_projects', true)"
        ).fetchone()
    assert row == ("", "")


@pytest.mark.django_db
def test_a_staff_user_in_the_admin_sees_every_project_and_is_logged(alice, bob, caplog) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    store(alice, "alice's")
    store(bob, "bob's")
    staff = User.objects.create_user("ops", password="x", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    with no_project(), caplog.at_level(logging.INFO, logger="memoryplatform.rls"):
        page = client.get("/admin/memories/memory/").content.decode()
    assert "alice&#x27;s" in page and "bob&#x27;s" in page
    assert "staff ops: GET /admin/memories/memory/" in caplog.text


@pytest.mark.django_db
def test_migrate_marks_the_search_operators_leakproof() -> None:
    """Under the policy a keyword match stays an index condition instead of a filter over
    every row of the project: `@@` and the other search operators are leakproof."""
    with connection.cursor() as cursor:
        assert db_rls.leaky_functions(cursor) == []


@pytest.mark.django_db(transaction=True)
def test_the_deploy_check_names_the_statements_while_an_operator_is_leaky() -> None:
    from memoryplatform.checks import check_leakproof_search_operators

    def alter(marking: str) -> None:
        with db_rls.owner_connection("default", "test"), connection.cursor() as cursor:
            cursor.execute(f"ALTER FUNCTION ts_match_vq(tsvector, tsquery) {marking}")

    assert check_leakproof_search_operators(None) == []
    alter("NOT LEAKPROOF")
    try:
        warnings = check_leakproof_search_operators(None)
    finally:
        alter("LEAKPROOF")
    assert [w.id for w in warnings] == ["memory.W002"]
    assert "ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;" in warnings[0].hint
