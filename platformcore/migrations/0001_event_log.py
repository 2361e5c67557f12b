"""The live feed's replay buffer. Its table was created by the composition root's first
migration (`memoryplatform.0001_event_log`), when the event log lived there; this migration
takes the model over in Django's state only, so existing databases keep their table and rows,
and a fresh one gets the table from that first migration, which every `migrate` runs."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="EventRecord",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("project_id", models.BigIntegerField()),
                        ("type", models.CharField(max_length=40)),
                        ("at", models.DateTimeField()),
                        (
                            "body",
                            models.JSONField(help_text="The event as sent, without its id."),
                        ),
                    ],
                    options={
                        "db_table": "memoryplatform_eventrecord",
                        "verbose_name": "live-feed event",
                        "indexes": [
                            models.Index(fields=["project_id", "id"], name="event_project_id")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
