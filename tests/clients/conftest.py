"""The SDK and memoryctl against a live platform: daphne (what `manage.py serve` runs) serving
the platform on the test database, started once for these tests, with named tenants and
their keys. Tests that talk to it commit their data (transactional tests) and are `slow`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings
from memory_platform_client import Client

from tests.conftest import Tenant, make_tenant
from tests.mcpserver.conftest import (
    LIVE_SERVER_APPLICATION,
    _free_port,
    _wait_until_up,
    child_env,
    wait_until_server_idle,
)

# the first write loads the embedding model in the server: give it time on a busy machine
TIMEOUT = 180.0


@pytest.fixture(scope="session")
def server_url(django_db_setup: None) -> Iterator[str]:
    """One live server for every test here (each test's data is flushed after it)."""
    port = _free_port()
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(
        [*command, "memoryplatform.asgi:application"],
        env=child_env(PGAPPNAME=LIVE_SERVER_APPLICATION),
        cwd=str(settings.BASE_DIR),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def live(server_url: str, transactional_db: None) -> Iterator[str]:
    """The live server's URL for one test, which commits its data; when the test ends, the
    server is left to finish its background writes before the data is flushed."""
    yield server_url
    wait_until_server_idle()


@pytest.fixture
def alice(transactional_db: None) -> Tenant:
    return make_tenant("alice")


@pytest.fixture
def bob(transactional_db: None) -> Tenant:
    return make_tenant("bob")


@pytest.fixture
def client(live: str, alice: Tenant) -> Iterator[Client]:
    """alice's sync client (admin scopes); retries off so a failure shows at once."""
    with Client(alice.key, url=live, max_retries=0, timeout=TIMEOUT) as sdk:
        yield sdk
