"""mem0's own Python clients (`mem0ai`) against the platform served live by pytest-django's
`live_server` (a threaded server in this process, on the test database; its tests commit).
Telemetry is off and mem0's local state goes to a temporary directory, both before mem0 is
first imported (it reads them at import)."""

from __future__ import annotations

import os
import tempfile

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-"))

from collections.abc import Callable, Iterator

import httpx
import pytest
from django.db import connections
from mem0 import MemoryClient

from tests.conftest import make_tenant


@pytest.fixture
def connect(live_server) -> Iterator[Callable[[str], MemoryClient]]:
    """`connect(key)`: a MemoryClient for the live server. Its HTTP connection is closed after
    the test: the server's thread for a kept-alive connection holds a database session."""
    opened: list[httpx.Client] = []

    def connect(key: str) -> MemoryClient:
        http = httpx.Client(timeout=300)  # mem0's own default; the first call loads the model
        opened.append(http)
        return MemoryClient(api_key=key, host=live_server.url, client=http)

    yield connect
    for http in opened:
        http.close()


def tenant_key(slug: str) -> str:
    """A new key of project `slug`, for async tests (`sync_to_async(tenant_key)`): the worker
    thread's database connection is closed after, or it would outlive the test database."""
    try:
        return make_tenant(slug).key
    finally:
        connections.close_all()
