"""`Memory()` as a new user runs it: a fresh data directory (its own embedded PostgreSQL,
migrated on first use, one default project, no key), in a process of its own; then the
platform's REST API, in another process on the same directory, sees what it stored and
changes it, and the library sees the change. One data directory for the module: the first
start (initdb, migrations, the model's export) takes most of a minute."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

LIBRARY = textwrap.dedent(
    """
    import asyncio, json, sys
    from memory_platform import AsyncMemory, Memory
    m = Memory()
    added = m.add("My name is Bob", user_id="bob")
    print(added, flush=True)
    sys.stdin.readline()  # the REST process has run
    print(json.dumps(m.get(added["results"][0]["id"])), flush=True)

    async def main():
        am = AsyncMemory()
        found = await am.search("what is my name?", user_id="bob")
        print(json.dumps([hit["memory"] for hit in found["results"]]), flush=True)

    asyncio.run(main())
    """
)
SERVER = textwrap.dedent(
    """
    import json, os, sys
    import django
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryplatform.settings"
    django.setup()
    from rest_framework.test import APIClient
    from platformcore.lib.project_scope import all_projects
    from tenants.models import Project
    from tenants.services import api_key_create
    with all_projects("test: a key for the library's project"):
        key = api_key_create(project=Project.objects.get(slug="default"), scopes=["read", "write"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key.raw_key}")
    listed = client.get("/api/v1/memories/?user_id=bob").json()["results"]
    memory_id = listed[0]["id"]
    client.patch(f"/api/v1/memories/{memory_id}/", {"metadata": {"via": "rest"}}, format="json")
    print(json.dumps([m["content"] for m in listed]), flush=True)
    """
)


# attach to the data directory's server and leave it: the last process to leave stops it, so
# a library process killed by a failed test does not leave its server running
STOP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from platformcore.db.embedded.server import forget_exited_processes, socket_dir
    pgdata = Path(sys.argv[1]) / "postgres"
    if pgdata.exists():
        forget_exited_processes(pgdata)
        socket_dir(pgdata)
    """
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("memory-platform")
    yield path
    subprocess.run(
        [sys.executable, "-c", STOP, str(path)], env=_env(path), check=False, timeout=120
    )


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "DJANGO_"))}
    env.pop("DATABASE_URL", None)
    env["MEMORY_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = str(settings.BASE_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_memory_on_a_fresh_directory_is_shared_with_the_rest_api(data_dir: Path) -> None:
    library = subprocess.Popen(
        [sys.executable, "-c", LIBRARY],
        env=_env(data_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = library.stdout.readline()  # type: ignore[union-attr]
        assert "'event': 'ADD'" in first and "User's name is Bob" in first, first
        server = subprocess.run(
            [sys.executable, "-c", SERVER],
            env=_env(data_dir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert server.returncode == 0, server.stderr[-2000:]
        assert json.loads(server.stdout.strip().splitlines()[-1]) == ["User's name is Bob"]
        rest, errors = library.communicate("\n", timeout=300)
    finally:
        library.kill()
    assert library.returncode == 0, errors[-2000:]
    memory, found = rest.strip().splitlines()
    assert json.loads(memory)["metadata"] == {"via": "rest"}  # the REST API's change
    assert json.loads(found) == ["User's name is Bob"]  # AsyncMemory
