"""Memory intelligence throughput: offline extraction + decisions, consolidation and decay.

1. `add` offline: synthetic conversations through the whole pipeline (extract, embed, 5
   neighbours, decide, apply with history) -> facts/s; the extractor alone -> facts/s.
2. Decay, prune (dry run) and consolidation at 10k and 100k memories of one project (50
   user scopes), next to another project a quarter its size in the same table. Rows are
   written straight into the table with precomputed vectors: the real embeddings of 350
   distinct sentences (embedded once) plus Gaussian noise (same sentence: cos ~0.56), and
   ~10% near-copies (cos ~0.93) of an earlier memory of the same scope. Consolidation: a full
   run (dry, real), then 1,000 new memories (a fifth near-copies of old ones) and the
   scheduled incremental run (dry, real).

    MEMORY_EMBEDDED_DB_NAME=bench_intel python -m benchmarks.intelligence
    python -m benchmarks.intelligence --sizes 10000 --conversations 50
    python -m benchmarks.intelligence --sizes 100000 --conversations 5 --no-decay --compare-plans
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
    from memories.services.fact_extraction.messages import parse_messages
    from memories.services.fact_extraction.pipeline import memories_add
    from platformcore.lib.actor import command
    from platformcore.lib.text.offline_facts import extract_facts_offline

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
    from memories.memory_scope import Scope

    return Scope(user_id=user)


# Realistic vectors without embedding every row: each memory is the real embedding of one of
# `len(SUBJECTS) * len(BASE_TEMPLATES)` distinct sentences plus Gaussian noise. Two memories of
# the same sentence end at cos ~0.56 and memories of different sentences lower (no merges, no
# contradiction candidates); `NEAR_COPY_SHARE` of them are near-copies of an earlier memory of
# the same scope (noise 0.02, cos ~0.93: the clusters consolidation must find).
BASE_TEMPLATES = [
    "User likes {a}",
    "User's favourite topic is {a}",
    "User works on {a} every weekday",
    "User asked how to get started with {a}",
    "User reads a book about {a}",
    "User wants to learn more about {a}",
    "The team discussed {a} in the weekly meeting",
    "User recommends {a} to friends",
    "User had trouble with {a} last week",
    "User plans a trip related to {a}",
]
BASE_SUBJECTS = [
    *SUBJECTS,
    *("Go", "Haskell", "painting", "cycling", "opera", "coffee", "poker", "Lisbon", "Oslo"),
    *("dogs", "Kubernetes", "gardening", "sailing", "baking", "climbing", "Postgres", "Lima"),
    *("photography", "yoga", "astronomy", "Seoul", "running", "violin", "pottery", "Dublin"),
]
MEMBER_NOISE = 0.045
NEAR_COPY_NOISE = 0.02
NEAR_COPY_SHARE = 0.1
SCOPES = 50
DECOY_SHARE = 0.25  # another project's memories in the same table, relative to `size`
INCREMENTAL_NEW = 1000


def base_vectors() -> tuple[list[str], Any]:
    """The distinct sentences and their real embeddings (embedded once, in one batch)."""
    import numpy as np

    from memories.embeddings import get_embedder

    texts = [t.format(a=s) for t in BASE_TEMPLATES for s in BASE_SUBJECTS]
    return texts, np.asarray(get_embedder().embed_batch(texts), dtype=np.float32)


def _unit(vectors: Any) -> Any:
    import numpy as np

    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


class Population:
    """Memories of one project written straight into the table (precomputed vectors)."""

    def __init__(self, project: Any, bases: tuple[list[str], Any], seed: int) -> None:
        import numpy as np

        self.project, (self.texts, self.vectors) = project, bases
        self.rng = np.random.default_rng(seed)
        self.written: list[tuple[int, str, Any]] = []  # (base, scope, vector) to copy from
        self.count = 0

    def add(
        self,
        size: int,
        *,
        near_copy_share: float = NEAR_COPY_SHARE,
        fresh: bool = False,
        batch: int = 5000,
    ) -> float:
        """Write `size` memories; old ones (created and last changed up to 500 days ago)
        unless `fresh`."""
        with Timer() as timer:
            for start in range(0, size, batch):
                self._write(min(batch, size - start), near_copy_share, fresh)
        return timer.seconds

    def _write(self, count: int, near_copy_share: float, fresh: bool) -> None:
        from memories.models import Memory

        rows = [self._row(near_copy_share, fresh) for _ in range(count)]
        Memory.objects.bulk_create(rows, batch_size=1000)

    def _row(self, near_copy_share: float, fresh: bool) -> Any:
        from django.utils import timezone

        from memories.models import Memory
        from memories.services.content import content_hash

        index, rng = self.count, self.rng
        self.count += 1
        base = int(rng.integers(len(self.texts)))
        scope = f"user-{index % SCOPES}"
        if self.written and rng.random() < near_copy_share:
            base, scope, source = self.written[int(rng.integers(len(self.written)))]
            vector = _unit(source + rng.normal(scale=NEAR_COPY_NOISE, size=384))
        else:
            vector = _unit(self.vectors[base] + rng.normal(scale=MEMBER_NOISE, size=384))
            if len(self.written) < 20000:
                self.written.append((base, scope, vector))
        # the number first: it keeps near-copies from looking like a changed slot value
        # ("User's favourite topic is tea (note 1)" / "... (note 2)"), a contradiction cue
        content = f"Note {index} of {self.project.slug}: {self.texts[base]}"
        age = timedelta(0 if fresh else float(rng.uniform(0, 500)))
        return Memory(
            project=self.project,
            content=content,
            content_hash=content_hash(content),
            token_count=len(content) // 4,
            embedding=vector.astype("float32").tolist(),
            user_id=scope,
            importance=float(rng.uniform(0.2, 1.0)),
            access_count=int(rng.integers(0, 20)),
            created_at=timezone.now() - age,
            updated_at=timezone.now() - age,
        )


def bench_maintenance(
    project: Any,
    size: int,
    seed: int,
    bases: Any,
    *,
    consolidation: bool,
    decay: bool,
    compare_plans: tuple[str, ...] = (),
) -> dict[str, Any]:
    from django.db import connection

    from tenants.models import Project

    population = Population(project, bases, seed)
    result: dict[str, Any] = {"memories": size, "insert_seconds": round(population.add(size), 2)}
    # other tenants share the table: probes must step over their rows
    decoy = Project.objects.create(slug=f"{project.slug}-decoy")
    result["other_project_memories"] = int(size * DECOY_SHARE)
    Population(decoy, bases, seed + 1).add(result["other_project_memories"])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")
    if decay:
        result.update(bench_decay(project))
    if consolidation:
        result.update(bench_consolidation(project, population, compare_plans))
    decoy.delete()
    return result


def bench_decay(project: Any) -> dict[str, Any]:
    from memories.services.lifecycle import memories_decay, memories_prune
    from platformcore.lib.actor import command

    actor = command("bench")
    with Timer() as decay_first:
        first = memories_decay(project=project, actor=actor)
    with Timer() as decay_again:
        again = memories_decay(project=project, actor=actor)
    with Timer() as prune_timer:
        pruned = memories_prune(project=project, actor=actor, dry_run=True)
    return {
        "decay_first_run_seconds": round(decay_first.seconds, 2),
        "decay_first_run_updated": first.updated,
        "decay_second_run_seconds": round(decay_again.seconds, 2),
        "decay_second_run_updated": again.updated,
        "prune_dry_run_seconds": round(prune_timer.seconds, 2),
        "prunable": pruned.pruned,
    }


def bench_consolidation(
    project: Any, population: Population, compare_plans: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A full run (dry, then real), then `INCREMENTAL_NEW` new memories (a fifth of them
    near-copies of older ones) and the scheduled incremental run (dry, then real)."""
    from django.utils import timezone

    from memories.services.consolidation import memories_consolidate
    from platformcore.lib.actor import command

    actor = command("bench")
    with Timer() as dry_timer:
        dry = memories_consolidate(project=project, actor=actor, dry_run=True)
    forced = {plan: _forced_dry_run(project, plan) for plan in compare_plans}
    started = timezone.now()
    with Timer() as full_timer:
        full = memories_consolidate(project=project, actor=actor)
    _as_if_yesterday(project, started)
    population.add(INCREMENTAL_NEW, near_copy_share=0.2, fresh=True)
    with Timer() as inc_dry_timer:
        inc_dry = memories_consolidate(project=project, actor=actor, since="last", dry_run=True)
    with Timer() as inc_timer:
        inc = memories_consolidate(project=project, actor=actor, since="last")
    return {
        "scopes_exact_probed": f"{dry.scopes_exact}/{dry.scopes_probed}",
        "consolidate_dry_run_seconds": round(dry_timer.seconds, 2),
        **{f"dry_run_all_{plan}_seconds": seconds for plan, seconds in forced.items()},
        "consolidate_seconds": round(full_timer.seconds, 2),
        "clusters": full.clusters_found,
        "merged": full.memories_merged,
        "memories_scanned": dry.memories_scanned,
        "incremental_new": INCREMENTAL_NEW,
        "incremental_scanned": inc_dry.memories_scanned,
        "incremental_dry_run_seconds": round(inc_dry_timer.seconds, 2),
        "incremental_seconds": round(inc_timer.seconds, 2),
        "incremental_clusters": inc.clusters_found,
        "incremental_merged": inc.memories_merged,
    }


