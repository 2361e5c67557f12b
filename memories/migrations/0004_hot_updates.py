from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0003_embedding_space'),
    ]

    # Decay, reinforcement and state changes rewrite rows often. Without an index on `state`
    # and with free space left on each page, PostgreSQL can update them in place (HOT)
    # instead of re-inserting every row version into every index, the HNSW one included.
    # The 1.5 kB embedding would otherwise be moved out of line (TOAST) once a row passes 2 kB,
    # costing three extra page reads per row in every exact (filtered) vector scan.
    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE PLAIN",
            reverse_sql="ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
        migrations.RunSQL(
            "ALTER TABLE memories_memory SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE memories_memory RESET (fillfactor)",
        ),
        migrations.RemoveIndex(
            model_name='memory',
            name='memory_project_state',
        ),
    ]
