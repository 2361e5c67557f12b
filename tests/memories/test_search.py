"""Search: keyword, semantic and hybrid modes, filters, paging, decay-aware ranking, budgets."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memories.models import Memory
from memories.selectors.search import MODES
from platformcore.lib.errors import InvalidInput
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/search/"


def search(tenant: Tenant, **body) -> dict:
    response = tenant.post(URL, body)
    assert response.status_code == 200, response.json()
    return response.json()


def contents(body: dict) -> list[str]:
    return [hit["content"] for hit in body["results"]]


def age(memory_id: str, days: float) -> None:
    then = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


def test_keyword_search_finds_machine_learning_and_not_web_development(alice, remember) -> None:
    remember("Machine learning models need a lot of training data")
    remember("Web development with React and TypeScript")
    body = search(alice, query="machine learning", mode="keyword")
    assert contents(body) == ["Machine learning models need a lot of training data"]


def test_keyword_search_stems_words(alice, remember) -> None:
    remember("The user was running three marathons")
    assert contents(search(alice, query="runs marathon", mode="keyword")) == [
        "The user was running three marathons"
    ]


def test_keyword_search_honours_quoted_phrases_and_exclusions(alice, remember) -> None:
    remember("deep learning on graphs")
    remember("learning deep breathing")
    assert contents(search(alice, query='"deep learning"', mode="keyword")) == [
        "deep learning on graphs"
    ]
    assert contents(search(alice, query="learning -breathing", mode="keyword")) == [
        "deep learning on graphs"
    ]


def test_semantic_search_finds_canine_training_for_how_to_train_dogs(alice, remember) -> None:
    remember("canine behavior training tips")
    remember("quarterly tax filing deadlines")
    body = search(alice, query="how to train dogs", mode="semantic")
    assert contents(body) == ["canine behavior training tips"]
    assert body["results"][0]["score_parts"]["semantic"] >= 0.5


def test_semantic_minimum_similarity_can_be_disabled(alice, remember) -> None:
    remember("quarterly tax filing deadlines")
    assert search(alice, query="how to train dogs", mode="semantic")["results"] == []
    loose = search(alice, query="how to train dogs", mode="semantic", min_similarity=0)
    assert contents(loose) == ["quarterly tax filing deadlines"]


def test_hybrid_is_the_default_and_combines_both_signals(alice, remember) -> None:
    for text in [
        "canine behavior training tips",
        "how to train a neural network",
        "dog food brands compared",
        "tax filing deadlines",
        "the cat sleeps all day",
        "weekly team meeting notes",
        "train timetable from Paris to Lyon",
        "puppy obedience classes on Saturdays",
        "database index tuning",
        "gardening in spring",
    ]:
        remember(text)
    body = search(alice, query="how to train dogs")
    assert body["mode"] == "hybrid"
    found = contents(body)
    # meaning and a shared stem; "dog food" shares the rarer term, so it may come first
    assert "canine behavior training tips" in found[:2]
    assert "train timetable from Paris to Lyon" in found  # keyword only
    assert "puppy obedience classes on Saturdays" in found  # meaning only
    assert "database index tuning" not in found
    parts = body["results"][found.index("canine behavior training tips")]["score_parts"]
    assert parts["keyword_rank"] > 0 and parts["semantic"] > 0.5
    first = body["results"][0]
    expected = first["score_parts"]["relevance"] * first["score_parts"]["confidence"]
    assert first["score"] == pytest.approx(expected, abs=1e-5)


def committed_tenant(texts: list[str]) -> Tenant:
    """A tenant whose memories are committed (transactional tests), so hybrid search runs
    its two sides on two threads and connections."""
    from tests.conftest import make_tenant

    tenant = make_tenant("alice")
    for text in texts:
        response = tenant.post("/api/v1/memories/", {"content": text, "user_id": "u1"})
        assert response.status_code == 201
    return tenant


@pytest.mark.django_db(transaction=True)
def test_hybrid_on_committed_data_runs_both_signals_at_once_with_the_same_results() -> None:
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    alice = committed_tenant(
        ["canine behavior training tips", "train timetable", "gardening in spring"]
    )
    through_http = contents(search(alice, query="how to train dogs"))  # committed: in parallel
    assert set(through_http[:2]) == {"canine behavior training tips", "train timetable"}
    with transaction.atomic():  # one connection, one after the other
        inline = memory_search(project=alice.project, query=SearchQuery(text="how to train dogs"))
    assert [hit.memory.content for hit in inline.hits] == through_http


@pytest.mark.django_db(transaction=True)
def test_hybrid_graph_boost_is_the_same_on_two_threads_as_inline() -> None:
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    alice = committed_tenant(
        ["Alice works at Google", "Search engines rank pages", "Bob moved to Paris"]
    )
    query = SearchQuery(text="where does Alice work? Google search", min_similarity=0)
    parallel = memory_search(project=alice.project, query=query)  # committed: two threads
    with transaction.atomic():  # one connection, one after the other
        inline = memory_search(project=alice.project, query=query)
    boosted = [hit for hit in parallel.hits if "graph" in hit.parts]
    assert [hit.memory.content for hit in boosted] == ["Alice works at Google"]

    def ranking(hits):  # confidence decays between the two calls: compare the rest
        return [
            (hit.memory.pk, {k: round(v, 6) for k, v in hit.parts.items() if k != "confidence"})
            for hit in hits
        ]

    assert ranking(parallel.hits) == ranking(inline.hits)
    bad = SearchQuery(text="Google", options={"graph_weight": 5})
    with pytest.raises(InvalidInput):  # an error of the boosts reaches the caller
        memory_search(project=alice.project, query=bad)


@pytest.mark.parametrize("fusion", ["calibrated", "minmax", "rrf"])
def test_hybrid_supports_every_fusion(alice, remember, fusion) -> None:
    remember("canine behavior training tips")
    remember("gardening in spring")
    body = search(alice, query="training dogs", fusion=fusion)
    assert contents(body)[0] == "canine behavior training tips"


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_every_mode_filters_by_memory_type(alice, remember, mode) -> None:
    remember("We observed that deploys fail on Fridays", memory_type="observation")
    remember("We decided to stop deploys on Fridays", memory_type="decision")
    remember("Deploys on Fridays fail in a pattern", memory_type="pattern")
    body = search(alice, query="deploys on Fridays", mode=mode, memory_types=["decision"])
    assert contents(body) == ["We decided to stop deploys on Fridays"]


def test_types_is_an_alias_of_memory_type_in_the_body_and_the_query_string(alice, remember) -> None:
    remember("We observed that deploys fail on Fridays", memory_type="observation")
    remember("We decided to stop deploys on Fridays", memory_type="decision")
    body = search(alice, query="deploys on Fridays", types=["decision"])
    assert contents(body) == ["We decided to stop deploys on Fridays"]
    listed = alice.get(URL, {"q": "deploys on Fridays", "types": "decision,pattern"}).json()
    assert contents(listed) == ["We decided to stop deploys on Fridays"]
    refused = alice.post(URL, {"query": "deploys", "types": ["opinion"]})
    assert refused.status_code == 400 and "types.0" in refused.json()["error"]["fields"]


def test_search_filters_by_all_given_tags(alice, remember) -> None:
    remember("Use strict mode in the frontend build", tags=["typescript", "frontend"])
    remember("Use strict mode in the backend build", tags=["typescript", "backend"])
    remember("Use strict mode in the legacy build", tags=["frontend"])
    body = search(alice, query="strict mode build", tags=["typescript", "frontend"])
    assert contents(body) == ["Use strict mode in the frontend build"]


def test_search_filters_by_effective_confidence(alice, remember) -> None:
    fresh = remember("the deploy key rotates monthly")
    stale = remember("the deploy key rotated once in 2019")
    age(stale["id"], days=60)  # 1.0 → ~0.25
    body = search(alice, query="deploy key", min_confidence=0.5)
    assert [hit["id"] for hit in body["results"]] == [fresh["id"]]


def test_search_pages_with_limit_and_offset(alice, remember, settings) -> None:
    settings.MEMORY_DEDUP_THRESHOLD = 1.0  # near-identical notes on purpose: no merging
    for number in range(50):
        remember(f"release note number {number:02d} about the parser")
    everything = search(alice, query="release note parser", mode="keyword", limit=50)
    page = search(alice, query="release note parser", mode="keyword", limit=10, offset=20)
    assert [hit["id"] for hit in page["results"]] == [
        hit["id"] for hit in everything["results"][20:30]
    ]
    assert page["count"] == 10 and page["offset"] == 20


def test_fresher_memories_outrank_decayed_ones_of_equal_relevance(alice, remember) -> None:
    old = remember("The office wifi password is on the fridge")
    new = remember("The office wifi password is on the whiteboard")
    age(old["id"], days=45)
    body = search(alice, query="office wifi password", mode="keyword")
    assert [hit["id"] for hit in body["results"]] == [new["id"], old["id"]]
    assert body["results"][1]["score_parts"]["confidence"] == pytest.approx(0.5**1.5, rel=1e-3)


def test_token_budget_keeps_results_in_rank_order_until_the_budget(alice, remember) -> None:
    remember("coffee " * 10)  # 70 characters: 18 tokens
    remember("coffee beans " * 10)  # 130 characters: 33 tokens
    remember("coffee grinder settings")  # 6 tokens
    full = search(alice, query="coffee", mode="keyword")
    assert len(full["results"]) == 3 and full["budget_exhausted"] is False
    first = full["results"][0]["token_count"]
    budgeted = search(alice, query="coffee", mode="keyword", token_budget=first)
    assert [hit["id"] for hit in budgeted["results"]] == [full["results"][0]["id"]]
    assert budgeted["tokens"] == first and budgeted["budget_exhausted"] is True


def test_get_search_takes_the_query_string(alice, remember) -> None:
    remember("Machine learning models need data")
    body = alice.get(URL, {"q": "machine learning", "mode": "keyword", "user_id": "u1"}).json()
    assert contents(body) == ["Machine learning models need data"]


def test_search_scope_fields_must_all_match(alice, remember) -> None:
    remember("shared fact about invoices", user_id="u1", agent_id="a1")
    remember("shared fact about invoices too", user_id="u1", agent_id="a2")
    body = search(alice, query="invoices", user_id="u1", agent_id="a1")
    assert contents(body) == ["shared fact about invoices"]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_semantic_ranking_scoped_to_a_user_sees_only_that_user(alice, remember, mode) -> None:
    # a user_id filter ranks on the covering (project, user_id) index and loads the winners
    # by key: same hits, scores and decayed confidence as any other search
    mine = remember("canine behavior training tips", user_id="u1", memory_type="procedure")
    stale = remember("teaching a puppy to sit and stay", user_id="u1", memory_type="procedure")
    remember("dog training classes near the park", user_id="u2", memory_type="procedure")
    remember("obedience school for dogs", user_id="u1", memory_type="fact")
    age(stale["id"], days=30)
    body = search(
        alice, query="how to train dogs", mode=mode, user_id="u1", memory_types=["procedure"]
    )
    assert {hit["id"] for hit in body["results"]} == {mine["id"], stale["id"]}
    by_id = {hit["id"]: hit for hit in body["results"]}
    assert by_id[stale["id"]]["score_parts"]["confidence"] == pytest.approx(0.5, rel=1e-3)
    assert by_id[mine["id"]]["score_parts"]["semantic"] >= 0.5
    age(stale["id"], days=30)  # the search reinforced it
    confident = search(
        alice, query="how to train dogs", mode=mode, user_id="u1", min_confidence=0.75
    )
    assert stale["id"] not in {hit["id"] for hit in confident["results"]}
    assert mine["id"] in {hit["id"] for hit in confident["results"]}


def test_search_accepts_the_filter_expression(alice, remember) -> None:
    remember("laptop deal", metadata={"price": 900, "shop": "north"})
    remember("laptop bargain", metadata={"price": 400, "shop": "south"})
    remember("laptop offer", metadata={"price": 1500, "shop": "south"})
    body = search(
        alice,
        query="laptop",
        mode="keyword",
        filters={"OR": [{"metadata.price": {"lt": 500}}, {"metadata": {"shop": "north"}}]},
    )
    assert sorted(contents(body)) == ["laptop bargain", "laptop deal"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "mode": "telepathy"}, "mode"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "offset": -1}, "offset"),
        ({"query": "x", "min_similarity": 1.5}, "min_similarity"),
        ({"query": "x", "token_budget": 0}, "token_budget"),
        ({"query": "x", "fusion": "average"}, "fusion"),
        ({"query": "x", "memory_types": ["gossip"]}, "memory_types"),
        (
            {"query": "x", "filters": {"AND": [{"user_id": "u1"}, {"metadata.p": {"gt": []}}]}},
            "filters.AND[1].metadata.p.gt",
        ),
    ],
)
def test_bad_search_input_is_a_400_naming_the_field(alice, body, field) -> None:
    response = alice.post(URL, body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert any(name.startswith(field) for name in error["fields"]), error


def test_graph_mode_is_a_400_when_the_graph_is_not_installed(alice, monkeypatch) -> None:
    monkeypatch.setitem(MODES, "graph", "entities.selectors.no_such_module.graph_search")
    response = alice.post(URL, {"query": "who works at Google", "mode": "graph"})
    assert response.status_code == 400
    assert "graph search is unavailable" in response.json()["error"]["message"]


def test_search_needs_only_the_read_scope(remember) -> None:
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    remember("Machine learning models need data")
    assert reader.post(URL, {"query": "machine learning"}).status_code == 200


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_another_project_finds_nothing_of_alices(alice, charlie, remember, mode) -> None:
    remember("Alice's secret plan for machine learning")
    assert search(alice, query="machine learning plan", mode=mode)["count"] == 1
    body = search(charlie, query="machine learning plan", mode=mode, min_similarity=0)
    assert body["results"] == [] and body["count"] == 0


def test_search_without_a_key_is_401(anonymous) -> None:
    assert anonymous.post(URL, {"query": "x"}, format="json").status_code == 401


def test_semantic_candidates_beyond_ef_search_widen_the_scan(alice, remember, settings) -> None:
    from memories.selectors.search import search_queryset
    from memories.selectors.search.semantic import query_vector, semantic_ranked
    from memories.selectors.search_types import SearchQuery

    for n in range(30):
        remember(f"note {n} about training dogs and cats, variant {n * 7}")
    queryset = search_queryset(project=alice.project, query=SearchQuery(text="dogs"))
    vector = query_vector("training dogs")
    usual = semantic_ranked(queryset, vector, limit=20, min_similarity=0)
    settings.MEMORY_HNSW_EF_SEARCH = 5  # 20 candidates are more than one scan step
    widened = semantic_ranked(queryset, vector, limit=20, min_similarity=0)
    assert len(widened) == 20
    assert [m.pk for m, _ in widened] == [m.pk for m, _ in usual]
    similarities = [similarity for _, similarity in widened]
    assert similarities == sorted(similarities, reverse=True)
    assert all(hasattr(memory, "effective_confidence") for memory, _ in widened)


def test_the_vector_index_skips_a_deleted_memory_and_finds_it_again_once_restored(
    alice, remember
) -> None:
    from django.db import connection, transaction

    from memories.selectors.search import search_queryset
    from memories.selectors.search.semantic import _ranked_statement, query_vector
    from memories.selectors.search_types import SearchQuery
    from platformcore.lib.vectors import vector_literal

    kept = remember("Dogs learn tricks faster with short daily training sessions")
    gone = remember("Puppies should be trained with treats and patience")
    for n in range(10):
        remember(f"Unrelated note {n} about quarterly budgets and invoices")
    assert alice.delete(f"/api/v1/memories/{gone['id']}/").status_code in (200, 204)

    def found() -> list[str]:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # the index, even for 12 rows
            cursor.execute("SET LOCAL enable_sort = off")
            queryset = search_queryset(project=alice.project, query=SearchQuery(text="dogs"))
            literal = vector_literal(query_vector("how to train a dog"))
            sql, params = _ranked_statement(queryset, literal, 5, user_scoped=False)
            cursor.execute("EXPLAIN " + sql, params)
            assert "memory_embedding_hnsw" in " ".join(row[0] for row in cursor.fetchall())
            cursor.execute(sql, params)
            return [str(row[0]) for row in cursor.fetchall()]

    assert kept["id"] in found() and gone["id"] not in found()
    assert alice.post(f"/api/v1/memories/{gone['id']}/restore/").status_code == 200
    assert gone["id"] in found()


def candidates_with_a_deleted_one(*, project, query):
    """A mode (plugged in below) returning Candidates, as keyword and semantic do, the best of
    them a memory deleted after it was ranked."""
    from memories.selectors.search_types import Candidate, SearchHit

    rows = Memory.objects.filter(project=project).order_by("content")  # deleted ones too
    hits = []
    for rank, memory in enumerate(rows):
        found = Candidate(memory.pk, memory.created_at, memory.token_count)
        found.effective_confidence = 1.0
        hits.append(SearchHit(found, 1.0 - rank / 10, {"test": 1.0}))
    return hits


def test_a_page_of_candidates_becomes_whole_rows_without_the_deleted(
    alice, remember, monkeypatch
) -> None:
    gone = remember("a first note, deleted after ranking")
    kept = remember("b second note about tea", metadata={"cup": "green"})
    Memory.objects.filter(pk=gone["id"]).update(deleted_at=timezone.now())
    monkeypatch.setitem(MODES, "test", f"{__name__}.candidates_with_a_deleted_one")
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    result = memory_search(project=alice.project, query=SearchQuery(text="note", mode="test"))
    assert [str(hit.memory.pk) for hit in result.hits] == [kept["id"]]
    assert result.hits[0].memory.content == "b second note about tea"
    assert result.hits[0].memory.metadata == {"cup": "green"}
    assert result.tokens == result.hits[0].memory.token_count


@pytest.mark.parametrize("in_transaction", [True, False])
@pytest.mark.django_db(transaction=True)
def test_a_user_scoped_semantic_search_leaves_the_connections_settings_as_they_were(
    alice, in_transaction, settings
) -> None:
    # a user's ranking runs without bitmap scans and, for a page beyond ef_search, with a
    # wider scan: for its own statement only, whether or not a transaction encloses it
    from django.db import connection

    for n in range(6):
        body = {"content": f"walking the dog, note {n}", "user_id": "u1", "memory_type": "fact"}
        assert alice.post("/api/v1/memories/", body).status_code == 201
    settings.MEMORY_HNSW_EF_SEARCH = 3
    body = {"query": "dog walks", "mode": "semantic", "user_id": "u1", "min_similarity": 0}
    body |= {"memory_types": ["fact", "decision"], "limit": 5}
    with transaction.atomic() if in_transaction else contextlib.nullcontext():
        found = search(alice, **body)
        assert len(found["results"]) == 5
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_bitmapscan')")
            assert cursor.fetchone()[0] == "on"
            cursor.execute("SELECT current_setting('hnsw.ef_search')")
            assert cursor.fetchone()[0] == "400"


def test_a_question_naming_its_user_is_searched_without_the_name(alice, remember):
    # within alice's memories "alice" tells none apart; it pulled memories naming her first
    wanted = remember("User prefers dark mode in every editor", user_id="alice")
    remember("Alice decided to postpone the mobile redesign", user_id="alice")
    response = alice.get(
        "/api/v1/memories/search/", {"q": "what theme does alice like", "user_id": "alice"}
    )
    assert response.json()["results"][0]["id"] == wanted["id"]
    only_the_name = alice.get("/api/v1/memories/search/", {"q": "Alice", "user_id": "alice"})
    assert only_the_name.status_code == 200  # nothing left to search without it: kept


def test_query_caches_are_kept_per_project(alice, bob):
    # a cached query answers faster: one tenant must not learn from that what another asked
    from memories.selectors.search.keyword import _cached_lexemes, query_lexemes
    from memories.selectors.search.semantic import _cached_vector, query_vector

    _cached_lexemes.cache_clear()
    _cached_vector.cache_clear()
    query_lexemes("salary negotiation", project_id=alice.project.pk)
    query_vector("salary negotiation", project_id=alice.project.pk)
    query_lexemes("salary negotiation", project_id=bob.project.pk)
    query_vector("salary negotiation", project_id=bob.project.pk)
    assert (_cached_lexemes.cache_info().hits, _cached_vector.cache_info().hits) == (0, 0)
    query_vector("salary negotiation", project_id=alice.project.pk)
    assert _cached_vector.cache_info().hits == 1