def _forced_dry_run(project: Any, plan: str) -> float:
    """A dry run with every scope forced onto one plan ("exact" or "probes")."""
    from memories.services import consolidation_pairs
    from memories.services.consolidation import memories_consolidate
    from platformcore.lib.actor import command

    chosen = consolidation_pairs.PAIR_COST_US
    consolidation_pairs.PAIR_COST_US = 0.0 if plan == "exact" else 1e12
    try:
        with Timer() as timer:
            memories_consolidate(project=project, actor=command("bench"), dry_run=True)
    finally:
        consolidation_pairs.PAIR_COST_US = chosen
    return round(timer.seconds, 2)


def _as_if_yesterday(project: Any, started: Any) -> None:
    """Move the full run a day back (its start and the rows it wrote), so the incremental run
    sees what the next daily run sees: what was written since, and the primaries the full
    run merged (they changed after it started)."""
    from django.db.models import F

    from memories.models import MaintenanceState, Memory

    day = timedelta(days=1)
    Memory.objects.filter(project=project, updated_at__gte=started).update(
        updated_at=F("updated_at") - day
    )
    MaintenanceState.objects.filter(project=project).update(
        last_consolidation_at=F("last_consolidation_at") - day
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-consolidation", action="store_true", help="decay and prune only")
    parser.add_argument("--no-decay", action="store_true", help="consolidation only")
    parser.add_argument(
        "--compare-plans",
        action="store_true",
        help="also time a consolidation dry run with every scope on exact pairs, then probes",
    )
    args = parser.parse_args(argv)
    setup_django("bench_intel")
    from tenants.models import Project

    Project.objects.filter(slug__startswith="bench-intel").delete()
    add_project = Project.objects.create(slug="bench-intel-add")
    add = bench_add(add_project, args.conversations, args.seed)
    print(table(["metric", "value"], [[k, v] for k, v in add.items()]))
    rows = []
    bases = base_vectors()
    for size in [int(s) for s in args.sizes.split(",") if s]:
        project = Project.objects.create(slug=f"bench-intel-{size}")
        rows.append(
            bench_maintenance(
                project,
                size,
                args.seed,
                bases,
                consolidation=not args.no_consolidation,
                decay=not args.no_decay,
                compare_plans=("exact", "probes") if args.compare_plans else (),
            )
        )
        print(table(list(rows[-1]), [list(rows[-1].values())]), flush=True)
        project.delete()
    path = write_results("intelligence", {"add": add, "maintenance": rows})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
