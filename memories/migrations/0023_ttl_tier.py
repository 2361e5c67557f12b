"""Memento's TTL tier as a stored column. Memories stored before it get the tier their type
and importance give (the inference of `memories.models.infer_ttl_tier`); the decay job then
demotes the ones unread for long (docs/intelligence.md, "TTL tiers")."""

from django.db import migrations, models

INFER = """
UPDATE memories_memory SET ttl_tier = CASE
    WHEN memory_type = 'preference' OR importance >= 0.8 THEN 'permanent'
    WHEN memory_type IN ('error', 'procedure') THEN 'hot'
    WHEN importance >= 0.5 THEN 'warm'
    ELSE 'cold' END
WHERE ttl_tier IS DISTINCT FROM CASE
    WHEN memory_type = 'preference' OR importance >= 0.8 THEN 'permanent'
    WHEN memory_type IN ('error', 'procedure') THEN 'hot'
    WHEN importance >= 0.5 THEN 'warm'
    ELSE 'cold' END
"""


def infer(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(INFER)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_memory_summaries"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="ttl_tier",
            field=models.CharField(
                choices=[
                    ("hot", "Hot"),
                    ("warm", "Warm"),
                    ("cold", "Cold"),
                    ("permanent", "Permanent"),
                ],
                db_default="warm",
                default="warm",
                max_length=10,
            ),
        ),
        migrations.RunPython(infer, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("ttl_tier__in", ["hot", "warm", "cold", "permanent"])),
                name="memory_ttl_tier_known",
            ),
        ),
    ]
