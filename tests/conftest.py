"""Shared fixtures: named tenants (alice, bob, charlie) each with their own API key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from platformcore.lib.project_scope import all_projects
from tenants.models import Project
from tenants.services import api_key_create, project_create


@dataclass
class Tenant:
    project: Project
    key: str
    client: APIClient

    def get(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.get(path, data, **kwargs)

    def post(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.post(path, data, format="json", **kwargs)

    def patch(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.patch(path, data, format="json", **kwargs)

    def put(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.put(path, data, format="json", **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.client.delete(path, **kwargs)


def make_tenant(slug: str, scopes: list[str] | None = None) -> Tenant:
    project = Project.objects.filter(slug=slug).first() or project_create(slug=slug)
    issued = api_key_create(project=project, scopes=scopes or ["read", "write", "admin"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    return Tenant(project=project, key=issued.raw_key, client=client)


@pytest.fixture
def alice(db: None) -> Tenant:
    return make_tenant("alice")


@pytest.fixture
def bob(db: None) -> Tenant:
    return make_tenant("bob")


@pytest.fixture
def charlie(db: None) -> Tenant:
    return make_tenant("charlie")


# MEMORY_TEST_CITUS=1 with DATABASE_URL at a Citus coordinator (benchmarks/citus/cluster.py
# prepares the test database on every node): the test database is kept rather than created
# anew (a database created on the coordinator alone would not be a Citus one), migrated, and
# its tables distributed before the tests run (docs/scaling.md, "Running on Citus").
CITUS_SHARDS = 8  # per table: enough for two projects to land on different workers

if os.environ.get("MEMORY_TEST_CITUS") == "1":

    @pytest.fixture(scope="session")
    def django_db_keepdb() -> bool:
        return True

    @pytest.fixture(scope="session")
    def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
        from django.conf import settings
        from django.db import connection

        from platformcore.db import citus
        from platformcore.db.rls import owner_connection

        with django_db_blocker.unblock(), owner_connection("default", "tests: distribute"):
            citus.distribute(
                connection, shard_count=CITUS_SHARDS, ef_search=settings.MEMORY_HNSW_EF_SEARCH
            )


@pytest.fixture(scope="module")
def module_live_server(django_db_setup: None) -> Any:
    """The live server the tests of one module share (tests/mcpserver/conftest.py,
    `live_server_mcp`), stopped when the module's tests are done."""
    from tests.mcpserver.conftest import SharedLiveServer

    shared = SharedLiveServer()
    yield shared
    shared.stop()


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def remember(alice: Tenant):
    """Store a memory for alice through the API and return its JSON."""

    def _remember(content: str, **fields: Any) -> dict[str, Any]:
        fields.setdefault("user_id", "u1")
        response = alice.post("/api/v1/memories/", {"content": content, **fields})
        assert response.status_code in (200, 201), response.json()
        return response.json()

    return _remember


@pytest.fixture
def fake_openai(settings):
    """A local OpenAI-compatible server, configured as the platform's LLM."""
    from tests.fakes.openai_server import FakeOpenAI

    with FakeOpenAI() as fake:
        settings.MEMORY_LLM_BASE_URL = fake.base_url
        settings.MEMORY_LLM_API_KEY = "test-key"
        settings.MEMORY_LLM_MAX_RETRIES = 2
        settings.MEMORY_LLM_TIMEOUT = 5.0
        yield fake


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (`@pytest.mark.anyio`) run on asyncio, like daphne and uvicorn."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _tests_span_projects() -> Any:
    """A test sets up and inspects several projects' rows with the ORM directly, so it runs
    across projects (row-level security, platformcore/lib/project_scope.py); the code under test
    scopes itself: a request to its key's project, an MCP tool call likewise."""
    with all_projects("test", routine=True):
        yield


@pytest.fixture(autouse=True)
def _no_cached_search_answers() -> Any:
    """Each test starts with an empty search result cache, as a restarted server does."""
    from platformcore.lib.result_cache import answers

    answers.clear()


@pytest.fixture(scope="session", autouse=True)
def _close_side_connections(django_db_setup: None) -> Any:
    """Connections opened by hybrid search's second thread (tests on committed data) are
    closed before pytest-django drops the test database."""
    yield
    from platformcore.lib.db_threads import close_connections

    close_connections()


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """A test that starts a live server is `slow` wherever it lives (`-m "not slow"` skips
    them; CI runs everything)."""
    for item in items:
        if "live_server_mcp" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
