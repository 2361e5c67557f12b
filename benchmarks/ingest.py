"""Bulk ingest into a store of N memories, variants side by side: memories/s against the raw
encoder, where the CPU went (this process, which embeds, against PostgreSQL), and the jobs
that follow each import: the indexing of deferred vectors, then the consolidation run (what
the every-N-inserts job would do).

    MEMORY_EMBEDDED_DB_NAME=bench_search python -m benchmarks.ingest --n 100000 \\
        --variants inline,consolidation,consolidation+deferred --rounds 3 --per 4000

Needs the store of `python -m benchmarks.scale --n N` (same database); every run adds `--per`
generated memories to it. The variants of a round run in a random order, each on fresh texts,
with the raw encoder read on those texts before and after it: this VM's speed drifts within
minutes, so only variants measured side by side compare. A variant is a near-duplicate mode
(`inline`, `consolidation`), optionally `+deferred` (vector_index: the HNSW inserts are left
to the indexing job) and `@K` for K bulk writes in flight (default 2).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import Timer, setup_django, table, write_results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="the store of scale --n N")
    parser.add_argument(
        "--variants",
        default="inline,consolidation,consolidation+deferred",
        help="MODE[+deferred][@IN_FLIGHT],…",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per", type=int, default=4000, help="memories per run")
    parser.add_argument("--batch", type=int, default=500, help="memories per bulk write")
    parser.add_argument("--seed", type=int, default=None, help="default: the clock")
    return parser.parse_args(argv)


def variant(spec: str) -> tuple[str, str, int]:
    """(near_duplicates, vector_index, in_flight) of `MODE[+deferred][@K]`."""
    head, _, flight = spec.partition("@")
    mode, _, vectors = head.partition("+")
    if mode not in ("inline", "consolidation") or vectors not in ("", "deferred"):
        raise SystemExit(
            f"unknown variant {spec!r}: inline or consolidation, optionally +deferred and @K"
        )
    return mode, vectors or "inline", int(flight or 2)


def cpu_seconds() -> tuple[float, dict[int, float]]:
    """CPU seconds used so far by this process, and by each PostgreSQL process (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    mine, postgres = 0.0, {}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            data = path.read_text()
        except OSError:  # a process that ended meanwhile
            continue
        name = data[data.index("(") + 1 : data.rindex(")")]
        fields = data[data.rindex(")") + 2 :].split()
        used = (int(fields[11]) + int(fields[12])) / tick
        if path.parent.name == str(os.getpid()):
            mine = used
        elif name.startswith("postgres"):
            postgres[int(path.parent.name)] = used
    return mine, postgres


def postgres_seconds(before: dict[int, float], after: dict[int, float]) -> float:
    """What the PostgreSQL processes alive at the end used during the run (one that ended
    meanwhile, an autovacuum worker say, is not counted)."""
    return sum(used - before.get(pid, 0.0) for pid, used in after.items())


def run(project: Any, spec: str, items: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    from django.utils import timezone

    from benchmarks.scale import raw_encoder_rate
    from memories.services.consolidation import memories_consolidate
    from memories.services.importing import memories_import
    from memories.services.vector_index import index_pending_vectors
    from platformcore.lib.actor import command

    mode, vectors, in_flight = variant(spec)
    sample = [item.content for item in items[:2000]]
    before = raw_encoder_rate(sample)
    started, cpu_before = timezone.now(), cpu_seconds()
    with Timer() as write:
        summary = memories_import(
            project=project,
            items=items,
            actor=command("bench"),
            batch_size=args.batch,
            in_flight=in_flight,
            near_duplicates=mode,
            vector_index=vectors,
        )
    cpu_after = cpu_seconds()
    raw = (before + raw_encoder_rate(sample)) / 2
    with Timer() as indexing:  # what the job enqueued by a deferred write does
        indexed = index_pending_vectors(project=project).indexed
    with Timer() as consolidation:
        report = memories_consolidate(project=project, actor=command("bench"), since=started)
    rate = len(items) / write.seconds
    return {
        "variant": spec,
        "per_s": round(rate, 1),
        "raw_encoder_per_s": round(raw, 1),
        "vs_raw": round(rate / raw, 3),
        "created": summary.created,
        "cpu_s_process": round(cpu_after[0] - cpu_before[0], 1),
        "cpu_s_postgres": round(postgres_seconds(cpu_before[1], cpu_after[1]), 1),
        "seconds": round(write.seconds, 1),
        "indexing_seconds": round(indexing.seconds, 1),
        "indexed": indexed,
        "consolidation_seconds": round(consolidation.seconds, 1),
        "consolidation_merged": report.memories_merged,
        "with_jobs_vs_raw": round(
            len(items) / (write.seconds + indexing.seconds + consolidation.seconds) / raw, 3
        ),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_search")
    from benchmarks.scale import generate
    from memories.models import Memory
    from tenants.models import Project

    specs = args.variants.split(",")
    for spec in specs:
        variant(spec)
    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        raise SystemExit(f"no store of {args.n}: run python -m benchmarks.scale --n {args.n}")
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    print(f"{live} live memories in {project.slug}")
    seed = args.seed if args.seed is not None else int(time.time())
    runs = []
    for round_ in range(args.rounds):
        order = random.Random(f"{seed}-{round_}").sample(specs, len(specs))
        for spec in order:
            draws = random.Random(f"{seed}-{round_}-{spec}")
            run_number = round_ * len(specs) + specs.index(spec)  # note numbers never repeat
            start = 10**12 + (seed % 10**6) * 10**6 + run_number * args.per
            items = generate(args.per, draws, start=start)
            runs.append({"round": round_, **run(project, spec, items, args)})
            print({k: v for k, v in runs[-1].items()}, flush=True)
    summary = {
        spec: {
            key: round(statistics.median(r[key] for r in runs if r["variant"] == spec), 3)
            for key in ("vs_raw", "with_jobs_vs_raw", "cpu_s_process", "cpu_s_postgres")
        }
        for spec in specs
    }
    print(f"\nbulk ingest into {live} live memories, medians of {args.rounds} runs of {args.per}")
    headers = ["variant", "vs raw", "with the jobs", "CPU s (process)", "CPU s (postgres)"]
    print(table(headers, [[spec, *values.values()] for spec, values in summary.items()]))
    path = write_results(
        f"ingest-{args.n}",
        {"args": vars(args), "live_before": live, "runs": runs, "summary": summary},
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
