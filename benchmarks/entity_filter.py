"""Entity-filtered semantic search at scale: rows returned, recall against exact search, latency.

    MEMORY_EMBEDDED_DB_NAME=bench_entityfilter python -m benchmarks.entity_filter --n 100000
    python -m benchmarks.entity_filter --n 100000      # again: reuses the stored memories

N memories with clustered random 384-d vectors (no model: this measures the database) and
three entities linked to a rare, a middling and a common share of them. Each filter runs
as semantic search runs it (`semantic_ranked`, candidates = 50) in two spellings: names
matched inside the SQL (what `apply_filters` does without a project) and names resolved to
the project's entity ids first (with one). Exact search (index scans off) is the reference.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

from benchmarks.common import percentiles, setup_django, table, write_results

SLUG = "entity-filter-bench"
CLUSTERS = 200
DIMENSIONS = 384
SHARES = {"rare": 0.0003, "mid": 0.01, "common": 0.2}  # of the memories linked to each entity


def _unit(vectors: Any) -> Any:
    import numpy as np

    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def _populate(n: int, rng: Any, centers: Any) -> Any:
    """A fresh project of `n` memories (HNSW index rebuilt afterwards, as a restore would)."""
    from django.db import connection

    from entities.models import Entity, EntityMemory
    from memories.models import Memory
    from tenants.services import project_create

    project = project_create(slug=SLUG)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS memory_embedding_hnsw")
    for start in range(0, n, 5000):
        batch = range(start, min(n, start + 5000))
        noise = rng.normal(scale=0.8, size=(len(batch), DIMENSIONS))
        vectors = _unit(centers[[i % CLUSTERS for i in batch]] + noise)
        Memory.objects.bulk_create(
            Memory(
                project=project,
                content=f"note {i}",
                content_hash=hashlib.sha256(f"{SLUG}-{i}".encode()).hexdigest(),
                user_id=f"user-{i % 50}",
                embedding=vector.tolist(),
            )
            for i, vector in zip(batch, vectors, strict=True)
        )
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(
            "CREATE INDEX memory_embedding_hnsw ON memories_memory USING hnsw"
            " (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
    ids = list(Memory.objects.filter(project=project).values_list("pk", flat=True))
    for name, share in SHARES.items():
        entity = Entity.objects.create(
            project=project, name=name, normalized_name=name, lookup_keys=[name]
        )
        chosen = rng.choice(len(ids), size=max(1, int(share * n)), replace=False)
        EntityMemory.objects.bulk_create(
            (EntityMemory(project=project, entity=entity, memory_id=ids[i]) for i in chosen),
            batch_size=5000,
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory, entities_entitymemory, entities_entity")
    return project


def _search(project: Any, filters: Any, vector: list[float], *, resolve: bool, exact: bool) -> list:
    from django.db import connection, transaction

    from memories.selectors.filters import apply_filters
    from memories.selectors.memories import memory_queryset
    from memories.selectors.search.semantic import semantic_ranked

    queryset = apply_filters(
        memory_queryset(project=project), filters, project=project if resolve else None
    )
    with transaction.atomic(), connection.cursor() as cursor:
        if exact:
            cursor.execute("SET LOCAL enable_indexscan = off")
        ranked = semantic_ranked(queryset, vector, limit=50, min_similarity=0.0)
    return [memory.pk for memory, _ in ranked]


def _plan(project: Any, filters: Any, vector: list[float], *, resolve: bool) -> str:
    from pgvector.django import CosineDistance

    from memories.selectors.filters import apply_filters
    from memories.selectors.memories import memory_queryset

    queryset = apply_filters(
        memory_queryset(project=project), filters, project=project if resolve else None
    )
    nearest = queryset.annotate(distance=CosineDistance("embedding", vector))
    text = nearest.order_by("distance")[:50].explain()
    return "exact" if "memory_embedding_hnsw" not in text else "hnsw"


def _measure(project: Any, label: str, filters: Any, queries: Any, *, resolve: bool) -> dict:
    returned, recall, times = [], [], []
    for vector in queries:
        vector = vector.tolist()
        _search(project, filters, vector, resolve=resolve, exact=False)  # warm the cache
        start = time.perf_counter()
        got = _search(project, filters, vector, resolve=resolve, exact=False)
        times.append((time.perf_counter() - start) * 1000)
        truth = _search(project, filters, vector, resolve=resolve, exact=True)
        returned.append(len(got))
        recall.append(len(set(got) & set(truth)) / max(1, len(truth)))
    return {
        "filter": label,
        "plan": _plan(project, filters, queries[0].tolist(), resolve=resolve),
        "returned_mean": sum(returned) / len(returned),
        "returned_min": min(returned),
        "recall": sum(recall) / len(recall),
        **percentiles(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    setup_django("bench_entityfilter")
    import numpy as np

    from entities.models import Entity
    from memories.selectors.filters import MemoryFilters
    from tenants.models import Project

    rng = np.random.default_rng(3)
    centers = rng.normal(size=(CLUSTERS, DIMENSIONS))
    project = Project.objects.filter(slug=SLUG).first() or _populate(args.n, rng, centers)
    queries = _unit(centers[: args.queries] + rng.normal(scale=0.8, size=(args.queries, 384)))
    ids = dict(Entity.objects.filter(project=project).values_list("name", "pk"))
    rows = []
    for name in SHARES:
        for resolve in (False, True):
            label = f"entities=[{name}] " + ("resolved" if resolve else "matched in SQL")
            filters = MemoryFilters(entities=[name])
            rows.append(_measure(project, label, filters, queries, resolve=resolve))
        filters = MemoryFilters(entity_ids=[ids[name]])
        rows.append(_measure(project, f"entity_ids=[{name}]", filters, queries, resolve=True))
    rows.append(_measure(project, "no filter", MemoryFilters(), queries, resolve=True))
    columns = ["filter", "plan", "returned_mean", "returned_min", "recall", "p50", "p95"]
    print(f"semantic search, 50 candidates, {project.memories.count()} memories")
    print(table(columns, [[row[c] for c in columns] for row in rows]))
    print(write_results("entity_filter", {"n": args.n, "shares": SHARES, "results": rows}))


if __name__ == "__main__":
    main()
