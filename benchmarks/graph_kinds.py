"""The graph across kinds against the entity-only walk, in the same run, on the same graph.

Builds (once; reused on later runs) the 10k-entity / 50k-relation graph of benchmarks.graph
and joins to it what the other kinds add: memories linked to entities (and episodes holding
them), memory links, documents whose chunks mention entities, memories citing chunks. Then
times from the same random start entities, at depth 3:

- `entity_subgraph` (the entity walk: one recursive CTE, nodes, edges among them);
- `graph_subgraph` limited to entities (`node_types=entity`): the same walk through the
  cross-kind code (one statement per level);
- `graph_subgraph` over every kind (entities, memories, episodes, documents, chunks).

Each start goes through the three in turn, so a shared machine's load falls on all alike.

    MEMORY_EMBEDDED_DB_NAME=bench_graph python -m benchmarks.graph_kinds
    python -m benchmarks.graph_kinds --samples 200 --rebuild
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from typing import Any

from benchmarks.common import Timer, percentiles, setup_django, table, write_results
from benchmarks.graph import build, parse_graph_args

MEMORIES_PER_ENTITY = 2  # 20k memories for 10k entities, each linked to two entities
DOCUMENTS = 200
CHUNKS_PER_DOCUMENT = 10
EPISODES = 100


def build_kinds(project: Any, seed: int, rebuild: bool) -> None:
    from django.db import connection, transaction

    from documents.models import ChunkEntity, Document, DocumentChunk, MemoryRef
    from entities.models import Entity, EntityMemory
    from memories.models import Episode, Memory, MemoryLink

    if Memory.objects.filter(project=project).exists() and not rebuild:
        print("reusing memories, documents and episodes")
        return
    rng = random.Random(seed)
    entity_ids = list(Entity.objects.filter(project=project).values_list("pk", flat=True))
    with Timer() as timer, transaction.atomic():
        for model in (MemoryRef, ChunkEntity, DocumentChunk, Document, MemoryLink):
            model.objects.filter(project=project).delete()
        EntityMemory.objects.filter(project=project).delete()
        Memory.objects.filter(project=project).delete()
        Episode.objects.filter(project=project).delete()
        episodes = Episode.objects.bulk_create(
            [Episode(project=project, user_id="u1", name=f"episode {i}") for i in range(EPISODES)]
        )
        memories = []
        for i in range(len(entity_ids) * MEMORIES_PER_ENTITY):
            content = f"memory {i} about entity {i % len(entity_ids)}"
            memories.append(
                Memory(
                    project=project,
                    content=content,
                    content_hash=hashlib.sha256(content.encode()).hexdigest(),
                    user_id="u1",
                    token_count=8,
                    episode=episodes[i % EPISODES] if i % 4 == 0 else None,
                )
            )
        memories = Memory.objects.bulk_create(memories, batch_size=5000)
        EntityMemory.objects.bulk_create(
            [
                EntityMemory(
                    project=project,
                    memory=memory,
                    entity_id=entity_ids[(i + k * 7919) % len(entity_ids)],
                    relevance=0.8,
                )
                for i, memory in enumerate(memories)
                for k in range(2)
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        MemoryLink.objects.bulk_create(
            [
                MemoryLink(
                    id=uuid.uuid4(),
                    project=project,
                    from_memory=memories[i],
                    to_memory=memories[i + 1],
                    link_type="relates_to",
                    strength=0.5,
                )
                for i in range(0, len(memories) - 1, 10)
            ],
            batch_size=5000,
        )
        documents = Document.objects.bulk_create(
            [
                Document(
                    project=project,
                    user_id="u1",
                    title=f"runbook {i}",
                    mime_type="text/markdown",
                    size_bytes=1000,
                    content_hash=f"{i:064d}",
                    chunk_count=CHUNKS_PER_DOCUMENT,
                    episode=episodes[i % EPISODES] if i % 3 == 0 else None,
                )
                for i in range(DOCUMENTS)
            ]
        )
        chunks = DocumentChunk.objects.bulk_create(
            [
                DocumentChunk(
                    project=project,
                    document=document,
                    ordinal=n,
                    char_start=n * 100,
                    char_end=n * 100 + 100,
                    content=f"passage {n} of {document.title}",
                    token_count=20,
                )
                for document in documents
                for n in range(CHUNKS_PER_DOCUMENT)
            ],
            batch_size=5000,
        )
        ChunkEntity.objects.bulk_create(
            [
                ChunkEntity(
                    project=project,
                    chunk=chunk,
                    document_id=chunk.document_id,
                    entity_id=entity_ids[int(len(entity_ids) * rng.random() ** 2)],
                )
                for chunk in chunks
                for _ in range(3)
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        MemoryRef.objects.bulk_create(
            [
                MemoryRef(
                    project=project,
                    memory=memories[rng.randrange(len(memories))],
                    chunk=chunk,
                    document_id=chunk.document_id,
                )
                for chunk in chunks[::2]
            ],
            ignore_conflicts=True,
        )
    with connection.cursor() as cursor:
        for table_name in (
            "memories_memory",
            "entities_entitymemory",
            "memories_memorylink",
            "documents_document",
            "documents_documentchunk",
            "documents_chunkentity",
            "documents_memoryref",
        ):
            cursor.execute(f"ANALYZE {table_name}")
    print(
        f"built {len(memories)} memories, {EPISODES} episodes, {len(documents)} documents, "
        f"{len(chunks)} chunks in {timer.seconds:.1f}s"
    )


def measure_interleaved(starts: list[int], paths: dict[str, Any]) -> dict[str, dict]:
    """Each start through every path in turn, so that the load of a shared machine falls on
    all of them alike (measured one path after the other, the load moved between them)."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for fn in paths.values():
        fn(starts[0])  # warm the plan cache and buffers
    for start in starts:
        for name, fn in paths.items():
            began = time.perf_counter()
            fn(start)
            samples[name].append((time.perf_counter() - began) * 1000)
    return {name: percentiles(values) for name, values in samples.items()}


