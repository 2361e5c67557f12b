"""Does the knowledge graph help retrieval? LoCoMo recall@k with and without the graph.

Ingests LoCoMo through the normal bulk store (so the offline extractor builds the graph as it
would in production), then compares hybrid search without boosts, hybrid with the graph boost
at several weights, and `mode=graph` alone, per question category (multi-hop especially).
Reuses the LoCoMo benchmark's ingest and scoring (benchmarks/locomo.py).

    MEMORY_EMBEDDED_DB_NAME=bench_graph python -m benchmarks.graph_locomo
    python -m benchmarks.graph_locomo --reuse --weights 0.1,0.2,0.3
"""

from __future__ import annotations

import argparse
import json

from benchmarks.common import setup_django, table, write_results
from benchmarks.locomo import DEFAULT_DATA, KS, evaluate, ingest, summarise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", default="dated")
    parser.add_argument("--fusion", default="rrf", help="hybrid fusion: rrf or minmax")
    parser.add_argument("--weights", default="0.1,0.2,0.4", help="graph boost weights to try")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--reuse", action="store_true", help="keep an existing ingest")
    args = parser.parse_args()
    setup_django("bench_graph")

    from entities.models import Entity, Relation
    from tenants.models import Project
    from tenants.services import project_create

    samples = json.loads(DEFAULT_DATA.read_text())
    if args.conversations:
        samples = samples[: args.conversations]
    slug = f"graph-locomo-{args.format}"
    project = Project.objects.filter(slug=slug).first()
    if project is None or not args.reuse:
        if project is not None:
            project.delete()
        project = project_create(slug=slug)
        stats = ingest(project, samples, args.format, 256)
        print(f"ingested {stats['memories']} turns in {stats['seconds']} s")
    graph = {
        "entities": Entity.objects.filter(project=project).count(),
        "relations": Relation.objects.filter(project=project).count(),
    }
    print(f"graph: {graph['entities']} entities, {graph['relations']} relations")

    configs = [("hybrid (no boost)", "hybrid", {"fusion": args.fusion, "boosts": False})]
    for weight in map(float, args.weights.split(",")):
        options = {"fusion": args.fusion, "graph_weight": weight}
        configs.append((f"hybrid + graph {weight}", "hybrid", options))
    configs.append(("graph only", "graph", {}))
    results = {}
    for label, mode, options in configs:
        config = {"label": label, "mode": mode, "options": options}
        recalls, _ = evaluate(project, samples, config, 0.0)
        summary = summarise(recalls)
        results[label] = summary
        rows = [[name, *(v[f"@{k}"] for k in KS), int(v["n"])] for name, v in summary.items()]
        print(f"\n{label}")
        print(table(["category", *(f"R@{k}" for k in KS), "n"], rows))
    path = write_results("graph_locomo", {"format": args.format, "graph": graph, **results})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
