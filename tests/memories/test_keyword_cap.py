"""Keyword scoring reads a bounded number of memories per query term (MEMORY_SEARCH_TERM_CAP),
so a common word costs the same in a large project; the rare term still decides the ranking."""

from __future__ import annotations

import pytest
from django.test.utils import CaptureQueriesContext

from memories.services.bulk import memories_create_bulk
from memories.services.memories import MemoryInput
from platformcore.db.rls import as_owner
from platformcore.lib.actor import SYSTEM


def _store(alice, texts):
    items = [MemoryInput(content=text, user_id="u1") for text in texts]
    memories_create_bulk(project=alice.project, items=items, actor=SYSTEM)


def _keyword(alice, query, **extra):
    body = {"query": query, "mode": "keyword", "limit": 5, "user_id": "u1", **extra}
    response = alice.post("/api/v1/memories/search/", body)
    assert response.status_code == 200, response.json()
    return [hit["content"] for hit in response.json()["results"]]


def test_a_rare_term_outranks_a_common_one_when_the_common_term_is_over_the_cap(alice, settings):
    settings.MEMORY_SEARCH_TERM_CAP = 10
    cities = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Seoul", "Austin", "Toronto"]
    tools = ["Kafka", "Redis", "Airflow", "Grafana", "Sentry"]
    _store(alice, [f"The deploy in {c} used {t} workers" for c in cities for t in tools])
    _store(alice, ["The pottery class meets on Thursdays"])
    results = _keyword(alice, "deploy pottery")
    assert results[0] == "The pottery class meets on Thursdays"
    assert len(results) == 5  # common-term matches still fill the page


def test_memories_with_every_term_are_candidates_even_when_each_term_is_common(alice, settings):
    settings.MEMORY_SEARCH_TERM_CAP = 5
    filler = [f"Deploy note {i} about the staging cluster" for i in range(20)]
    filler += [f"Kafka note {i} about consumer lag" for i in range(20)]
    _store(alice, filler)
    _store(alice, ["Deploy Kafka with the blue-green procedure"])
    assert _keyword(alice, "deploy kafka")[0] == "Deploy Kafka with the blue-green procedure"


def test_below_the_cap_scores_match_the_exact_idf(alice):
    _store(alice, ["Dana likes jazz", "Dana likes tea", "Omar likes jazz", "Omar plays chess"])
    results = _keyword(alice, "Omar jazz")
    assert results[0] == "Omar likes jazz"
    assert set(results[1:]) == {"Dana likes jazz", "Omar plays chess"}


def test_terms_common_across_the_table_skip_their_own_scan_but_still_count(alice, settings):
    from django.db import connection

    from memories.selectors.search import keyword

    settings.MEMORY_SEARCH_TERM_CAP = 3  # common: in more than 20 × 3 memories
    places = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Seoul", "Austin", "Toronto"]
    tools = ["Kafka", "Redis", "Airflow", "Grafana", "Sentry", "Celery", "Vault", "Consul"]
    _store(alice, [f"Deploy {t} to the {p} cluster" for p in places for t in tools])
    _store(alice, ["The pottery class meets on Thursdays", "Pottery glaze for the deploy"])
    with as_owner(connection), connection.cursor() as cursor:  # the table owner's to analyze
        cursor.execute("ANALYZE memories_memory")
    keyword._term_stats.clear()
    lexemes = keyword.query_lexemes("deploy cluster pottery")
    assert len(keyword._skipped_terms(lexemes, 3, "default")) == 1  # one of deploy, cluster

    skipping = _keyword(alice, "deploy cluster pottery")
    keyword._term_stats.clear()
    settings.MEMORY_SEARCH_TERM_CAP = 100  # nothing is common now: every branch runs
    every_branch = _keyword(alice, "deploy cluster pottery")
    assert skipping[0] == every_branch[0] == "Pottery glaze for the deploy"
    assert skipping[1] == every_branch[1] == "The pottery class meets on Thursdays"
    assert len(skipping) == 5