def main() -> None:
    args = parse_graph_args(__doc__.split("\n\n")[0])
    setup_django("bench_graph")

    from entities.models import Entity
    from entities.selectors.graph import NodeRef, Walk, graph_subgraph
    from entities.selectors.traversal import entity_subgraph

    project = build(args.entities, args.relations, args.seed, args.rebuild)
    build_kinds(project, args.seed, args.rebuild)
    ids = list(Entity.objects.filter(project=project).values_list("pk", flat=True))
    starts = random.Random(args.seed + 1).sample(ids, min(args.samples, len(ids)))
    entity_only = Walk(node_types=("entity",))
    rows, results = [], []
    for depth, cap in ((3, 100), (3, 1000)):
        sizes: dict[str, list[int]] = {"entity walk": [], "kinds, entities": [], "all kinds": []}

        def today(start: int, depth: int = depth, cap: int = cap, sizes: dict = sizes) -> None:
            graph = entity_subgraph(project=project, entity_id=start, depth=depth, max_nodes=cap)
            sizes["entity walk"].append(len(graph.nodes))

        def kinds(
            start: int,
            walk: Walk,
            name: str,
            depth: int = depth,
            cap: int = cap,
            sizes: dict = sizes,
        ) -> None:
            graph = graph_subgraph(
                project=project,
                node=NodeRef("entity", start),
                depth=depth,
                walk=walk,
                max_nodes=cap,
            )
            sizes[name].append(len(graph.nodes))

        paths = {
            "entity walk": today,
            "kinds, entities": lambda s: kinds(s, entity_only, "kinds, entities"),
            "all kinds": lambda s: kinds(s, Walk(), "all kinds"),
        }
        timed = measure_interleaved(starts, paths)
        for name, figures in timed.items():
            mean = round(sum(sizes[name]) / max(1, len(sizes[name])), 1)
            rows.append([depth, cap, name, mean, figures["p50"], figures["p95"]])
            results.append(
                {"depth": depth, "max_nodes": cap, "path": name, "nodes": mean, **figures}
            )
    print(table(["depth", "max_nodes", "path", "nodes", "p50 ms", "p95 ms"], rows))
    path = write_results(
        "graph_kinds",
        {
            "entities": args.entities,
            "relations": args.relations,
            "samples": len(starts),
            "results": results,
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
