"""Per-key rate limits: a key over its limit is refused (429, Retry-After, JSON) while other
keys go on; limits by kind of request, per project, on REST and on MCP tool calls."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import connection

from tenants.models import Project
from tenants.throttling import rate_limit_hit
from tests.conftest import make_tenant

# Daily windows: a test never straddles two of them, as it might a minute's
LIMITS = {"read": "3/day", "search": "2/day", "write": "2/day", "admin": "1/day"}


@pytest.fixture
def low_limits(settings: Any) -> dict[str, str]:
    settings.MEMORY_RATE_LIMITS = dict(LIMITS)
    return settings.MEMORY_RATE_LIMITS


def set_limits(project: Project, **limits: Any) -> None:
    project.limits = limits
    project.full_clean()
    project.save(update_fields=["limits"])


def test_a_key_over_its_limit_gets_429_with_retry_after_while_another_projects_key_gets_200(
    alice, bob, low_limits
):
    for _ in range(3):
        assert alice.get("/api/v1/memories/?user_id=u1").status_code == 200
    refused = alice.get("/api/v1/memories/?user_id=u1")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 86400
    error = refused.json()["error"]
    assert error["code"] == "throttled"
    assert "3 read requests per day" in error["message"]
    assert bob.get("/api/v1/memories/?user_id=u1").status_code == 200


def test_each_key_of_a_project_has_its_own_count(alice, low_limits):
    for _ in range(3):
        alice.get("/api/v1/memories/")
    assert alice.get("/api/v1/memories/").status_code == 429
    second = make_tenant("alice")  # another key of the same project
    assert second.get("/api/v1/memories/").status_code == 200


def test_searches_count_against_the_search_limit_not_the_read_limit(alice, low_limits):
    body = {"query": "dark mode", "user_id": "u1"}
    assert alice.post("/api/v1/memories/search/", body).status_code == 200
    assert alice.get("/api/v1/memories/search/?q=dark&user_id=u1").status_code == 200
    refused = alice.post("/api/v1/memories/search/", body)
    assert refused.status_code == 429
    assert "search requests" in refused.json()["error"]["message"]
    assert alice.get("/api/v1/memories/").status_code == 200  # reads still go


def test_writes_count_against_the_write_limit(alice, low_limits):
    for index in range(2):
        created = alice.post("/api/v1/memories/", {"content": f"fact {index}", "user_id": "u1"})
        assert created.status_code == 201
    refused = alice.post("/api/v1/memories/", {"content": "one too many", "user_id": "u1"})
    assert refused.status_code == 429
    assert "write requests" in refused.json()["error"]["message"]
    assert alice.get("/api/v1/memories/").status_code == 200


def test_maintenance_runs_count_against_the_admin_limit(alice, low_limits):
    assert alice.post("/api/v1/memories/consolidate/", {"dry_run": True}).status_code == 200
    refused = alice.post("/api/v1/memories/decay/", {})
    assert refused.status_code == 429
    assert "admin requests" in refused.json()["error"]["message"]


def test_a_projects_own_limit_overrides_the_default(alice, bob, low_limits):
    set_limits(alice.project, read="1/day")
    set_limits(bob.project, read="none")
    assert alice.get("/api/v1/memories/").status_code == 200
    assert alice.get("/api/v1/memories/").status_code == 429
    for _ in range(5):  # past the default of 3: bob's project has no read limit
        assert bob.get("/api/v1/memories/").status_code == 200


def test_a_project_may_raise_one_limit_and_keep_the_others(alice, low_limits):
    set_limits(alice.project, read="100/day")
    for _ in range(5):
        assert alice.get("/api/v1/memories/").status_code == 200
    alice.post("/api/v1/memories/search/", {"query": "x", "user_id": "u1"})
    alice.post("/api/v1/memories/search/", {"query": "x", "user_id": "u1"})
    assert alice.post("/api/v1/memories/search/", {"query": "x"}).status_code == 429


def test_a_limit_set_to_none_in_the_settings_lets_everything_through(alice, settings):
    settings.MEMORY_RATE_LIMITS = {**LIMITS, "read": "none"}
    for _ in range(5):
        assert alice.get("/api/v1/memories/").status_code == 200


def test_unauthenticated_requests_are_refused_before_any_count(anonymous, low_limits):
    for _ in range(5):
        assert anonymous.get("/api/v1/memories/").status_code == 401


def test_a_process_serves_a_lease_of_a_large_limit_and_still_stops_at_the_limit(alice, settings):
    # 100/day: the process takes 2 at a time from the shared count; exactly 100 pass
    settings.MEMORY_RATE_LIMITS = {**LIMITS, "read": "100/day"}
    api_key = alice.project.api_keys.get()
    passed = sum(rate_limit_hit(api_key=api_key, scope="read") is None for _ in range(130))
    assert passed == 100
    refusal = rate_limit_hit(api_key=api_key, scope="read")
    assert refusal is not None
    assert 1 <= refusal.retry_after <= 86400


def test_the_counters_live_in_an_unlogged_table_that_migrate_created(db):
    # unlogged: a counter's commit does not wait for the disk (no WAL)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relpersistence FROM pg_class WHERE oid = to_regclass(%s)",
            ["memoryplatform_limits_cache"],
        )
        assert cursor.fetchone() == ("u",)


@pytest.mark.parametrize(
    "limits, field",
    [
        ({"read": "lots"}, "read"),
        ({"search": 5}, "search"),
        ({"streams": -1}, "streams"),
        ({"streams": "5"}, "streams"),
        ({"reads": "5/min"}, "reads"),
    ],
)
def test_a_project_limit_that_is_not_understood_is_refused(alice, limits, field):
    alice.project.limits = limits
    with pytest.raises(ValidationError) as caught:
        alice.project.full_clean()
    assert field in str(caught.value)


def test_a_bad_rate_in_the_environment_stops_start_up(monkeypatch):
    from memoryplatform.settings.env import env_rate

    monkeypatch.setenv("MEMORY_RATE_LIMIT_READ", "fast")
    with pytest.raises(ImproperlyConfigured, match="MEMORY_RATE_LIMIT_READ"):
        env_rate("MEMORY_RATE_LIMIT_READ", "6000/min")
    monkeypatch.setenv("MEMORY_RATE_LIMIT_READ", "20/s")
    assert env_rate("MEMORY_RATE_LIMIT_READ", "6000/min") == "20/s"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)  # tool calls run on the MCP threads' connections
async def test_an_mcp_tool_call_over_the_limit_is_a_tool_error_and_other_keys_go_on(settings):
    from tests.mcpserver.conftest import in_process, structured

    settings.MEMORY_RATE_LIMITS = dict(LIMITS)
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    async with in_process(alice) as client:
        for _ in range(3):
            structured(await client.call_tool("memory_stats", {}))
        refused = await client.call_tool("memory_stats", {})
    assert refused.is_error
    text = refused.content[0].text
    assert "rate_limited: Rate limit reached" in text
    assert "3 read requests per day" in text and "Retry in" in text
    async with in_process(bob) as client:
        structured(await client.call_tool("memory_stats", {}))


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_the_limits_count_in_redis_when_redis_is_configured(alice, settings):
    settings.CACHES = {
        **settings.CACHES,
        "limits": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/0",
            # key ids restart with each test database: earlier runs' counts must not count
            "KEY_PREFIX": uuid.uuid4().hex,
        },
    }
    settings.MEMORY_RATE_LIMITS = dict(LIMITS)
    for _ in range(3):
        assert alice.get("/api/v1/memories/").status_code == 200
    assert alice.get("/api/v1/memories/").status_code == 429
    from django.core.cache import caches

    api_key = alice.project.api_keys.get()
    counted = [key for key in caches["limits"]._cache.get_client().keys(f"*:read:{api_key.pk}:*")]
    assert counted, "the count is kept in Redis"
