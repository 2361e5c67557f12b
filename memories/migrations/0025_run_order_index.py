from django.db import migrations, models
from django.db.models import Case, F, When

from platformcore.db.index_swap import swap_index

NAME = "memory_project_run"
BUILD = "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory ({columns})"
IN_ORDER = (
    "project_id, run_id, (CASE WHEN occurred_at IS NULL THEN created_at ELSE occurred_at END),"
    " created_at, id"
)


class Migration(migrations.Migration):
    # Built CONCURRENTLY beside the old index, which is then dropped: searches and writes go
    # on meanwhile.
    atomic = False

    dependencies = [("memories", "0024_embedding_space_switch")]

    # Hybrid search reads the memories said just before and after its best hits in their run
    # (search/neighbours.py), in the run's order. Through (project, run_id) each of those reads
    # sorted the whole run. The run's order in the index makes each a range of a few index
    # entries (docs/search.md, "Neighbours", has the figures); the index still
    # serves every filter on the run, so it replaces the old one rather than joining it. The
    # order is written as a CASE, not COALESCE: under row-level security PostgreSQL checks a
    # condition holding a COALESCE only after the policy (it cannot tell it leaks nothing), so
    # the comparison with the hit's position was no index condition there.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=swap_index(
                NAME,
                BUILD.replace("{columns}", IN_ORDER),
                BUILD.replace("{columns}", "project_id, run_id"),
            ),
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name=NAME),
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(
                        F("project"),
                        F("run_id"),
                        Case(
                            When(occurred_at__isnull=True, then=F("created_at")),
                            default=F("occurred_at"),
                        ),
                        F("created_at"),
                        F("id"),
                        name=NAME,
                    ),
                ),
            ],
        ),
    ]
