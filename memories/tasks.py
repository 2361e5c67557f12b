"""Background jobs (django-q2). Tasks take ids, never objects, and no worker sees one before
the transaction that asked for it commits (`enqueue`). Each is a thin call into a service;
the same services run synchronously from the management commands."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django_q.conf import Conf
from django_q.tasks import async_task

from memories.services.consolidation import memories_consolidate
from memories.services.keyword_index import keyword_indexes_maintain
from memories.services.layers import memories_layers_maintain, sessions_close_idle
from memories.services.lifecycle import memories_decay, memories_prune
from memories.services.summaries import memories_summarize
from memories.services.utility import memories_score_utility
from memories.services.vector_index import index_pending_vectors, vector_index_maintain
from platformcore.lib.actor import job
from platformcore.lib.db_outage import survives_db_outage
from platformcore.lib.project_scope import all_projects, project_scope
from tenants.models import Project

logger = logging.getLogger(__name__)

# name -> (task path, django-q schedule type); installed by `manage.py setup_schedules`. The
# apps above add the jobs that span the apps in their AppConfig.ready() (maintenance: the
# embeddings refresh).
SCHEDULES = {
    "memory-decay": ("memories.tasks.run_decay", "H"),
    "memory-consolidation": ("memories.tasks.run_consolidation", "D"),
    "memory-prune": ("memories.tasks.run_prune", "D"),
    # a safety net: every deferred bulk write enqueues index_vectors itself
    "memory-vector-index": ("memories.tasks.index_vectors", "H"),
    # the HNSW graph's wear since its build; rebuilt concurrently when worn down
    "memory-vector-index-health": ("memories.tasks.vector_index_health", "H"),
    # short-term memories: the important or often read promoted, the stale expired
    "memory-layers": ("memories.tasks.run_layers", "H"),
    # sessions idle past `session_idle_minutes`: their working memory ends
    "memory-sessions": ("memories.tasks.close_idle_sessions", "I"),
    # utility scores whose queued job was lost with a killed process
    "memory-utility-sweep": ("memories.tasks.sweep_utility", "H"),
    # the keyword (GIN) indexes' estimated bloat; reindexed concurrently past the limit
    "memory-keyword-index-health": ("memories.tasks.keyword_index_health", "H"),
    # OAuth access and refresh tokens, grants: the expired and revoked ones deleted
    "oauth-token-cleanup": ("tenants.oauth.tasks.clear_expired_tokens", "D"),
}


# Minutes between runs of the schedules of type "I" (every N minutes).
SCHEDULE_MINUTES = {"memory-sessions": 5}


def enqueue(func: str, *args: Any, **kwargs: Any) -> None:
    """Queue `func(*args)` for a worker, never before the current transaction commits. On the
    database broker the job's row is written in that transaction: committed or rolled back with
    the write that asked for it, and no statement left for after the commit (nor a job lost to
    a process killed in between). On Redis, or when jobs run inline, it is sent once the
    transaction commits (at once outside one)."""
    if Conf.ORM and not Conf.SYNC and transaction.get_connection(Conf.ORM).in_atomic_block:
        async_task(func, *args, **kwargs)
    else:
        transaction.on_commit(lambda: async_task(func, *args, **kwargs))


def _projects(project_id: int | None) -> Iterator[Project]:
    """Each project (or the one named) in turn, the database scoped to it (row-level security)
    while the caller works on it: a job sees one project at a time."""
    projects = Project.objects.all()
    for project in list(projects.filter(pk=project_id) if project_id is not None else projects):
        with project_scope(project.pk):
            yield project


@survives_db_outage
def summarize_memories(project_id: int, memory_ids: list[str]) -> dict[str, Any]:
    """Enqueued when long memories are stored or edited: write their summaries."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {}
    with project_scope(project.pk):
        return {"summarized": memories_summarize(project=project, memory_ids=memory_ids)}


