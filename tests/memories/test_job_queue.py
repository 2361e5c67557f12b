"""Background jobs a write asks for (utility scores, summaries, consolidation) are queued with
the write: on the database broker the job's row is part of the write's transaction, so a
stored memory always has its jobs queued (no process killed between the commit and the
enqueue can lose them) and a write that rolls back leaves none."""

from __future__ import annotations

import pytest
from django.db import transaction
from django_q.conf import Conf
from django_q.models import OrmQ

from memories.services.memories import MemoryInput, memory_create
from platformcore.lib.actor import command

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued_jobs(monkeypatch):
    """Jobs go to the database queue, as on a server (the tests otherwise run them inline)."""
    monkeypatch.setattr(Conf, "SYNC", False)
    OrmQ.objects.all().delete()
    yield lambda: OrmQ.objects.count()
    OrmQ.objects.all().delete()


def test_a_stored_memory_has_its_job_queued(alice, queued_jobs) -> None:
    response = alice.post("/api/v1/memories/", {"content": "Ada prefers green tea", "user_id": "u"})
    assert response.status_code == 201, response.content
    assert queued_jobs() >= 1


def test_a_write_that_rolls_back_queues_nothing(alice, queued_jobs) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        memory_create(
            project=alice.project,
            data=MemoryInput(content="Ada prefers black coffee", user_id="u"),
            actor=command("test"),
        )
        assert queued_jobs() >= 1  # queued inside the transaction...
        raise RuntimeError("the caller fails after the store")
    assert queued_jobs() == 0  # ...and gone with it
