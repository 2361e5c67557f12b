from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models
from django.db.models import Q

from platformcore.db.index_swap import swap_index

SEARCH_VECTOR = "memory_search_vector_gin"
USER_VECTORS = "memory_project_user_vectors"
BUILD_SEARCH_VECTOR = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory "
    "USING gin (search_vector){where}"
)
BUILD_USER_VECTORS = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory (project_id, user_id) "
    "INCLUDE (id, agent_id, run_id, memory_type, state, deleted_at, created_at, embedding, "
    "vector_pending){where}"
)
LIVE = " WHERE deleted_at IS NULL"


class Migration(migrations.Migration):
    # Built CONCURRENTLY beside the old indexes, which are then dropped: searches and writes
    # go on meanwhile.
    atomic = False

    dependencies = [("memories", "0012_vector_pending")]

    # Every read is of live memories (memory_queryset), but the keyword index and the covering
    # index of a user's vectors held every row. Once consolidation has merged a repetitive
    # import, a third of the rows are soft-deleted: a keyword branch fetched their table rows
    # only to drop them (73% of one common term's matches on such a store), and a user's exact
    # ranking read their vectors. Live rows only now; a soft delete, whose new row version no
    # longer qualifies, adds nothing to either index.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                *swap_index(
                    SEARCH_VECTOR,
                    BUILD_SEARCH_VECTOR.replace("{where}", LIVE),
                    BUILD_SEARCH_VECTOR.replace("{where}", ""),
                ),
                *swap_index(
                    USER_VECTORS,
                    BUILD_USER_VECTORS.replace("{where}", LIVE),
                    BUILD_USER_VECTORS.replace("{where}", ""),
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name=SEARCH_VECTOR),
                migrations.RemoveIndex(model_name="memory", name=USER_VECTORS),
                migrations.AddIndex(
                    model_name="memory",
                    index=GinIndex(
                        condition=Q(deleted_at__isnull=True),
                        fields=["search_vector"],
                        name=SEARCH_VECTOR,
                    ),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=models.Index(
                        condition=Q(deleted_at__isnull=True),
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
            ],
        ),
    ]
