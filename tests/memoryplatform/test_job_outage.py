"""Background jobs outlive a database outage and a killed worker.

The outage is real: the job's own server process is ended from another connection
(`pg_terminate_backend`, what a restart or an administrator does to it), and the job runs in a
django-q2 worker, in this process, as `qcluster` runs it.
"""

from __future__ import annotations

import importlib
import inspect
import time
import uuid
from collections.abc import Iterator
from multiprocessing import Queue, Value
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from platformcore.lib.db_outage import MARKER, is_db_outage, survives_db_outage
from platformcore.lib.project_scope import all_projects

pytestmark = pytest.mark.django_db(transaction=True)  # the worker closes connections

ATTEMPTS: list[int] = []  # one entry per run of a test job (the backend's pid)


def _terminate_own_backend() -> None:
    """End this connection's server process from another connection, as a restart would."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**_conninfo(), autocommit=True) as other:
        ended = other.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]
    assert ended


def _conninfo() -> dict[str, Any]:
    params = connection.get_connection_params()
    return {k: v for k, v in params.items() if k in {"dbname", "user", "password", "host", "port"}}


@survives_db_outage
def score_after_outages(project_id: int, memory_ids: list[str], outages: int) -> dict[str, Any]:
    """The utility-scoring job, whose connection is ended under it `outages` times first."""
    from memories.tasks import score_utility

    ATTEMPTS.append(1)
    if len(ATTEMPTS) <= outages:
        _terminate_own_backend()
    return score_utility(project_id, memory_ids)


@survives_db_outage
def failing_job() -> None:
    ATTEMPTS.append(1)
    raise ValueError("bad data")


@survives_db_outage
def slow_statement_job() -> None:
    """A statement the database cancels (its timeout): a refusal, not an outage."""
    ATTEMPTS.append(1)
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 50")
        cursor.execute("SELECT pg_sleep(1)")


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    ATTEMPTS.clear()
    yield
    ATTEMPTS.clear()


def run_in_worker(func: str, *args: Any) -> dict[str, Any]:
    """Run a job through django-q2's worker loop (in this process) and return its result."""
    from django_q.worker import worker

    tasks, results = Queue(), Queue()
    tasks.put(
        {
            "id": uuid.uuid4().hex,
            "name": "outage-test",
            "func": func,
            "args": args,
            "kwargs": {},
            "started": timezone.now(),
        }
    )
    tasks.put("STOP")
    worker(tasks, results, Value("f", -1), timeout=60)
    return results.get(timeout=5)


def _unscored_memory(remember: Any) -> str:
    from memories.models import Memory

    memory = remember("The user prefers window seats on long flights")
    with all_projects("test: reset the score"):
        Memory.objects.filter(pk=memory["id"]).update(verified_at=None)
    return str(memory["id"])


def _verified_at(memory_id: str) -> Any:
    from memories.models import Memory

    with all_projects("test: read the score"):
        return Memory.objects.get(pk=memory_id).verified_at


def test_a_job_whose_connection_dies_waits_for_the_database_and_completes(alice, remember):
    memory_id = _unscored_memory(remember)
    func = f"{__name__}.score_after_outages"

    result = run_in_worker(func, alice.project.pk, [memory_id], 2)

    assert result["success"] is True, result["result"]
    assert result["result"]["scored"] == 1
    assert len(ATTEMPTS) == 3  # two attempts ended with their connection, the third completed
    assert _verified_at(memory_id) is not None


def test_an_ordinary_error_is_not_retried(db):
    result = run_in_worker(f"{__name__}.failing_job")

    assert result["success"] is False
    assert "bad data" in result["result"]
    assert len(ATTEMPTS) == 1


def test_a_statement_the_database_cancels_is_not_an_outage(db):
    result = run_in_worker(f"{__name__}.slow_statement_job")

    assert result["success"] is False
    assert "statement timeout" in result["result"]
    assert len(ATTEMPTS) == 1


