"""MCP tool-call latency: memory_store and memory_search over stdio and Streamable HTTP.

    MEMORY_EMBEDDED_DB_NAME=bench_mcp python -m benchmarks.mcp [--calls 50]

Spawns the real servers (`manage.py mcp`, and daphne serving memoryplatform.asgi) on a
benchmark database and drives them with the SDK's client. Latency is measured at the client:
one `tools/call` round trip, warm (the first calls, which load the embedding model, are not
counted). Prints p50/p95 per transport and tool.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

BASE_DIR = Path(__file__).resolve().parent.parent
TOPICS = ["deploys", "billing", "search", "auth", "the CI runner", "onboarding", "backups"]


def setup(db_name: str) -> tuple[str, dict[str, str]]:
    """Migrate the benchmark database and issue a key on a fresh project."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    os.environ.setdefault("MEMORY_EMBEDDED_DB_NAME", db_name)
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")
    os.environ.setdefault("MEMORY_ROW_LEVEL_SECURITY", "false")  # as benchmarks/common.py
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from tenants.services import api_key_create, project_create

    project = project_create(slug=f"bench-mcp-{int(time.time())}")
    key = api_key_create(project=project, scopes=["read", "write"]).raw_key
    env = {
        **os.environ,
        "MEMORY_EMBEDDED_DB_NAME": os.environ["MEMORY_EMBEDDED_DB_NAME"],
        "MEMORY_LOG_LEVEL": "WARNING",
    }
    return key, env


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "n": len(ordered)}


async def measure(session: Any, calls: int) -> dict[str, dict[str, float]]:
    async def timed(fn: Callable[..., Awaitable[Any]], *args: Any) -> float:
        start = time.perf_counter()
        result = await fn(*args)
        assert not result.is_error, result.content
        return (time.perf_counter() - start) * 1000

    for n in range(3):  # warm-up: model load, connections
        await session.call_tool("memory_store", {"content": f"warm-up memory {n}"})
        await session.call_tool("memory_search", {"query": "warm-up"})
    stamp = time.time_ns()
    store, search = [], []
    for n in range(calls):
        topic = TOPICS[n % len(TOPICS)]
        content = f"Note {stamp}-{n}: decision {n} about {topic}"
        store.append(await timed(session.call_tool, "memory_store", {"content": content}))
    for n in range(calls):
        query = f"decision about {TOPICS[n % len(TOPICS)]}"
        search.append(await timed(session.call_tool, "memory_search", {"query": query}))
    return {"memory_store": percentiles(store), "memory_search": percentiles(search)}


@asynccontextmanager
async def stdio(key: str, env: dict[str, str]) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=[str(BASE_DIR / "manage.py"), "mcp", "--api-key", key],
        env=env,
        cwd=str(BASE_DIR),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def streamable_http(key: str, env: dict[str, str]) -> AsyncIterator[Any]:
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen([*command, "memoryplatform.asgi:application"], env=env, cwd=BASE_DIR)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{url}/health/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    finally:
        server.terminate()
        server.wait(timeout=10)


async def run(calls: int, key: str, env: dict[str, str]) -> dict[str, Any]:
    results = {}
    for name, transport in (("stdio", stdio), ("streamable-http", streamable_http)):
        async with transport(key, env) as session:
            results[name] = await measure(session, calls)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="timed calls per tool")
    parser.add_argument("--db", default="bench_mcp", help="embedded database name")
    args = parser.parse_args()
    key, env = setup(args.db)
    results = anyio.run(run, args.calls, key, env)
    print(f"MCP tool-call latency, ms ({args.calls} warm calls each)")
    print(f"{'transport':<16} {'tool':<14} {'p50':>7} {'p95':>7}")
    for transport, tools in results.items():
        for tool, stats in tools.items():
            print(f"{transport:<16} {tool:<14} {stats['p50']:>7} {stats['p95']:>7}")


if __name__ == "__main__":
    main()
