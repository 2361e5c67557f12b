"""The live feed's replay buffer in the database (used when REDIS_URL is not set).

`project_id` is a plain column, not a foreign key: the event infrastructure sits below the
apps and imports none of them. Rows are trimmed to the newest `MEMORY_EVENT_REPLAY` per
project as events arrive (platformcore/event_log.py). The table keeps the name it was created
with, when the event log lived in the composition root (`memoryplatform_eventrecord`).
"""

from __future__ import annotations

from django.db import models


class EventRecord(models.Model):
    """One live-feed event; its id is the event id clients resume from (`Last-Event-ID`)."""

    project_id = models.BigIntegerField()
    type = models.CharField(max_length=40)
    at = models.DateTimeField()
    body = models.JSONField(help_text="The event as sent, without its id.")

    class Meta:
        db_table = "memoryplatform_eventrecord"
        verbose_name = "live-feed event"
        indexes = [models.Index(fields=["project_id", "id"], name="event_project_id")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.type} (project {self.project_id})"
