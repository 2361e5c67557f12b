"""Health probes: liveness checks nothing but the process, readiness checks what serving
needs (database, channel layer, worker, embedder), each with its status and latency."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ

from memoryplatform import health

PROBES = ["/health", "/health/", "/health/ready", "/health/ready/", "/health/live", "/health/live/"]


@pytest.fixture
def queued_jobs(settings) -> None:
    """Jobs go to the queue (as in production) instead of running inline."""
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}


@pytest.fixture
def embedded_worker() -> Iterator[subprocess.Popen[bytes]]:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    health.watch_embedded_worker(worker)
    yield worker
    health.watch_embedded_worker(None)
    worker.kill()
    worker.wait()


@pytest.mark.django_db
@pytest.mark.parametrize("path", PROBES)
def test_every_probe_answers_with_or_without_a_trailing_slash_and_never_redirects(
    anonymous, path: str
) -> None:
    response = anonymous.get(path)
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_readiness_reports_each_check_with_its_status_and_latency(anonymous) -> None:
    body = anonymous.get("/health/ready").json()
    assert set(body["checks"]) == {"database", "channel_layer", "worker", "embedder"}
    for name, check in body["checks"].items():
        assert check["status"] == "ok", (name, check)
        assert check["latency_ms"] >= 0
    assert body["checks"]["worker"]["detail"].startswith("jobs run inline")


@pytest.mark.django_db
def test_readiness_keeps_the_fields_existing_probes_read(anonymous) -> None:
    body = anonymous.get("/health/").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"


def test_without_a_database_readiness_is_503_and_liveness_still_200(anonymous) -> None:
    # no django_db mark: pytest-django refuses every connection, as a dead server would
    ready = anonymous.get("/health")
    assert ready.status_code == 503
    assert ready.json()["status"] == "degraded"
    assert ready.json()["checks"]["database"]["status"] == "error"
    assert ready.json()["database"].startswith("error")
    assert anonymous.get("/health/live").status_code == 200


@pytest.mark.django_db
def test_an_unreachable_channel_layer_makes_the_server_not_ready(anonymous, settings) -> None:
    settings.CHANNEL_LAYERS = {  # nothing listens on port 1
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    response = anonymous.get("/health")
    assert response.status_code == 503
    assert response.json()["checks"]["channel_layer"]["status"] == "error"


@pytest.mark.django_db
def test_the_worker_serve_started_counts_while_it_runs(
    anonymous, queued_jobs, embedded_worker
) -> None:
    response = anonymous.get("/health")
    assert response.status_code == 200
    worker = response.json()["checks"]["worker"]
    assert worker["status"] == "ok"
    assert "started by serve is running" in worker["detail"]


@pytest.mark.django_db
def test_a_worker_serve_started_that_exited_makes_the_server_not_ready(
    anonymous, queued_jobs, embedded_worker
) -> None:
    embedded_worker.kill()
    embedded_worker.wait()
    response = anonymous.get("/health/ready/")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"]["status"] == "error"
    assert anonymous.get("/health/live/").status_code == 200


@pytest.mark.django_db
def test_a_stalled_queue_is_a_warning_not_a_reason_to_stop_serving(anonymous, queued_jobs) -> None:
    an_hour_ago = timezone.now() - timedelta(hours=1)
    OrmQ.objects.create(key=get_broker().list_key, payload="job", lock=an_hour_ago)
    response = anonymous.get("/health")
    assert response.status_code == 200
    worker = response.json()["checks"]["worker"]
    assert worker["status"] == "warn"
    assert "1 waiting" in worker["detail"]


@pytest.mark.django_db
def test_the_embedder_check_reports_the_local_model_loaded_or_loadable(anonymous) -> None:
    embedder = anonymous.get("/health").json()["checks"]["embedder"]
    assert embedder["status"] == "ok"
    assert embedder["detail"] in {"loaded", "not loaded yet, loadable"}


@pytest.mark.django_db
def test_a_remote_embedder_is_not_called_by_the_check(anonymous, settings) -> None:
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    embedder = anonymous.get("/health").json()["checks"]["embedder"]
    assert embedder["status"] == "ok"
    assert "not called" in embedder["detail"]
