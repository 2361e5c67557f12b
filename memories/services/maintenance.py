"""The consolidation pipeline a caller triggers (`memory_consolidate`, `POST
/memories/consolidate/`): every maintenance stage in one run, with per-stage counts, as
Memento's consolidator returns them.

Stages, in order (each one the service the scheduled jobs run):
1. `embeddings`: back-fill the vectors of memories stored while the provider was down
   (the merge needs them);
2. `merge`: near-duplicate clusters merged, contradictions recorded (consolidation.py);
3. `utility`: memories not assessed since their last change scored (utility.py; at most
   UTILITY_PER_RUN, the rest left to the jobs);
4. `decay`: scores and states recomputed, newly archived memories compressed (lifecycle.py;
   runs even while the project's scheduled decay is paused: this run was asked for);
5. `prune`: the prune job's candidates removed, under its rules (never a preference, a
   pinned, preserved or important memory) and only where the project's pruning is on.

`stages` picks a subset. `dry_run` runs every stage in a transaction that is rolled back
(the utility and embedding stages only count what they would do), so the counts are what a
real run would report now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from django.db import transaction

from memories.services.backfill import backfill_queryset, memories_backfill_embeddings
from memories.services.consolidation import memories_consolidate
from memories.services.lifecycle import memories_decay, memories_prune
from memories.services.utility import memories_score_utility
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

STAGES = ("embeddings", "merge", "utility", "decay", "prune")
UTILITY_PER_RUN = 1000


def check_stages(stages: Any) -> tuple[str, ...]:
    if stages is None:
        return STAGES
    if not isinstance(stages, list | tuple) or not stages:
        raise InvalidInput("stages must be a non-empty list", fields={"stages": ["a list"]})
    unknown = [stage for stage in stages if stage not in STAGES]
    if unknown:
        message = f"unknown stage(s) {', '.join(map(str, unknown))}; one of {', '.join(STAGES)}"
        raise InvalidInput(message, fields={"stages": [message]})
    return tuple(stage for stage in STAGES if stage in stages)


def memories_maintain(
    *,
    project: Project,
    actor: Actor,
    similarity_threshold: float | None = None,
    dry_run: bool = False,
    since: datetime | Literal["last"] | None = None,
    stages: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the pipeline's `stages` (default: all); the merge report's fields plus `stages`
    (the per-stage counts) and `stages_run`."""
    chosen = check_stages(stages)
    if not dry_run:
        return _run(project, actor, chosen, similarity_threshold, since, dry_run=False)
    with transaction.atomic():
        body = _run(project, actor, chosen, similarity_threshold, since, dry_run=True)
        transaction.set_rollback(True)
    return body


def _run(
    project: Project,
    actor: Actor,
    stages: tuple[str, ...],
    threshold: float | None,
    since: datetime | Literal["last"] | None,
    *,
    dry_run: bool,
) -> dict[str, Any]:
    counts: dict[str, Any] = dict.fromkeys(
        (
            "embeddings_backfilled",
            "duplicates_merged",
            "clusters_found",
            "contradictions_found",
            "utility_scored",
            "decayed",
            "promoted",
            "demoted",
            "compressed",
            "restored",
            "pruned",
        ),
        0,
    )
    body: dict[str, Any] = {"dry_run": dry_run}
    if "embeddings" in stages:
        if dry_run:
            missing = backfill_queryset(project=project, reembed_all=False).count()
            counts["embeddings_backfilled"] = missing
        else:
            counts["embeddings_backfilled"] = memories_backfill_embeddings(project=project).embedded
    if "merge" in stages:
        merged = memories_consolidate(
            project=project,
            actor=actor,
            similarity_threshold=threshold,
            dry_run=dry_run,
            since=since,
        )
        body.update(merged.as_dict())
        counts["duplicates_merged"] = merged.memories_merged
        counts["clusters_found"] = merged.clusters_found
        counts["contradictions_found"] = merged.contradictions_found
    if "utility" in stages:
        scored = memories_score_utility(project=project, limit=UTILITY_PER_RUN, dry_run=dry_run)
        counts["utility_scored"], counts["utility_pending"] = scored.scored, scored.pending
    if "decay" in stages:
        decay = memories_decay(project=project, actor=actor)
        counts["decayed"] = decay.updated
        counts["promoted"], counts["demoted"] = decay.promoted, decay.demoted
        counts["compressed"], counts["restored"] = decay.compressed, decay.restored
        counts["transitions"] = decay.transitions
    if "prune" in stages:
        pruned = memories_prune(project=project, actor=actor, dry_run=dry_run, scheduled=True)
        counts["pruned"], counts["pruning_enabled"] = pruned.pruned, pruned.enabled
    body["dry_run"] = dry_run
    body["stages"] = counts
    body["stages_run"] = list(stages)
    return body
