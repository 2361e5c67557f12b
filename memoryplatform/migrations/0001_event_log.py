from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="EventRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("project_id", models.BigIntegerField()),
                ("type", models.CharField(max_length=40)),
                ("at", models.DateTimeField()),
                ("body", models.JSONField(help_text="The event as sent, without its id.")),
            ],
            options={
                "verbose_name": "live-feed event",
                "indexes": [models.Index(fields=["project_id", "id"], name="event_project_id")],
            },
        ),
    ]
