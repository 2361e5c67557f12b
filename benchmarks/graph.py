"""Knowledge-graph traversal latency on a 10k-entity / 50k-relation graph.

Builds (once; reused on later runs) a project whose relation targets are skewed towards a
few hubs, as real graphs are (target = n·u², u uniform), then times from random start
entities: the recursive CTE alone (`entity_reach`) and the full subgraph the REST endpoint
returns (`entity_subgraph`: CTE + nodes + edges among them), at several depths and
`max_nodes` caps. Target: depth-3 traversal p95 ≤ 20 ms.

    MEMORY_EMBEDDED_DB_NAME=bench_graph python -m benchmarks.graph
    python -m benchmarks.graph --entities 10000 --relations 50000 --samples 200 --rebuild
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks.common import Timer, percentiles, setup_django, table, write_results

PROJECT_SLUG = "bench-graph"
RELATION_TYPES = [
    "works_at",
    "manages",
    "reports_to",
    "collaborates_with",
    "uses",
    "implements",
    "depends_on",
    "related_to",
    "located_in",
    "part_of",
    "created_by",
]
ENTITY_TYPES = ["person", "organization", "project", "technology", "concept", "location"]


def build(entities: int, relations: int, seed: int, rebuild: bool) -> Any:
    from django.db import connection, transaction

    from entities.models import Entity, Relation
    from tenants.models import Project

    project, _ = Project.objects.get_or_create(slug=PROJECT_SLUG, defaults={"name": "bench"})
    have = (
        Entity.objects.filter(project=project).count(),
        Relation.objects.filter(project=project).count(),
    )
    if have == (entities, relations) and not rebuild:
        print(f"reusing graph: {have[0]} entities, {have[1]} relations")
        return project
    rng = random.Random(seed)
    with Timer() as timer, transaction.atomic():
        Relation.objects.filter(project=project).delete()
        Entity.objects.filter(project=project).delete()
        rows = Entity.objects.bulk_create(
            [
                Entity(
                    project=project,
                    name=f"entity {i}",
                    normalized_name=f"entity {i}",
                    lookup_keys=[f"entity {i}"],
                    entity_type=ENTITY_TYPES[i % len(ENTITY_TYPES)],
                )
                for i in range(entities)
            ],
            batch_size=5000,
        )
        ids = [row.pk for row in rows]
        seen: set[tuple[int, int, str]] = set()
        batch: list[Relation] = []
        while len(seen) < relations:
            source = ids[rng.randrange(entities)]
            target = ids[int(entities * rng.random() ** 2)]
            kind = rng.choice(RELATION_TYPES)
            if source == target or (source, target, kind) in seen:
                continue
            seen.add((source, target, kind))
            batch.append(
                Relation(
                    project=project,
                    source_id=source,
                    target_id=target,
                    relation_type=kind,
                    strength=round(rng.random(), 2),
                    confidence=round(0.5 + rng.random() / 2, 2),
                )
            )
        Relation.objects.bulk_create(batch, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE entities_entity; ANALYZE entities_relation;")
    print(f"built {entities} entities, {relations} relations in {timer.seconds:.1f}s")
    return project


def measure(project: Any, starts: list[int], fn: Any) -> dict[str, float]:
    fn(starts[0])  # warm the plan cache and buffers
    samples = []
    for start in starts:
        began = time.perf_counter()
        fn(start)
        samples.append((time.perf_counter() - began) * 1000)
    return percentiles(samples)


def parse_graph_args(description: str) -> argparse.Namespace:
    """The graph's size, the walks sampled and the seed: shared with benchmarks.graph_kinds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rebuild", action="store_true")
    return parser.parse_args()


def main() -> None:
    args = parse_graph_args(__doc__.split("\n\n")[0])
    setup_django("bench_graph")

    from entities.models import Entity
    from entities.selectors.traversal import RelationFilter, entity_reach, entity_subgraph

    project = build(args.entities, args.relations, args.seed, args.rebuild)
    ids = list(Entity.objects.filter(project=project).values_list("pk", flat=True))
    starts = random.Random(args.seed + 1).sample(ids, min(args.samples, len(ids)))
    rows, results = [], []
    plans = [(1, 1000), (2, 1000), (3, 100), (3, 1000), (5, 1000)]
    for depth, cap in plans:
        reached: list[int] = []

        def reach(start: int, depth: int = depth, cap: int = cap, out: list = reached) -> None:
            out.append(
                len(
                    entity_reach(
                        project=project,
                        entity_ids=[start],
                        depth=depth,
                        relations=RelationFilter(),
                        max_nodes=cap,
                    )
                )
            )

        def subgraph(start: int, depth: int = depth, cap: int = cap) -> None:
            entity_subgraph(project=project, entity_id=start, depth=depth, max_nodes=cap)

        cte = measure(project, starts, reach)
        full = measure(project, starts, subgraph)
        mean_nodes = round(sum(reached) / len(reached), 1)
        rows.append([depth, cap, mean_nodes, cte["p50"], cte["p95"], full["p50"], full["p95"]])
        results.append(
            {"depth": depth, "max_nodes": cap, "mean_nodes": mean_nodes, "cte": cte, "full": full}
        )
    headers = ["depth", "max_nodes", "nodes", "CTE p50", "CTE p95", "subgraph p50", "subgraph p95"]
    print(table(headers, rows))
    path = write_results(
        "graph",
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
