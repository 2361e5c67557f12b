"""Search statistics: each answered search counted per project, day and mode, kept in a
rolling table, summed into queries per day, empty-result rate and latency percentiles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics.models import SearchStat
from analytics.selectors import latency_percentile, search_statistics
from analytics.services.search_stats import (
    search_completed,
    search_stats_flush,
    search_stats_trim,
)
from tests.conftest import Tenant, make_tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/analytics/search/"


def _search(tenant: Tenant, text: str, mode: str = "keyword") -> None:
    response = tenant.post("/api/v1/memories/search/", {"query": text, "mode": mode})
    assert response.status_code == 200, response.json()


def test_each_answered_search_is_counted_with_empty_results_and_latency(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy script")
    _search(alice, "deploy")
    _search(alice, "kubernetes helm chart")  # nothing matches

    body = alice.get(URL).json()

    assert body["total"]["searches"] == 3
    assert body["total"]["empty_results"] == 1
    assert body["total"]["empty_rate"] == pytest.approx(1 / 3, abs=1e-4)
    latency = body["total"]["latency_ms"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
    assert body["by_mode"]["keyword"]["searches"] == 3
    assert body["per_day"] == [{"day": timezone.now().date().isoformat(), **body["total"]}]


def test_searches_of_one_day_and_mode_share_one_row(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy", mode="hybrid")
    _search(alice, "deploy", mode="hybrid")
    _search(alice, "deploy", mode="keyword")
    rows = SearchStat.objects.filter(project=alice.project).order_by("mode")
    assert [(row.mode, row.searches) for row in rows] == [("hybrid", 2), ("keyword", 1)]
    assert sum(rows[0].latency_buckets) == 2


def test_another_project_sees_none_of_alices_search_statistics(alice, charlie, remember):
    remember("The deploy script lives in ops/deploy.sh")
    _search(alice, "deploy")
    body = charlie.get(URL).json()
    assert body["total"]["searches"] == 0
    assert body["per_day"] == []


def test_days_must_be_a_positive_number(alice):
    response = alice.get(URL, {"days": 0})
    assert response.status_code == 400
    assert "days" in response.json()["error"]["fields"]


def test_statistics_are_cached_briefly(alice, remember):
    remember("The deploy script lives in ops/deploy.sh")
    assert search_statistics(project=alice.project)["total"]["searches"] == 0
    _search(alice, "deploy")
    assert search_statistics(project=alice.project)["total"]["searches"] == 0  # cached
    assert alice.get(URL, {"days": 7}).json()["total"]["searches"] == 1  # another key


def test_percentiles_interpolate_inside_the_histogram_buckets():
    # bounds 1, 2, 5, 10 ms...: 10 searches in (2, 5], 10 in (5, 10]
    buckets = [0, 0, 10, 10] + [0] * 9
    assert latency_percentile(buckets, 0.5, max_ms=9.0) == 5.0
    assert latency_percentile(buckets, 0.25, max_ms=9.0) == 3.5
    assert latency_percentile(buckets, 1.0, max_ms=9.0) == 9.0  # never past the largest seen
    assert latency_percentile([0] * 13, 0.5, max_ms=0.0) is None


def test_rows_older_than_the_rolling_window_are_deleted(alice, settings):
    settings.MEMORY_ANALYTICS_SEARCH_DAYS = 30
    today = timezone.now().date()
    for days in (0, 29, 31):
        SearchStat.objects.create(
            project=alice.project, day=today - timedelta(days=days), mode="hybrid", searches=1
        )
    assert search_stats_trim(today=today) == 1
    assert SearchStat.objects.filter(project=alice.project).count() == 2


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_searches_are_merged_and_written_by_the_flush(alice):
    for latency in (3.0, 40.0, 700.0):
        search_completed(project=alice.project, mode="semantic", hits=1, latency_ms=latency)
    search_completed(project=alice.project, mode="semantic", hits=0, latency_ms=1.0)
    search_stats_flush()
    row = SearchStat.objects.get(project=alice.project, mode="semantic")
    assert (row.searches, row.empty_results, row.latency_max_ms) == (4, 1, 700.0)
    assert sum(row.latency_buckets) == 4
    search_completed(project=alice.project, mode="semantic", hits=2, latency_ms=2.0)
    search_stats_flush()
    row.refresh_from_db()
    assert (row.searches, sum(row.latency_buckets)) == (5, 5)


@pytest.mark.django_db(transaction=True)
def test_a_project_deleted_before_the_flush_loses_its_counts_and_no_other_does() -> None:
    kept, gone = make_tenant("stats-kept"), make_tenant("stats-gone")
    for tenant in (kept, gone):
        search_completed(project=tenant.project, mode="keyword", hits=1, latency_ms=5.0)
    gone.project.delete()
    search_stats_flush()
    assert SearchStat.objects.get(project=kept.project, mode="keyword").searches == 1
    assert not SearchStat.objects.filter(project_id=gone.project.pk).exists()
