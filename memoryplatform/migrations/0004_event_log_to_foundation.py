"""The live feed's replay buffer moved to the foundation (platformcore.EventRecord, same table):
the composition root lets go of the model in Django's state only; the table stays."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memoryplatform", "0003_unguessable_ids"),
        ("platformcore", "0001_event_log"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="EventRecord")],
            database_operations=[],
        ),
    ]