@survives_db_outage
def run_decay(project_id: int | None = None) -> dict[str, Any]:
    """The hourly run; a project whose decay is paused is left as it is."""
    return {
        p.slug: memories_decay(project=p, actor=job("decay"), scheduled=True).as_dict()
        for p in _projects(project_id)
    }


@survives_db_outage
def run_layers(project_id: int | None = None) -> dict[str, Any]:
    """The hourly run of the layer job (docs/episodes.md)."""
    return {
        p.slug: memories_layers_maintain(project=p, actor=job("layers")).as_dict()
        for p in _projects(project_id)
    }


@survives_db_outage
def close_idle_sessions(project_id: int | None = None) -> dict[str, Any]:
    """Every few minutes: the sessions nobody wrote or read for `session_idle_minutes` end
    (docs/episodes.md, "Working memory")."""
    done = {}
    for project in _projects(project_id):
        closed = sessions_close_idle(project=project, actor=job("sessions"))
        if closed:
            done[project.slug] = [report.as_dict() for report in closed]
    return done


@survives_db_outage
def score_utility(project_id: int, memory_ids: list[str]) -> dict[str, Any]:
    """Enqueued when memories are stored or their content changes: their utility scores."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {}
    with project_scope(project.pk):
        return memories_score_utility(project=project, memory_ids=memory_ids).as_dict()


# The sweep leaves alone what changed in the last SWEEP_GRACE (its queued job may be on its
# way) and scores at most SWEEP_LIMIT memories of a project per run.
SWEEP_GRACE = timedelta(minutes=10)
SWEEP_LIMIT = 2000


@survives_db_outage
def sweep_utility(project_id: int | None = None) -> dict[str, Any]:
    """The hourly safety net of `score_utility`: every store and content change queues its
    memory's scoring once it commits, but a web process killed between the commit and the
    queueing (or a COMMIT whose answer was lost) queues nothing. This scores the live
    memories not assessed since a change older than SWEEP_GRACE."""
    if not settings.MEMORY_UTILITY_SCORING:
        return {}
    before = timezone.now() - SWEEP_GRACE
    return {
        p.slug: memories_score_utility(
            project=p, changed_before=before, limit=SWEEP_LIMIT
        ).as_dict()
        for p in _projects(project_id)
    }


@survives_db_outage
def run_prune(project_id: int | None = None) -> dict[str, Any]:
    return {
        p.slug: memories_prune(project=p, actor=job("prune"), scheduled=True).as_dict()
        for p in _projects(project_id)
    }


@survives_db_outage
def run_consolidation(project_id: int | None = None) -> dict[str, Any]:
    """The daily run: each project from where its last consolidation left off."""
    results = {}
    for project in _projects(project_id):
        report = memories_consolidate(project=project, actor=job("consolidation"), since="last")
        results[project.slug] = {k: v for k, v in report.as_dict().items() if k != "clusters"}
    return results


@survives_db_outage
def consolidate_project(project_id: int) -> dict[str, Any]:
    """Enqueued after every N inserts of one project."""
    return run_consolidation(project_id)


@survives_db_outage
def backfill_embeddings() -> None:
    """Embed memories stored without a vector (the search app's command does the work)."""
    call_command("backfill_embeddings", verbosity=0)


@survives_db_outage
def index_vectors() -> dict[str, Any]:
    """Enqueued after each bulk write that deferred its vectors: put them in the HNSW graph."""
    with all_projects("job: index deferred vectors"):
        return index_pending_vectors().as_dict()


@survives_db_outage
def vector_index_health() -> dict[str, Any]:
    """The HNSW graph's wear since its build; rebuilt concurrently past the limit."""
    with all_projects("job: vector index health"):
        return vector_index_maintain().as_dict()


@survives_db_outage
def keyword_index_health() -> list[dict[str, Any]]:
    """The keyword indexes' bloat; reindexed concurrently past the limit."""
    with all_projects("job: keyword index health"):
        return [item.as_dict() for item in keyword_indexes_maintain()]
