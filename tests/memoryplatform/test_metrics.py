"""Prometheus metrics at /metrics: bounded labels, the measurements each hook makes, who
may read them, and the multiprocess mode."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ
from django_q.tasks import async_task
from mcp.server.mcpserver.exceptions import ToolError
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from mcpserver.auth import bound_api_key
from mcpserver.tools import call
from memories.models import Memory
from memoryplatform import gauges
from platformcore import metrics
from platformcore.lib.errors import InvalidInput
from tenants.models import ApiKey
from tests.conftest import Tenant, make_tenant


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def scrape(client, **extra) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


def store(tenant: Tenant, count: int, state: str = "active") -> None:
    for i in range(count):
        Memory.objects.create(
            project=tenant.project, content=f"m{i}", content_hash=f"{state}{i}", user_id="u1",
            state=state,
        )  # fmt: skip


@pytest.mark.django_db
def test_metrics_are_served_in_the_prometheus_text_format(anonymous) -> None:
    anonymous.get("/health/live")
    samples = scrape(anonymous)
    key = (
        "memory_http_requests_total",
        (("method", "GET"), ("route", "health-live"), ("status", "2xx")),
    )
    assert samples[key] >= 1
    assert anonymous.get("/metrics/").status_code == 200  # with the slash too, no redirect


@pytest.mark.django_db
def test_requests_are_labelled_by_route_name_never_by_raw_path(alice: Tenant, remember) -> None:
    memory_id = remember("User prefers dark mode")["id"]
    before = sample("memory_http_requests_total", route="memory-detail", method="GET", status="2xx")
    assert alice.get(f"/api/v1/memories/{memory_id}/").status_code == 200
    alice.get("/no/such/path/123/")
    after = sample("memory_http_requests_total", route="memory-detail", method="GET", status="2xx")
    assert after == before + 1
    assert sample("memory_http_requests_total", route="unmatched", method="GET", status="4xx") >= 1
    text = alice.client.get("/metrics").content.decode()
    assert memory_id not in text
    assert "/no/such/path" not in text


@pytest.mark.django_db
def test_search_latency_is_recorded_by_mode(alice: Tenant, remember) -> None:
    remember("User prefers dark mode")
    before = sample("memory_search_duration_seconds_count", mode="keyword")
    response = alice.post("/api/v1/memories/search/", {"query": "dark mode", "mode": "keyword"})
    assert response.status_code == 200, response.json()
    assert sample("memory_search_duration_seconds_count", mode="keyword") == before + 1
    refused = alice.post("/api/v1/memories/search/", {"query": "dark", "mode": "nonsense"})
    assert refused.status_code == 400
    assert (
        REGISTRY.get_sample_value("memory_search_duration_seconds_count", {"mode": "nonsense"})
        is None
    )


def _run_tool(api_key: ApiKey, scope: str, body) -> None:
    async def run() -> None:
        with bound_api_key(api_key):
            await call(scope, body)

    asyncio.run(run())


# Bodies of tools as the MCP tools write them: `call()` labels a call by the function the
# body is defined in.
def probe_tool(api_key: ApiKey) -> None:
    _run_tool(api_key, "read", lambda key: 1)


def failing_tool(api_key: ApiKey) -> None:
    def run(key: ApiKey) -> int:
        raise InvalidInput("bad", fields={"content": ["required"]})

    _run_tool(api_key, "read", run)


def writing_tool(api_key: ApiKey) -> None:
    _run_tool(api_key, "write", lambda key: 1)


def tool_calls(tool: str, outcome: str) -> float:
    return sample("memory_mcp_tool_calls_total", tool=tool, outcome=outcome)


@pytest.mark.django_db
def test_mcp_tool_calls_are_counted_by_tool_and_outcome() -> None:
    reader = make_tenant("alice", scopes=["read"])
    api_key = ApiKey.objects.select_related("project").get(project=reader.project)
    labels = [("probe_tool", "ok"), ("failing_tool", "error"), ("writing_tool", "denied")]
    before = [tool_calls(*label) for label in labels]
    probe_tool(api_key)
    with pytest.raises(ToolError):
        failing_tool(api_key)
    with pytest.raises(ToolError):  # a read key asking to write
        writing_tool(api_key)
    assert [tool_calls(*label) for label in labels] == [n + 1 for n in before]


def test_an_open_stream_counts_as_a_live_connection_until_it_ends() -> None:
    closed = []

    async def stream() -> AsyncIterator[str]:
        try:
            yield "event: subscribed\n\n"
            yield ": keepalive\n\n"
        finally:
            closed.append(True)

    async def read_one() -> float:
        counted = metrics.counted_stream("sse", stream())
        await counted.__anext__()
        during = sample("memory_live_connections", transport="sse")
        await counted.aclose()  # the client went away
        return during

    before = sample("memory_live_connections", transport="sse")
    assert asyncio.run(read_one()) == before + 1
    assert sample("memory_live_connections", transport="sse") == before
    assert closed == [True]  # the stream's own cleanup ran (it leaves its group there)


@pytest.mark.django_db
def test_queue_depth_is_read_from_the_broker_at_scrape_time(anonymous) -> None:
    OrmQ.objects.create(key=get_broker().list_key, payload="job", lock=timezone.now())
    samples = scrape(anonymous)
    assert samples[("memory_queue_jobs", (("state", "waiting"),))] == 1
    assert samples[("memory_queue_jobs", (("state", "running"),))] == 0


@pytest.mark.django_db
def test_memories_by_state_name_the_largest_projects_and_sum_the_rest(settings) -> None:
    settings.MEMORY_METRICS_TOP_PROJECTS = 2
    store(make_tenant("alice"), 3)
    store(make_tenant("bob"), 2)
    store(make_tenant("bob"), 1, state="dormant")
    store(make_tenant("charlie"), 1)
    counts = {(p, s): n for p, s, n in gauges.memories_by_state(2)}
    assert counts == {("alice", "active"): 3, ("bob", "active"): 2, ("bob", "dormant"): 1,
                      ("_other", "active"): 1}  # fmt: skip


@pytest.mark.django_db
def test_memories_by_state_are_exposed_per_project(anonymous) -> None:
    store(make_tenant("alice"), 2)
    families = {f.name for f in gauges.MemoryStateCollector().collect()}
    assert families == {"memory_memories"}
    samples = {
        tuple(sorted(s.labels.items())): s.value
        for f in gauges.MemoryStateCollector().collect()
        for s in f.samples
    }
    assert samples[(("project", "alice"), ("state", "active"))] == 2


@pytest.mark.django_db
def test_background_jobs_are_timed_by_function_and_outcome() -> None:
    before = sample("memory_job_duration_seconds_count", func="math.floor", outcome="success")
    async_task("math.floor", 1.5, sync=True)
    after = sample("memory_job_duration_seconds_count", func="math.floor", outcome="success")
    assert after == before + 1


@pytest.mark.django_db
def test_metrics_are_refused_to_a_remote_client_without_a_token(anonymous) -> None:
    assert anonymous.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    forwarded = anonymous.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert forwarded.status_code == 403  # a proxy on this host forwards strangers
    assert forwarded.json()["error"]["code"] == "permission_denied"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [
        "HTTP_X_REAL_IP",
        "HTTP_FORWARDED",
        "HTTP_X_FORWARDED_PROTO",
        "HTTP_VIA",
        "HTTP_TRUE_CLIENT_IP",
    ],
)
def test_metrics_are_refused_through_a_proxy_on_this_host_whichever_header_it_sends(
    anonymous, header: str
) -> None:
    response = anonymous.get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: "203.0.113.9"})
    assert response.status_code == 403


@pytest.mark.django_db
def test_with_a_token_set_only_its_bearer_reads_metrics_from_any_address(
    anonymous, settings
) -> None:
    settings.MEMORY_METRICS_TOKEN = "s3cret-metrics"
    refused = anonymous.get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    remote = anonymous.get(
        "/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer s3cret-metrics"
    )
    assert remote.status_code == 200


@pytest.mark.django_db
def test_an_api_key_is_not_a_metrics_token(alice: Tenant, settings) -> None:
    settings.MEMORY_METRICS_TOKEN = "s3cret-metrics"
    assert alice.get("/metrics").status_code == 401


@pytest.mark.django_db
def test_metrics_of_another_process_directory_are_merged_into_one_family(
    anonymous, tmp_path: Path
) -> None:
    # what `serve` does for its worker cluster: the worker writes multiprocess files
    record_a_job = (
        "from datetime import datetime, timedelta; from platformcore import metrics; "
        "now = datetime.now(); metrics.job_finished(task={'func': 'probe.job', "
        "'started': now - timedelta(seconds=2), 'stopped': now, 'success': True})"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", record_a_job], env=env, check=True, cwd=settings.BASE_DIR)
    metrics.include_directory(tmp_path)
    try:
        text = anonymous.get("/metrics").content.decode()
    finally:
        metrics.forget_directory(tmp_path)
    assert text.count("# TYPE memory_job_duration_seconds histogram") == 1
    assert 'memory_job_duration_seconds_count{func="probe.job",outcome="success"} 1.0' in text


def test_multiprocess_mode_adds_up_the_values_of_every_process(tmp_path: Path) -> None:
    one_request = (
        "from platformcore import metrics; "
        "metrics.observe_request(route='health', method='GET', status=200, seconds=0.01)"
    )
    scrape_all = "from platformcore import metrics; print(metrics.render([]).decode())"
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):  # two server processes
        subprocess.run(
            [sys.executable, "-c", one_request], env=env, check=True, cwd=settings.BASE_DIR
        )
    text = subprocess.run(
        [sys.executable, "-c", scrape_all], env=env, check=True, capture_output=True, text=True,
        cwd=settings.BASE_DIR,
    ).stdout  # fmt: skip
    assert 'memory_http_requests_total{method="GET",route="health",status="2xx"} 2.0' in text
