"""The memory link vocabulary as a CHECK constraint, not only the service's check.

Rows written before the constraint with a type outside the set become `relates_to`, their
original type kept in `metadata.original_link_type`; where that would duplicate a link of the
same pair, the extra row goes (the unique constraint is per pair and type)."""

from django.db import migrations, models

LINK_TYPES = [
    "relates_to",
    "supports",
    "contradicts",
    "supersedes",
    "superseded_by",
    "caused_by",
    "resolved_by",
    "causes",
    "part_of",
    "contains",
    "extends",
    "references",
    "precedes",
    "follows",
]

NORMALISE = """
WITH unknown AS (
    SELECT id, project_id, from_memory_id, to_memory_id, link_type,
           row_number() OVER (PARTITION BY project_id, from_memory_id, to_memory_id
                              ORDER BY created_at, id) AS n
    FROM memories_memorylink WHERE link_type <> ALL(%(known)s)
), dropped AS (
    DELETE FROM memories_memorylink l USING unknown u
    WHERE l.id = u.id AND (u.n > 1 OR EXISTS (
        SELECT 1 FROM memories_memorylink k
        WHERE k.project_id = u.project_id AND k.from_memory_id = u.from_memory_id
          AND k.to_memory_id = u.to_memory_id AND k.link_type = 'relates_to'))
    RETURNING l.id
)
UPDATE memories_memorylink l
SET link_type = 'relates_to',
    metadata = l.metadata || jsonb_build_object('original_link_type', l.link_type)
FROM unknown u
WHERE l.id = u.id AND u.id NOT IN (SELECT id FROM dropped)
"""


def normalise(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(NORMALISE, {"known": LINK_TYPES})


class Migration(migrations.Migration):
    dependencies = [("memories", "0015_utility_decay_control_archive")]

    operations = [
        migrations.RunPython(normalise, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="memorylink",
            constraint=models.CheckConstraint(
                condition=models.Q(link_type__in=LINK_TYPES), name="memorylink_type_known"
            ),
        ),
    ]