def test_the_wait_is_bounded_then_the_job_fails_as_before(alice, remember, settings):
    settings.MEMORY_JOB_DB_RETRY_SECONDS = 1
    memory_id = _unscored_memory(remember)
    started = time.monotonic()

    result = run_in_worker(f"{__name__}.score_after_outages", alice.project.pk, [memory_id], 99)

    assert result["success"] is False
    assert time.monotonic() - started < 10
    assert 2 <= len(ATTEMPTS) <= 4  # retried while the window lasted, then gave up
    assert _verified_at(memory_id) is None


def test_an_outage_is_told_from_other_database_errors(db):
    from django.db import IntegrityError, OperationalError

    refused = psycopg.OperationalError("connection failed: Connection refused")
    assert is_db_outage(refused)
    wrapped = OperationalError("server closed the connection unexpectedly")
    wrapped.__cause__ = refused
    assert is_db_outage(wrapped)
    assert not is_db_outage(IntegrityError("duplicate key"))
    assert not is_db_outage(ValueError("bad data"))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 50")
            cursor.execute("SELECT pg_sleep(1)")
    except OperationalError as exc:
        assert not is_db_outage(exc)  # 57014: cancelled, the database is there
    else:
        pytest.fail("the statement was not cancelled")
    finally:
        connection.close()


TASK_MODULES = [
    "memories.tasks",
    "entities.tasks",
    "documents.tasks",
    "maintenance.tasks",
    "tenants.oauth.tasks",
]


def test_every_background_job_survives_a_database_outage():
    from memories.tasks import SCHEDULES

    names = {path for path, _kind in SCHEDULES.values()}
    names.add("portability.jobs.run_export")
    names.add("entities.tasks.extract_memory_graph")
    names.add("documents.tasks.embed_document")
    for module_name in TASK_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module_name and not name.startswith("_") and name != "enqueue":
                names.add(f"{module_name}.{name}")
    for path in sorted(names):
        module_name, name = path.rsplit(".", 1)
        fn = getattr(importlib.import_module(module_name), name)
        assert getattr(fn, MARKER, False), f"{path} is not decorated with @survives_db_outage"


# --- the Redis queue: a job taken by a worker that died is handed out again -----------------


@pytest.fixture
def redis_broker(settings, monkeypatch) -> Iterator[Any]:
    import redis
    from django_q.conf import Conf

    from platformcore.lib.redis_jobs import AcknowledgedRedis

    redis_url = "redis://127.0.0.1:6379/0"
    try:
        redis.from_url(redis_url).ping()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": redis_url, "sync": False}
    settings.Q_CLUSTER.pop("orm", None)
    monkeypatch.setattr(Conf, "REDIS", redis_url)
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(Conf, "RETRY", 1)  # seconds until a taken job is due back
    monkeypatch.setattr(Conf, "POLL", 0.05)
    broker = AcknowledgedRedis(list_key=f"memoryplatform-test-outage-{uuid.uuid4().hex[:8]}")
    yield broker
    broker.delete_queue()


@pytest.mark.redis
def test_a_job_taken_by_a_worker_that_died_is_handed_out_again(alice, remember, redis_broker):
    from django_q.models import Task
    from django_q.monitor import monitor
    from django_q.signing import SignedPackage
    from django_q.tasks import async_task
    from django_q.worker import worker

    memory_id = _unscored_memory(remember)
    task_id = async_task(
        "memories.tasks.score_utility", alice.project.pk, [memory_id], broker=redis_broker
    )
    [(_ack, package)] = redis_broker.dequeue()  # taken by a worker that is then killed
    assert (redis_broker.queue_size(), redis_broker.lock_size()) == (0, 1)
    assert redis_broker.dequeue() is None  # not handed out again while it may still run

    time.sleep(1.2)  # `retry` seconds later
    [(ack, again)] = redis_broker.dequeue()
    assert again == package
    tasks, results = Queue(), Queue()
    tasks.put(SignedPackage.loads(again) | {"ack_id": ack})
    tasks.put("STOP")
    worker(tasks, results, Value("f", -1))
    results.put("STOP")
    monitor(results, redis_broker)  # saves the result and acknowledges the job

    assert Task.objects.get(id=task_id).success is True
    assert _verified_at(memory_id) is not None
    assert (redis_broker.queue_size(), redis_broker.lock_size()) == (0, 0)
    time.sleep(1.2)
    assert redis_broker.dequeue() is None  # acknowledged: never handed out again