def test_a_term_mostly_held_by_deleted_memories_is_still_found_and_the_plan_setting_restored(
    alice, settings
):
    """Term branches run without sequential scans (the table's term statistics count deleted
    memories too); the setting is this statement's only, even inside a transaction."""
    from django.db import connection

    from memories.models import Memory

    settings.MEMORY_SEARCH_TERM_CAP = 5
    cities = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Seoul"]
    tools = ["Kafka", "Redis", "Airflow", "Grafana", "Sentry"]
    _store(alice, [f"Team dinner in {c} after the {t} migration" for c in cities for t in tools])
    kept = "Team dinner in Oslo after the Redis migration"
    dinners = Memory.objects.filter(project=alice.project, content__startswith="Team dinner")
    assert dinners.count() == 30
    dinners.exclude(content=kept).update(deleted_at="2026-01-01T00:00:00Z")
    _store(alice, ["The pottery class meets on Thursdays"])
    assert _keyword(alice, "dinner") == [kept]
    with connection.cursor() as cursor:  # the test's transaction encloses the search
        cursor.execute("SELECT current_setting('enable_seqscan')")
        assert cursor.fetchone()[0] == "on"


def test_a_scoped_search_finds_its_scope_s_matches_of_a_term_other_scopes_hold_many_times(
    alice, settings
):
    """The keyword index holds the project and the scope columns beside the words (migration
    0014): a user's, agent's or run's search intersects them in the index, over the term cap
    elsewhere and with memories whose other scope columns are empty."""
    settings.MEMORY_SEARCH_TERM_CAP = 5
    others = [
        MemoryInput(content=f"Deploy note {i} for the staging cluster", user_id=f"u{i % 7 + 2}")
        for i in range(60)
    ]
    others += [MemoryInput(content=f"Deploy step {i}", agent_id="bot-b") for i in range(20)]
    memories_create_bulk(project=alice.project, items=others, actor=SYSTEM)
    ours = [
        MemoryInput(content="Deploy the invoices service on Fridays", user_id="u1"),
        MemoryInput(content="Deploy freeze during the audit", agent_id="bot-a"),
        MemoryInput(content="Deploy window agreed in the retro", run_id="retro-7"),
    ]
    memories_create_bulk(project=alice.project, items=ours, actor=SYSTEM)
    assert _keyword(alice, "deploy") == ["Deploy the invoices service on Fridays"]
    assert _keyword(alice, "deploy", user_id=None, agent_id="bot-a") == [
        "Deploy freeze during the audit"
    ]
    assert _keyword(alice, "deploy staging", user_id=None, run_id="retro-7") == [
        "Deploy window agreed in the retro"
    ]


