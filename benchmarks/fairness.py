"""Work-based fairness: one project's heavy requests against another project's searches.

    python -m benchmarks.fairness                      # 30 concurrent worst-case adds
    python -m benchmarks.fairness --seconds 30 --abusers 30
    python -m benchmarks.fairness --env MEMORY_PROJECT_HEAVY_REQUESTS=30   # budget off

A server as users run it (`manage.py serve --no-worker`, defaults, no LLM) on a free port. The
victim project searches its store (sequential hybrid searches, each a new question, the result
cache off) for `--seconds` alone, then again while the abusive project keeps `--abusers`
worst-case requests in flight: `POST /api/v1/memories/add/` with the largest conversation an
`add` accepts (MEMORY_LLM_MAX_INPUT_CHARS, offline extraction), sent again as soon as one is
answered (after a `429`, when its `Retry-After` says). Reported: the victim's p50/p95/max and
errors (5xx, 503) idle and loaded, the loaded/idle p95 ratio (the target: within 2x), and what
the abuser's requests got (200, 400, 429...). Loopback only; it stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import time
import uuid
from collections import Counter

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.load import start_server, wait_until_up
from benchmarks.scale import free_port, generate

WORDS = [
    "tea",
    "coffee",
    "deploy",
    "backup",
    "server",
    "alice",
    "bob",
    "project",
    "meeting",
    "budget",
    "garden",
    "music",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="memories in the victim's store")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--abusers", type=int, default=30, help="heavy requests kept in flight")
    parser.add_argument(
        "--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


def worst_case_conversation(limit: int) -> str:
    """The longest conversation an `add` accepts, every sentence a fact the offline extractor
    keeps (first person): each becomes a memory to embed, compare and store."""
    sentences, size, index = [], 0, 0
    while True:
        liked = WORDS[index % len(WORDS)]
        sentence = f"I moved project {index} to server {index % 97} and I like {liked}. "
        if size + len(sentence) > limit:
            return "".join(sentences)
        sentences.append(sentence)
        size += len(sentence)
        index += 1


async def victim_searches(url: str, key: str, seconds: float, rng: random.Random) -> dict:
    import httpx

    samples, statuses = [], Counter()
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            query = " ".join(rng.sample(WORDS, 3)) + f" {rng.randint(0, 10**6)}"
            started = time.perf_counter()
            try:
                response = await http.post("/api/v1/memories/search/", json={"query": query})
                statuses[response.status_code] += 1
            except httpx.HTTPError:
                statuses["transport"] += 1
                continue
            samples.append((time.perf_counter() - started) * 1000)
    errors = sum(n for code, n in statuses.items() if code == "transport" or int(code) >= 500)
    return {**percentiles(samples), "max": round(max(samples, default=0), 1), "errors": errors,
            "statuses": dict(statuses)}  # fmt: skip


async def abuser(url: str, key: str, text: str, stop: asyncio.Event, seen: Counter) -> None:
    import httpx

    body = {"messages": text, "user_id": "flood"}
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
        while not stop.is_set():
            try:
                response = await http.post("/api/v1/memories/add/", json=body)
            except httpx.HTTPError:
                seen["transport"] += 1
                continue
            seen[response.status_code] += 1
            if response.status_code in (429, 503):
                await asyncio.sleep(float(response.headers.get("Retry-After", "1")))


async def loaded(url: str, keys: dict[str, str], args: argparse.Namespace, text: str) -> tuple:
    stop, seen = asyncio.Event(), Counter()
    flood = [
        asyncio.create_task(abuser(url, keys["abuser"], text, stop, seen))
        for _ in range(args.abusers)
    ]
    await asyncio.sleep(2)  # the flood reaches its steady state first
    result = await victim_searches(url, keys["victim"], args.seconds, random.Random(args.seed))
    stop.set()
    await asyncio.gather(*flood, return_exceptions=True)
    return result, dict(seen)


def prepare(n: int, seed: int) -> dict[str, str]:
    from django.db.models import Q

    from memories.models import Memory
    from memories.services.importing import memories_import
    from platformcore.lib.actor import command
    from platformcore.lib.project_scope import all_projects
    from tenants.models import Project
    from tenants.services import api_key_create, project_create

    with all_projects("fairness benchmark setup"):
        victim = Project.objects.filter(slug="fair-victim").first()
        victim = victim or project_create(slug="fair-victim")
        live = Memory.objects.filter(Q(project=victim), deleted_at__isnull=True).count()
        if live < n:
            items = generate(n - live, random.Random(seed))
            memories_import(project=victim, items=items, actor=command("fairness"))
        abuser = project_create(slug=f"fair-abuser-{uuid.uuid4().hex[:8]}")
        return {
            "victim": api_key_create(project=victim, scopes=["read", "write"]).raw_key,
            "abuser": api_key_create(project=abuser, scopes=["read", "write"]).raw_key,
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_fairness")
    from django.conf import settings

    keys = prepare(args.n, args.seed)
    text = worst_case_conversation(settings.MEMORY_LLM_MAX_INPUT_CHARS - 16)  # "user: " prefix
    port = free_port()
    server = start_server(port, ["MEMORY_SEARCH_CACHE_SECONDS=0", *args.env], None)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, keys["victim"])
        idle = asyncio.run(victim_searches(url, keys["victim"], args.seconds, random.Random(1)))
        under_load, abuser_got = asyncio.run(loaded(url, keys, args, text))
    finally:  # heavy requests still queued would hold a graceful stop: do not wait for them
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
    ratio = round(under_load["p95"] / idle["p95"], 2) if idle["p95"] else None
    print(f"abuser: {args.abusers} concurrent adds of {len(text)} characters: {abuser_got}")
    print(
        table(
            ["victim searches", "n", "p50 ms", "p95 ms", "max ms", "errors (5xx)"],
            [
                ["idle", idle["n"], idle["p50"], idle["p95"], idle["max"], idle["errors"]],
                [
                    "loaded",
                    under_load["n"],
                    under_load["p50"],
                    under_load["p95"],
                    under_load["max"],
                    under_load["errors"],
                ],
            ],
        )
    )
    print(f"loaded/idle p95: {ratio} (target: within 2)")
    path = write_results(
        "fairness",
        {"args": vars(args), "idle": idle, "loaded": under_load, "p95_ratio": ratio,
         "abuser": abuser_got, "add_characters": len(text)},
    )  # fmt: skip
    print(f"results: {path}")
    return 0 if ratio is not None and ratio <= 2 and not under_load["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
