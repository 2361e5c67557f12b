"""Utility scoring (utility_score, verified_at, per-memory tool feedback), decay control
(a per-memory decay rate, the per-project pause of the decay job) and compression of archived
memories (the full text kept in MemoryArchive).

The new columns carry database defaults, so adding them to a large table rewrites nothing."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0014_scoped_keyword_index"),
        ("tenants", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryArchive",
            fields=[
                (
                    "memory",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="archive",
                        serialize=False,
                        to="memories.memory",
                    ),
                ),
                ("content", models.TextField()),
                ("token_count", models.PositiveIntegerField(default=0)),
                ("summary_hash", models.CharField(max_length=64)),
                ("compressed_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "verbose_name_plural": "memory archives",
            },
        ),
        migrations.CreateModel(
            name="MemoryFeedback",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("helpful", models.BooleanField()),
                ("tool_name", models.CharField(blank=True, default="", max_length=100)),
                ("actor", models.CharField(blank=True, default="", max_length=255)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.AddField(
            model_name="maintenancestate",
            name="decay_paused_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="maintenancestate",
            name="decay_paused_by",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
        migrations.AddField(
            model_name="memory",
            name="compressed",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="memory",
            name="decay_rate",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="memory",
            name="utility_score",
            field=models.FloatField(db_default=0.5, default=0.5),
        ),
        migrations.AddField(
            model_name="memory",
            name="verified_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("utility_score__gte", 0.0), ("utility_score__lte", 1.0)),
                name="memory_utility_score_in_unit_interval",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("decay_rate__isnull", True),
                    models.Q(("decay_rate__gte", 0.0), ("decay_rate__lte", 1.0)),
                    _connector="OR",
                ),
                name="memory_decay_rate_in_range",
            ),
        ),
        migrations.AddField(
            model_name="memoryarchive",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.project"
            ),
        ),
        migrations.AddField(
            model_name="memoryfeedback",
            name="memory",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="feedback",
                to="memories.memory",
            ),
        ),
        migrations.AddField(
            model_name="memoryfeedback",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.project"
            ),
        ),
        migrations.AddIndex(
            model_name="memoryfeedback",
            index=models.Index(fields=["project", "memory"], name="memoryfeedback_memory"),
        ),
    ]