def test_a_small_tenant_beside_a_large_one_searches_its_own_memories_through_the_index(alice, bob):
    """A project holding a small share of the table names itself in the form the keyword
    index can use (its entries beside the words); a large one does not. Either way a search
    sees its own project's memories only."""
    from django.db import connection

    from memories.selectors import memories as selectors
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import search_queryset
    from memories.selectors.search_types import SearchQuery

    cities = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Seoul", "Austin", "Toronto"]
    tools = ["Kafka", "Redis", "Airflow", "Grafana", "Sentry", "Celery", "Vault", "Consul"]
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
    large = [f"Deploy {t} to {c} on {d}" for c in cities for t in tools for d in days]
    _store(alice, large)
    _store(bob, ["Deploy the invoices service on Fridays", "Lunch at the noodle place"])
    with as_owner(connection), connection.cursor() as cursor:  # the table owner's to analyze
        cursor.execute("ANALYZE memories_memory")
    selectors._table_stats.clear()

    def sql(tenant):
        query = SearchQuery(text="deploy", filters=MemoryFilters(user_id="u1"))
        return str(search_queryset(project=tenant.project, query=query).query)

    assert "= ANY(" in sql(bob) and "= ANY(" not in sql(alice)
    # a term common in the large tenant is not common in the small one: all its branches run
    from memories.selectors.search import keyword

    keyword._term_stats.clear()
    lexemes = keyword.query_lexemes("deploy on Monday")
    large, small = (selectors.project_share(project=t.project) for t in (alice, bob))
    assert keyword._skipped_terms(lexemes, 3, "default", large)
    assert not keyword._skipped_terms(lexemes, 3, "default", small)
    assert _keyword(bob, "deploy Kafka") == ["Deploy the invoices service on Fridays"]
    assert _keyword(bob, "deploy", user_id=None) == ["Deploy the invoices service on Fridays"]
    assert all(text.startswith("Deploy Kafka") for text in _keyword(alice, "deploy Kafka"))


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_plan_setting_lasts_for_the_keyword_statement_only(
    alice, settings
):
    """A request's keyword statement travels with its `SET LOCAL` in one query string (one
    implicit transaction): the results are the same and the connection keeps its setting."""
    from django.db import connection

    settings.MEMORY_SEARCH_TERM_CAP = 5
    _store(alice, [f"Team dinner in {c} after the migration" for c in ("Oslo", "Lima", "Rome")])
    _store(alice, ["The pottery class meets on Thursdays"])
    assert not connection.in_atomic_block
    with CaptureQueriesContext(connection) as captured:
        assert _keyword(alice, "dinner in Oslo")[0] == "Team dinner in Oslo after the migration"
    together = [q for q in captured if q["sql"].startswith("SET LOCAL enable_seqscan = off;")]
    assert len(together) == 1
    assert _keyword(alice, "pottery") == ["The pottery class meets on Thursdays"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_seqscan')")
        assert cursor.fetchone()[0] == "on"


def _analyzed(*projects):
    """Fresh planner statistics, as autovacuum leaves them after a large import."""
    from django.db import connection

    from memories.selectors import memories as selectors
    from memories.selectors.search import keyword

    with as_owner(connection), connection.cursor() as cursor:  # the table owner's to analyze
        cursor.execute("ANALYZE memories_memory")
    selectors._table_stats.clear()
    keyword._term_stats.clear()


def _unfiltered_keyword(tenant, query):
    from django.db import connection

    with CaptureQueriesContext(connection) as captured:
        results = _keyword(tenant, query, user_id=None)
    sampled = any("MATERIALIZED" in q["sql"] and "sample0" in q["sql"] for q in captured)
    return results, sampled


def test_a_word_most_of_a_large_project_holds_brings_its_newest_memories(alice, settings):
    """A term in most of the project's memories is not read from the keyword index in full
    (every posting of it, at a million memories tens of milliseconds): the newest memories
    are read until `cap` of them hold it, so among equally good matches the newest answer."""
    settings.MEMORY_SEARCH_TERM_CAP = 3
    for batch in range(3):
        _store(alice, [f"Deploy note {i} of batch {batch}" for i in range(100)])
    _analyzed()
    results, sampled = _unfiltered_keyword(alice, "deploy")
    assert sampled
    assert len(results) == 3
    assert all(text.endswith("of batch 2") for text in results), results


def test_a_word_the_statistics_call_common_that_only_old_memories_hold_is_still_found(
    alice, settings
):
    """When the newest memories hold too few of a common-looking term's matches (here most
    of them were deleted since), the branch reads the keyword index after all."""
    from memories.models import Memory

    settings.MEMORY_SEARCH_TERM_CAP = 3
    cities = ["Berlin", "Lisbon", "Osaka", "Lima", "Oslo", "Seoul", "Austin", "Toronto"]
    _store(alice, [f"Team dinner {i} in {c}" for c in cities for i in range(25)])
    kept = "Team dinner 0 in Berlin"
    dinners = Memory.objects.filter(project=alice.project, content__startswith="Team dinner")
    dinners.exclude(content=kept).update(deleted_at="2026-01-01T00:00:00Z")
    _store(alice, [f"Standup note {i} about the release" for i in range(200)])
    _analyzed()
    results, sampled = _unfiltered_keyword(alice, "dinner")
    assert sampled
    assert results == [kept]
