from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # Built CONCURRENTLY: writes go on while a large store builds the index.
    atomic = False

    dependencies = [
        ('memories', '0009_hnsw_ef_construction_128'),
        ('tenants', '0001_initial'),
    ]

    # Semantic search scoped to one user (filters on user_id, usually with types or a run)
    # was planned as "filter, then sort by distance" once the user's rows were few enough,
    # which read one ~2 kB table page per memory of that user for its embedding: 13 ms for a
    # user of 2,000 memories at 100k, 29 ms for a user of 6,000 at 300k. With the embedding
    # and the filterable columns in the (project, user_id) index, that plan is an index-only
    # scan (513 buffers instead of 1,995; 3 ms), and the 50 winners are loaded by key.
    # The plain (project, user_id) index stays: a keyword search filtered to a user reads
    # the table rows anyway, and through this wide index it took 10 ms at the median
    # instead of 4.6 (~500 more index pages per user of 2,000 memories).
    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(
                fields=['project', 'user_id'],
                include=(
                    'id',
                    'agent_id',
                    'run_id',
                    'memory_type',
                    'state',
                    'deleted_at',
                    'created_at',
                    'embedding',
                ),
                name='memory_project_user_vectors',
            ),
        ),
    ]
