"""The layer job on a busy project: how long promoting and expiring short-term memories takes.

    python -m benchmarks.layers --n 20000 --important 0.1 --read 0.1 --stale 0.5

The store is built directly (no vectors, so no encoder and no consolidation work): `--n`
short-term memories of one project spread over 200 runs, a share important (importance
0.9), a share read three times, a share untouched for two days (past the 24-hour time to
live); plus as many long-term memories, which the job must not touch. The job then runs
once (promotion and expiry, in batches of 1,000, each a transaction with its history rows
and events) and the time of each step is reported.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import timedelta
from typing import Any

from benchmarks.common import setup_django, table, write_results


def build(project: Any, n: int, shares: dict[str, float], seed: int) -> dict[str, int]:
    from django.utils import timezone

    from memories.models import Memory
    from memories.services.content import content_hash

    rng, now, counts = random.Random(seed), timezone.now(), dict.fromkeys(shares, 0)
    rows = []
    for i in range(2 * n):
        kind = _kind(rng, shares) if i < n else "long"
        counts[kind] = counts.get(kind, 0) + 1
        text = f"memory {i} of run {i % 200}: step {rng.randint(0, 10**9)}"
        rows.append(
            Memory(
                project=project,
                content=text,
                content_hash=content_hash(text),
                user_id="u1",
                run_id=f"run-{i % 200}" if i < n else None,
                layer="short_term" if i < n else "long_term",
                importance=0.9 if kind == "important" else 0.5,
                access_count=3 if kind == "read" else 0,
                created_at=now - timedelta(hours=48 if kind in ("stale", "long") else 1),
            )
        )
    Memory.objects.bulk_create(rows, batch_size=2000)
    return counts


def _kind(rng: random.Random, shares: dict[str, float]) -> str:
    draw = rng.random()
    for kind, share in shares.items():
        if draw < share:
            return kind
        draw -= share
    return "fresh"


def measure(project: Any) -> dict[str, Any]:
    from memories.services.layers import memories_expire_short_term, memories_promote
    from platformcore.lib.actor import job

    started = time.perf_counter()
    promoted = memories_promote(project=project, actor=job("layers"))
    promoted_s = time.perf_counter() - started
    started = time.perf_counter()
    expired = memories_expire_short_term(project=project, actor=job("layers"))
    expired_s = time.perf_counter() - started
    return {
        "promoted": len(promoted),
        "promote_s": round(promoted_s, 3),
        "expired": len(expired),
        "expire_s": round(expired_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="short-term memories stored")
    parser.add_argument("--important", type=float, default=0.1)
    parser.add_argument("--read", type=float, default=0.1)
    parser.add_argument("--stale", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    setup_django("bench_layers")
    from tenants.models import Project
    from tenants.services import project_create

    Project.objects.filter(slug="layers").delete()
    project = project_create(slug="layers")
    shares = {"important": args.important, "read": args.read, "stale": args.stale}
    counts = build(project, args.n, shares, args.seed)
    result = measure(project)
    print(table(list(result), [list(result.values())]))
    path = write_results(f"layers-{args.n}", {"args": vars(args), "store": counts, **result})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
