"""The search result cache: a repeated search is answered from memory, a write in its project
makes the next one search again, and no project ever reads another's answers."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analytics.models import SearchStat
from memories.tasks import run_decay
from platformcore.lib import result_cache
from tests.conftest import Tenant
from tests.mcpserver.conftest import child_env

pytestmark = pytest.mark.django_db
SEARCH = "/api/v1/memories/search/"


def _search(tenant: Tenant, text: str, **params: object) -> list[str]:
    response = tenant.post(SEARCH, {"query": text, "mode": "hybrid", **params})
    assert response.status_code == 200, response.json()
    return [hit["content"] for hit in response.json()["results"]]


def _searched_memories(tenant: Tenant, text: str) -> tuple[list[str], bool]:
    """The answer, and whether answering it read the memories table."""
    with CaptureQueriesContext(connection) as queries:
        found = _search(tenant, text)
    read = any("memories_memory" in q["sql"] and "SELECT" in q["sql"] for q in queries)
    return found, read


def _cached_count(tenant: Tenant) -> int:
    return sum(row.cached for row in SearchStat.objects.filter(project=tenant.project))


def test_a_repeated_search_is_answered_from_the_cache_and_counted_as_cached(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    first, read_first = _searched_memories(alice, "where is the deploy script")
    again, read_again = _searched_memories(alice, "where is the deploy script")

    assert first == again == ["The deploy script lives in ops/deploy.sh"]
    assert read_first and not read_again
    assert _cached_count(alice) == 1
    body = alice.get("/api/v1/analytics/search/").json()
    assert body["total"]["searches"] == 2 and body["total"]["cached"] == 1


def test_a_new_memory_is_found_by_the_next_identical_search(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    assert len(_search(alice, "deploy script")) == 1
    remember("The deploy script needs the VPN")
    assert len(_search(alice, "deploy script")) == 2


def test_an_edit_and_a_delete_show_in_the_next_identical_search(alice, remember):
    memory = remember("The deploy script lives in ops/deploy.sh")
    assert _search(alice, "deploy script") == ["The deploy script lives in ops/deploy.sh"]

    alice.patch(f"/api/v1/memories/{memory['id']}/", {"content": "The deploy script is gone"})
    assert _search(alice, "deploy script") == ["The deploy script is gone"]

    alice.delete(f"/api/v1/memories/{memory['id']}/")
    assert _search(alice, "deploy script") == []


def test_different_filters_or_limits_are_different_answers(alice, remember):
    remember("Alice prefers dark mode", user_id="alice")
    remember("Bob prefers dark mode", user_id="bob")
    assert len(_search(alice, "dark mode")) == 2
    assert _search(alice, "dark mode", user_id="bob") == ["Bob prefers dark mode"]
    assert len(_search(alice, "dark mode", limit=1)) == 1


def test_the_same_query_in_another_project_never_gets_alices_answer(alice, charlie, remember):
    remember("The deploy script lives in ops/deploy.sh")
    assert _search(alice, "deploy script")
    assert _search(charlie, "deploy script") == []


def test_a_write_in_another_project_leaves_alices_answer_cached(alice, charlie, remember):
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy script")
    response = charlie.post(
        "/api/v1/memories/", {"content": "Charlie's deploy notes", "user_id": "c"}
    )
    assert response.status_code == 201
    _, read = _searched_memories(alice, "deploy script")
    assert not read


def test_reading_a_memory_does_not_empty_the_cache(alice, remember):
    memory = remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy script")
    assert alice.get(f"/api/v1/memories/{memory['id']}/").status_code == 200  # reinforces it
    _, read = _searched_memories(alice, "deploy script")
    assert not read


def test_a_job_across_projects_invalidates_every_projects_answers(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy script")
    run_decay()
    _, read = _searched_memories(alice, "deploy script")
    assert read


def test_switched_off_every_search_runs(alice, remember, settings):
    settings.MEMORY_SEARCH_CACHE_SECONDS = 0
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy script")
    _, read = _searched_memories(alice, "deploy script")
    assert read
    assert _cached_count(alice) == 0


def test_statements_that_change_answers_are_told_from_those_that_do_not():
    assert result_cache.changes_answers('UPDATE "memories_memory" SET "content" = %s')
    assert result_cache.changes_answers('INSERT INTO "entities_relation" ("id") VALUES (%s)')
    assert result_cache.changes_answers("WITH gone AS (DELETE FROM memories_memory) SELECT 1")
    assert not result_cache.changes_answers('SELECT "updated_at" FROM "memories_memory"')
    assert not result_cache.changes_answers("WITH a AS (SELECT updated_at FROM x) SELECT 1")
    assert not result_cache.changes_answers('UPDATE "tenants_apikey" SET "last_used_at" = %s')
    assert not result_cache.changes_answers('INSERT INTO "analytics_searchstat" VALUES (1)')


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_write_committed_by_another_process_is_seen_by_the_next_search(alice, remember):
    """The job worker is another process: its commit moves the shared generation."""
    remember("The deploy script lives in ops/deploy.sh")
    assert len(_search(alice, "deploy script")) == 1
    script = (
        "from platformcore.lib.project_scope import project_scope\n"
        "from platformcore.lib.actor import Actor\n"
        "from memories.services.memories import MemoryInput, memory_create\n"
        "from tenants.models import Project\n"
        f"with project_scope({alice.project.pk}):\n"
        f"    project = Project.objects.get(pk={alice.project.pk})\n"
        "    memory_create(project=project, data=MemoryInput(content='The deploy script needs"
        " the VPN', user_id='u1'), actor=Actor('job', 'test'))\n"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=settings.BASE_DIR,
        env=child_env(MEMORY_JOBS_SYNC="false"),
        check=True,
        timeout=120,
    )
    assert len(_search(alice, "deploy script")) == 2


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_and_rest_searches_both_see_a_write_made_through_the_other(alice):
    from asgiref.sync import sync_to_async

    from tests.mcpserver.conftest import in_process, structured

    search = sync_to_async(_search)
    await sync_to_async(alice.post)(
        "/api/v1/memories/", {"content": "Deploys run on Fridays", "user_id": "u1"}
    )
    async with in_process(alice) as client:
        first = structured(await client.call_tool("memory_search", {"query": "deploys"}))
        assert len(first["results"]) == 1
        assert len(await search(alice, "deploys")) == 1
        stored = await client.call_tool(
            "memory_store", {"content": "Deploys need a review", "user_id": "u1"}
        )
        assert not stored.is_error
        again = structured(await client.call_tool("memory_search", {"query": "deploys"}))
    assert len(again["results"]) == 2
    assert len(await search(alice, "deploys")) == 2
