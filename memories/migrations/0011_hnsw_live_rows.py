import pgvector.django.indexes
from django.db import migrations
from django.db.models import Q

INDEX = "memory_embedding_hnsw"
BUILD = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory "
    "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128){where}"
)


class Migration(migrations.Migration):
    # Built CONCURRENTLY beside the old graph, which is then dropped: searches and writes
    # go on meanwhile (33 s for 122k live memories here; a large store takes minutes).
    atomic = False

    dependencies = [
        ("memories", "0010_user_vectors_index"),
    ]

    # The HNSW graph holds live memories only (`WHERE deleted_at IS NULL`, which every read
    # has). A soft delete changes `deleted_at`, which other indexes hold, so PostgreSQL wrote
    # a new row version into every index, the HNSW graph included: 1.2-1.3 s for 1,000 soft
    # deletes at 172k rows, 0.09 s now. Consolidation soft-deletes every memory it absorbs
    # (prune, delete-by-scope and supersede do too), and those rows stayed in the graph, which
    # searches then stepped over: on a store of 128k live memories and 44k absorbed ones the
    # graph now has 128k nodes (251 MB), not 172k. Recall@10 on that store moved more between
    # two builds of the same graph (0.985, 0.924) than between the two graphs (0.883 with
    # every row).
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    BUILD.format(name=f"{INDEX}_live", where=" WHERE deleted_at IS NULL"),
                    reverse_sql=f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}_live",
                ),
                migrations.RunSQL(
                    f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}",
                    reverse_sql=BUILD.format(name=INDEX, where=""),
                ),
                migrations.RunSQL(
                    f"ALTER INDEX {INDEX}_live RENAME TO {INDEX}",
                    reverse_sql=f"ALTER INDEX {INDEX} RENAME TO {INDEX}_live",
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name=INDEX),
                migrations.AddIndex(
                    model_name="memory",
                    index=pgvector.django.indexes.HnswIndex(
                        condition=Q(deleted_at__isnull=True),
                        ef_construction=128,
                        fields=["embedding"],
                        m=16,
                        name=INDEX,
                        opclasses=["vector_cosine_ops"],
                    ),
                ),
            ],
        ),
    ]
