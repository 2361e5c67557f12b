import pgvector.django.indexes
from django.db import migrations, models
from django.db.models import Q

from platformcore.db.index_swap import swap_index

HNSW = "memory_embedding_hnsw"
USER_VECTORS = "memory_project_user_vectors"
PENDING = "memory_vector_pending"
BUILD_HNSW = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory "
    "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128) "
    "WHERE deleted_at IS NULL{pending}"
)
BUILD_USER_VECTORS = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory (project_id, user_id) "
    "INCLUDE (id, agent_id, run_id, memory_type, state, deleted_at, created_at, embedding{more})"
)


class Migration(migrations.Migration):
    # Built CONCURRENTLY beside the old indexes, which are then dropped: searches and writes
    # go on meanwhile (24 s for the HNSW graph of 101k live memories here).
    atomic = False

    dependencies = [
        ("memories", "0011_hnsw_live_rows"),
        ("tenants", "0001_initial"),
    ]

    # Deferred vector indexing. Inserting a row into the HNSW graph is most of what a bulk
    # write costs PostgreSQL (~1 ms a row at 100k memories, ef_construction 128). A bulk write
    # with `vector_index: deferred` stores its rows with `vector_pending`, which keeps them out
    # of the graph (its predicate); the indexing job then clears the flag in batches, and the
    # new row version enters the graph. Until then searches rank those rows exactly: every
    # statement that ranks through the graph says `NOT vector_pending` (so the planner can use
    # the partial index) and unions the pending rows, found by `memory_vector_pending`.
    # The covering (project, user_id) index carries the flag, so a user's exact ranking stays
    # index-only with it.
    operations = [
        migrations.AddField(
            model_name="memory",
            name="vector_pending",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                *swap_index(
                    HNSW,
                    BUILD_HNSW.replace("{pending}", " AND NOT vector_pending"),
                    BUILD_HNSW.replace("{pending}", ""),
                ),
                *swap_index(
                    USER_VECTORS,
                    BUILD_USER_VECTORS.replace("{more}", ", vector_pending"),
                    BUILD_USER_VECTORS.replace("{more}", ""),
                ),
                migrations.RunSQL(
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {PENDING} ON memories_memory "
                    "(project_id) WHERE deleted_at IS NULL AND vector_pending",
                    reverse_sql=f"DROP INDEX CONCURRENTLY IF EXISTS {PENDING}",
                ),
                # statistics for the new column: without them the planner guessed a third of
                # a user's rows pending and read them all from the covering index (0.85 ms a
                # search for a user of 2,400 memories) instead of the empty pending index
                migrations.RunSQL("ANALYZE memories_memory", reverse_sql=migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name=USER_VECTORS),
                migrations.RemoveIndex(model_name="memory", name=HNSW),
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(
                        fields=["project", "user_id"],
                        include=(
                            "id",
                            "agent_id",
                            "run_id",
                            "memory_type",
                            "state",
                            "deleted_at",
                            "created_at",
                            "embedding",
                            "vector_pending",
                        ),
                        name=USER_VECTORS,
                    ),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=pgvector.django.indexes.HnswIndex(
                        condition=Q(deleted_at__isnull=True, vector_pending=False),
                        ef_construction=128,
                        fields=["embedding"],
                        m=16,
                        name=HNSW,
                        opclasses=["vector_cosine_ops"],
                    ),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(
                        condition=Q(deleted_at__isnull=True, vector_pending=True),
                        fields=["project"],
                        name=PENDING,
                    ),
                ),
            ],
        ),
    ]
