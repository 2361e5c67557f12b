"""Memory intelligence throughput: offline extraction + decisions, consolidation and decay.

1. `add` offline: synthetic conversations through the whole pipeline (extract, embed, 5
   neighbours, decide, apply with history) -> facts/s; the extractor alone -> facts/s.
2. Decay, prune (dry run) and consolidation at 10k and 100k memories of one project, with
   synthetic 384-d vectors where ~10% of memories are near-copies (cos ~0.93) of another.

    MEMORY_EMBEDDED_DB_NAME=bench_intel python -m benchmarks.intelligence
    python -m benchmarks.intelligence --sizes 10000 --conversations 50
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import timedelta
from typing import Any

from benchmarks.common import Timer, setup_django, table, write_results

SUBJECTS = ["Python", "Rust", "hiking", "jazz", "tea", "chess", "Berlin", "Kyoto", "cats", "SQL"]
TEMPLATES = [
    "I love {a}.",
    "My favourite city is {a}.",
    "I work at {a} Labs as an engineer.",
    "I live in {a}.",
    "Hi! How are you today?",
    "I don't like {a} at all.",
    "Remember that the {a} review is on Fridays.",
    "What do you think about {a}?",
]


def conversation(rng: random.Random) -> list[dict[str, str]]:
    turns = []
    for _ in range(3):
        text = " ".join(
            rng.choice(TEMPLATES).format(a=rng.choice(SUBJECTS)) for _ in range(rng.randint(1, 3))
        )
        turns += [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    return turns


def bench_add(project: Any, conversations: int, seed: int) -> dict[str, Any]:
    from memories.services.extraction.messages import parse_messages
    from memories.services.extraction.offline import extract_facts_offline
    from memories.services.extraction.pipeline import memories_add
    from memoryplatform.lib.actor import command

    rng = random.Random(seed)
    convs = [conversation(rng) for _ in range(conversations)]
    with Timer() as extract_timer:
        extracted = sum(len(extract_facts_offline(parse_messages(c))) for c in convs)
    memories_add(
        project=project,
        messages="I like warming up the model.",
        scope=_scope("warmup"),
        actor=command("bench"),
    )
    events: dict[str, int] = {}
    with Timer() as add_timer:
        for index, conv in enumerate(convs):
            result = memories_add(
                project=project,
                messages=conv,
                scope=_scope(f"user-{index % 20}"),
                actor=command("bench"),
            )
            for event in result["results"]:
                events[event["event"]] = events.get(event["event"], 0) + 1
    facts = sum(events.values())
    return {
        "conversations": conversations,
        "facts_extracted": extracted,
        "extract_only_facts_per_s": round(extracted / max(extract_timer.seconds, 1e-9), 1),
        "pipeline_seconds": round(add_timer.seconds, 2),
        "pipeline_facts_per_s": round(facts / max(add_timer.seconds, 1e-9), 1),
        "events": events,
    }


def _scope(user: str) -> Any:
    from memories.services.content import Scope

    return Scope(user_id=user)


def populate(project: Any, size: int, seed: int, batch: int = 5000) -> float:
    """`size` memories in 50 user scopes; 10% are near-copies of an earlier memory."""
    import numpy as np
    from django.utils import timezone

    from memories.models import Memory
    from memories.services.content import content_hash

    rng = np.random.default_rng(seed)
    now = timezone.now()
    base_vectors: list[Any] = []
    with Timer() as timer:
        for start in range(0, size, batch):
            rows = []
            count = min(batch, size - start)
            vectors = rng.normal(size=(count, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for offset in range(count):
                index = start + offset
                user = f"user-{index % 50}"
                vector = vectors[offset]
                if base_vectors and rng.random() < 0.1:
                    source_index, source = base_vectors[int(rng.integers(len(base_vectors)))]
                    user = f"user-{source_index % 50}"
                    vector = source + rng.normal(scale=0.02, size=384).astype(np.float32)
                    vector /= np.linalg.norm(vector)
                elif len(base_vectors) < 20000:
                    base_vectors.append((index, vector))
                content = f"Synthetic memory {index} about topic {index % 977}"
                rows.append(
                    Memory(
                        project=project,
                        content=content,
                        content_hash=content_hash(content),
                        token_count=len(content) // 4,
                        embedding=vector.tolist(),
                        user_id=user,
                        importance=float(rng.uniform(0.2, 1.0)),
                        access_count=int(rng.integers(0, 20)),
                        created_at=now - timedelta(days=float(rng.uniform(0, 500))),
                    )
                )
            Memory.objects.bulk_create(rows, batch_size=1000)
    return timer.seconds


def bench_maintenance(
    project: Any, size: int, seed: int, consolidation: bool = True
) -> dict[str, Any]:
    from memories.models import Memory
    from memories.services.consolidation import memories_consolidate
    from memories.services.lifecycle import memories_decay, memories_prune
    from memoryplatform.lib.actor import command

    Memory.objects.filter(project=project).delete()
    insert_seconds = populate(project, size, seed)
    actor = command("bench")
    with Timer() as decay_first:
        first = memories_decay(project=project, actor=actor)
    with Timer() as decay_again:
        again = memories_decay(project=project, actor=actor)
    with Timer() as prune_timer:
        pruned = memories_prune(project=project, actor=actor, dry_run=True)
    result = {
        "memories": size,
        "insert_seconds": round(insert_seconds, 2),
        "decay_first_run_seconds": round(decay_first.seconds, 2),
        "decay_first_run_updated": first.updated,
        "decay_second_run_seconds": round(decay_again.seconds, 2),
        "decay_second_run_updated": again.updated,
        "prune_dry_run_seconds": round(prune_timer.seconds, 2),
        "prunable": pruned.pruned,
    }
    if not consolidation:
        return result
    with Timer() as dry_timer:
        dry = memories_consolidate(project=project, actor=actor, dry_run=True)
    with Timer() as consolidate_timer:
        done = memories_consolidate(project=project, actor=actor)
    return {
        **result,
        "consolidate_dry_run_seconds": round(dry_timer.seconds, 2),
        "consolidate_seconds": round(consolidate_timer.seconds, 2),
        "clusters": done.clusters_found,
        "merged": done.memories_merged,
        "memories_scanned": dry.memories_scanned,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-consolidation", action="store_true", help="decay and prune only")
    args = parser.parse_args(argv)
    setup_django("bench_intel")
    from tenants.models import Project

    Project.objects.filter(slug__startswith="bench-intel").delete()
    add_project = Project.objects.create(slug="bench-intel-add")
    add = bench_add(add_project, args.conversations, args.seed)
    print(table(["metric", "value"], [[k, v] for k, v in add.items()]))
    rows = []
    for size in [int(s) for s in args.sizes.split(",") if s]:
        project = Project.objects.create(slug=f"bench-intel-{size}")
        rows.append(bench_maintenance(project, size, args.seed, not args.no_consolidation))
        print(table(list(rows[-1]), [list(rows[-1].values())]), flush=True)
        project.delete()
    path = write_results("intelligence", {"add": add, "maintenance": rows})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
