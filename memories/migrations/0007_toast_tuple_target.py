from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0006_live_state_index'),
    ]

    # With the embedding kept in the row (0004), a typical memory is just over PostgreSQL's
    # default 2 kB toast threshold, so the toaster moved the next largest value out of line:
    # the search_vector, read by every keyword match (two more index and heap reads per row,
    # for every term's flag). Rows are now toasted only past 8 kB: a 384-d (or 1536-d)
    # vector, the tsvector and a memory of a page stay in one heap tuple. Rows stored
    # before this migration keep their TOAST pointers until rewritten
    # (`VACUUM FULL memories_memory`, docs/architecture.md).
    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory SET (toast_tuple_target = 8160)",
            reverse_sql="ALTER TABLE memories_memory RESET (toast_tuple_target)",
        ),
    ]
