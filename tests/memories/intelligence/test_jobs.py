"""Background jobs: tasks, the every-N-inserts trigger, schedules, commands, Redis broker."""

from __future__ import annotations

from io import StringIO
from multiprocessing import Queue, Value

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memories.models import MaintenanceState, Memory
from memories.tasks import SCHEDULES


def _old(memory_id, days=400):
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then)


def test_every_n_inserts_enqueue_a_consolidation_that_runs_on_commit(
    alice, django_capture_on_commit_callbacks
):
    alice.project.settings = {"consolidation_interval": 3, "dedup_threshold": 1.0}
    alice.project.save()
    with django_capture_on_commit_callbacks(execute=True):
        for content in ("one fact", "two facts", "three facts"):
            alice.post("/api/v1/memories/", {"content": content, "user_id": "u"})
    state = MaintenanceState.objects.get(project=alice.project)
    assert state.last_consolidation_at is not None
    assert state.inserts_since_consolidation == 0


def test_the_decay_task_runs_through_the_queue_synchronously(alice, remember):
    from django_q.tasks import async_task, result

    memory = remember("Old news")
    _old(memory["id"])
    task_id = async_task("memories.tasks.run_decay", alice.project.pk)
    assert result(task_id)["alice"]["transitions"] == {"active>archived": 1}
    assert Memory.objects.get(pk=memory["id"]).state == "archived"


def test_setup_schedules_is_idempotent(db):
    from django_q.models import Schedule

    call_command("setup_schedules", stdout=StringIO())
    call_command("setup_schedules", stdout=StringIO())
    assert sorted(Schedule.objects.values_list("name", flat=True)) == sorted(SCHEDULES)
    assert Schedule.objects.get(name="memory-decay").schedule_type == Schedule.HOURLY
    assert Schedule.objects.get(name="memory-prune").schedule_type == Schedule.DAILY


def test_commands_print_a_summary(alice, remember):
    memory = remember("Old news")
    _old(memory["id"], days=200)
    out = StringIO()
    call_command("run_decay", "--project", "alice", stdout=out, verbosity=0)
    assert "alice: 1 scanned, 1 updated (active>archived 1)" in out.getvalue()
    call_command("prune_memories", "--project", "alice", "--dry-run", stdout=out, verbosity=0)
    assert "alice: would prune 1" in out.getvalue()
    call_command("consolidate_memories", "--project", "alice", stdout=out, verbosity=0)
    assert "alice: 1 scanned, 0 clusters" in out.getvalue()


def test_commands_fail_with_a_non_zero_exit_on_an_unknown_project(db):
    with pytest.raises(CommandError, match="no project"):
        call_command("run_decay", "--project", "nope", stdout=StringIO())


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)  # the worker closes connections, like in production
def test_a_job_travels_through_the_redis_broker(alice, remember, settings, monkeypatch):
    """Enqueue on the Redis broker, take it off the queue and run it in a django-q worker."""
    from django_q.brokers.redis_broker import Redis
    from django_q.conf import Conf
    from django_q.models import Task
    from django_q.monitor import monitor
    from django_q.signing import SignedPackage
    from django_q.tasks import async_task
    from django_q.worker import worker

    redis_url = "redis://127.0.0.1:6379/0"
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": redis_url, "sync": False}
    settings.Q_CLUSTER.pop("orm", None)
    monkeypatch.setattr(Conf, "REDIS", redis_url)
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "SYNC", False)
    broker = Redis(list_key="memoryplatform-test-intel")
    broker.purge_queue()
    memory = remember("Old news")
    _old(memory["id"])

    task_id = async_task("memories.tasks.run_decay", alice.project.pk, broker=broker, sync=False)
    assert broker.queue_size() == 1
    assert Memory.objects.get(pk=memory["id"]).state == "active"  # nothing ran yet
    [(_, package)] = broker.dequeue()
    tasks, results = Queue(), Queue()
    tasks.put(SignedPackage.loads(package))
    tasks.put("STOP")
    worker(tasks, results, Value("f", -1))
    results.put("STOP")
    monitor(results, broker)

    assert Task.objects.get(id=task_id).success is True
    assert Memory.objects.get(pk=memory["id"]).state == "archived"
