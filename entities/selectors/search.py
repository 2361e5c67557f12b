"""Graph-aware search: `mode=graph` and the hybrid graph boost.

The entities a query names are found (exact names and aliases, then trigram
similarity for misspellings); the walk reaches their 1..N-hop neighbours; memories linked to
any reached entity are ranked by the best path's strength × confidence product. A memory
linked to several reached entities combines them as a noisy-OR (1 − Π(1 − sᵢ)), so a memory
about both things the query names outranks one about either.

A search scoped to a user, agent or run (its filters) sees that scope's graph and the
project-wide one (entities.scope), as the memories it returns are that scope's."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any
from uuid import UUID

from django.core.cache import cache
from django.db import connection
from django.db.models import QuerySet

from entities.models import Entity, EntityMemory
from entities.scope import GraphScope
from entities.selectors.traversal import (
    RelationFilter,
    edges_among,
    entity_neighbours,
    entity_reach,
)
from entities.services.entities import normalize_name
from entities.services.graph_extraction import STOPWORDS
from memories.models import TEXT_SEARCH_CONFIG, Memory
from memories.selectors.memories import project_memory_count
from memories.selectors.search import candidate_count, search_queryset
from memories.selectors.search.statements import fetch_with_settings
from memories.selectors.search_types import SearchHit, SearchQuery
from platformcore.lib.errors import InvalidInput, check_unit_interval
from tenants.models import Project

DEFAULT_DEPTH = 2
MAX_NGRAM = 4
FUZZY_MIN_LENGTH = 4
FUZZY_THRESHOLD = 0.5
SEARCH_MAX_NODES = 200
BOOST_WEIGHT = 0.5  # hybrid: share of its relevance a hit fully explained by the graph gains
BOOST_DEPTH = 1
SPECIFICITY_TTL = 60  # seconds
_TOKEN = re.compile(r"[\w][\w+#.&'-]*")


def _ngrams(text: str) -> list[str]:
    words = [word.strip(".'-") for word in _TOKEN.findall(text)]
    words = [word for word in words if word]
    grams = []
    for size in range(1, MAX_NGRAM + 1):
        for start in range(len(words) - size + 1):
            gram = normalize_name(" ".join(words[start : start + size]))
            if size == 1 and (gram in STOPWORDS or len(gram) < 2):
                continue
            grams.append(gram.removesuffix("'s"))
    return list(dict.fromkeys(grams))


# The entities a query names, in one statement: exact names and aliases; only when none
# matched, trigram similarity for near spellings (the fuzzy branch's one-time filter skips it).
_NAMED_SQL = f"""
WITH exact AS MATERIALIZED (
    SELECT e.id, e.name FROM {Entity._meta.db_table} e
    WHERE e.project_id = %(project)s AND e.lookup_keys && %(grams)s::varchar[] AND {{scope}}
)
(SELECT id, 1.0::float8 FROM exact ORDER BY name, id)
UNION ALL
(SELECT e.id, max(similarity(e.normalized_name, g))::float8
 FROM {Entity._meta.db_table} e, unnest(%(fuzzy)s::text[]) AS g
 WHERE NOT EXISTS (SELECT FROM exact) AND e.project_id = %(project)s
   AND e.normalized_name %% g AND {{scope}}
 GROUP BY e.id
 HAVING max(similarity(e.normalized_name, g)) >= %(threshold)s
 ORDER BY e.id)
"""


def _may_be_misspelt_name(gram: str) -> bool:
    """Whether near spellings of `gram` are looked for: long enough, and neither starting nor
    ending with a stop word ("the billing" is no name: "billing" is tried on its own). A
    question of eight words has about twenty n-grams, half of them such; each is compared
    with every entity the search sees."""
    words = gram.split()
    return (
        len(gram) >= FUZZY_MIN_LENGTH and words[0] not in STOPWORDS and words[-1] not in STOPWORDS
    )


def query_scope(query: SearchQuery) -> GraphScope | None:
    """The graph a search sees: its user/agent/run filters', or every graph without them."""
    scope = GraphScope.of(query.filters)
    return None if scope.is_shared else scope


def entities_in_text(
    *, project: Project, text: str, scope: GraphScope | None = None
) -> dict[int, float]:
    """{entity id: match score} for the entities `text` names (among those `scope` sees):
    1.0 for an exact name or alias, the trigram similarity for a near spelling (only when
    nothing matched exactly)."""
    grams = _ngrams(text)
    if not grams:
        return {}
    params = {
        "project": project.pk,
        "grams": grams,
        "fuzzy": [gram for gram in grams if _may_be_misspelt_name(gram)],
        "threshold": FUZZY_THRESHOLD,
    }
    condition, scope_params = (scope or GraphScope()).visible_sql("e")
    rows = fetch_with_settings(
        connection.alias,
        _NAMED_SQL.format(scope=condition),
        {**params, **scope_params},
        # the trigram index then skips names below the threshold instead of handing every
        # name within pg_trgm's default 0.3 to the HAVING (a search naming no entity pays it)
        {"pg_trgm.similarity_threshold": str(FUZZY_THRESHOLD)},
    )
    return {pk: float(score) for pk, score in rows}


def specificity(*, project: Project, entity_ids: list[int]) -> dict[int, float]:
    """How much naming an entity says: ln(N / df) / ln(N), N the project's memories and df
    those that mentioned the entity (its `mention_count`: each memory once, when first
    linked), both counted over live and soft-deleted memories alike. An entity in one
    memory weighs 1; one in every memory (a chat's speaker, the user) weighs nothing, like a
    stop word. df is read from the entities' rows (counting their links instead cost a name
    in fifty users' graphs several milliseconds); N and each df are remembered for
    SPECIFICITY_TTL seconds: they are weights, and counting a large project's memories on
    every search would cost more than the rest of the boost; N is the count
    `project_memory_count` remembers."""
    total = project_memory_count(project=project)
    if total <= 1:
        return dict.fromkeys(entity_ids, 1.0)
    keys = {pk: f"graph:entity-memories:{project.pk}:{pk}" for pk in entity_ids}
    known = cache.get_many(list(keys.values()))
    counts = {pk: known[key] for pk, key in keys.items() if key in known}
    missing = [pk for pk in entity_ids if pk not in counts]
    if missing:
        found = dict(
            Entity.objects.filter(project=project, pk__in=missing).values_list(
                "pk", "mention_count"
            )
        )
        fresh = {pk: found.get(pk, 0) for pk in missing}
        cache.set_many({keys[pk]: n for pk, n in fresh.items()}, SPECIFICITY_TTL)
        counts |= fresh
    return {
        pk: min(1.0, math.log(total / max(1, counts[pk])) / math.log(total)) for pk in entity_ids
    }


AMBIGUITY_CAP = 200  # memories counted per one-word name, linked and holding the word

# The memories holding a name are counted once per name: a project where each user's graph
# has its own "CRM" entity (fifty of them) asks for the word once, not fifty times.
_WORD_SHARE_SQL = f"""
WITH named AS MATERIALIZED (
    SELECT e.id, e.normalized_name, e.mention_count
    FROM {Entity._meta.db_table} e
    WHERE e.project_id = %(project)s AND e.id = ANY(%(ids)s)
      AND strpos(e.normalized_name, ' ') = 0
), said AS MATERIALIZED (
    SELECT w.name, (SELECT count(*) FROM (SELECT 1 FROM {Memory._meta.db_table} m
        WHERE m.project_id = %(project)s AND m.deleted_at IS NULL
          AND m.search_vector @@ plainto_tsquery(%(config)s::regconfig, w.name)
        LIMIT %(cap)s) AS hits) AS n
    FROM (SELECT DISTINCT normalized_name AS name FROM named) w
)
SELECT named.id, least(named.mention_count, %(cap)s), said.n
FROM named JOIN said ON said.name = named.normalized_name
"""


def name_as_word_share(*, project: Project, entity_ids: list[int]) -> dict[int, float]:
    """{entity id: how often its one-word name, as a word of the memories, means it} for
    the one-word names among `entity_ids`: memories that mentioned it / memories holding the word
    (each counted up to AMBIGUITY_CAP, one short statement, remembered for SPECIFICITY_TTL
    seconds as the specificity's counts are). A question's "team" or "go"
    matches an entity named "Team" or "Go" exactly, but where nine memories say "team" and
    one is linked to the entity, the word is a word and the match weighs 1/9; a person's
    name, said where the person is linked, weighs 1."""
    keys = {pk: f"graph:name-share:{project.pk}:{pk}" for pk in entity_ids}
    known = cache.get_many(list(keys.values()))
    shares = {pk: known[key] for pk, key in keys.items() if key in known}
    missing = [pk for pk in entity_ids if pk not in shares]
    if missing:
        params = {
            "cap": AMBIGUITY_CAP,
            "config": TEXT_SEARCH_CONFIG,
            "project": project.pk,
            "ids": missing,
        }
        with connection.cursor() as cursor:
            cursor.execute(_WORD_SHARE_SQL, params)
            rows = cursor.fetchall()
        fresh = dict.fromkeys(missing, 1.0)  # names of several words: not a plain word
        fresh |= {pk: min(1.0, linked / said) for pk, linked, said in rows if said > 0}
        cache.set_many({keys[pk]: share for pk, share in fresh.items()}, SPECIFICITY_TTL)
        shares |= fresh
    return {pk: share for pk, share in shares.items() if share < 1.0}


def entity_scores(
    *,
    project: Project,
    seeds: dict[int, float],
    depth: int,
    max_nodes: int = SEARCH_MAX_NODES,
    scope: GraphScope | None = None,
) -> dict[int, float]:
    """Best path score to each entity within `depth` hops of the seeds: the seed's match
    score times strength × confidence of every relation on the way (either direction),
    over the relations `scope` sees."""
    relations = RelationFilter(scope=scope)
    if depth == 1:  # the hybrid boost's walk: one statement
        scores = dict(seeds)
        max_nodes = max(max_nodes, len(seeds))
        for start, neighbour, weight in entity_neighbours(
            project=project, entity_ids=list(seeds), relations=relations, max_nodes=max_nodes
        ):
            if seeds[start] * weight > scores.get(neighbour, 0.0):
                scores[neighbour] = seeds[start] * weight
        return scores
    reach = entity_reach(
        project=project,
        entity_ids=list(seeds),
        depth=depth,
        relations=relations,
        max_nodes=max(max_nodes, len(seeds)),
        one_walk=True,
    )
    scores = {pk: score for pk, score in seeds.items() if pk in reach}
    if depth == 0 or len(reach) <= len(scores):
        return scores
    edges = [
        (edge.source_id, edge.target_id, edge.strength * edge.confidence)
        for edge in edges_among(project, list(reach), relations)
    ]
    for _ in range(depth):  # max-product relaxation, one hop per round
        changed = False
        for source, target, weight in edges:
            for a, b in ((source, target), (target, source)):
                candidate = scores.get(a, 0.0) * weight
                if candidate > scores.get(b, 0.0):
                    scores[b], changed = candidate, True
        if not changed:
            break
    return scores


def _memory_scores(
    project: Project, scores: dict[int, float], memory_ids: list[UUID] | QuerySet | None = None
) -> dict[UUID, tuple[float, list[int]]]:
    """Noisy-OR of entity score × link relevance per memory, with the entities involved,
    for the memories among `memory_ids` (ids, or a queryset of `pk` values) or any. One
    statement written out (the ORM's, for the ~100 ids of a hybrid search's hits, cost
    more Python than the statement itself)."""
    table = EntityMemory._meta.db_table
    sql = f"SELECT entity_id, memory_id, relevance FROM {table} l "
    params: list[Any] = []
    if memory_ids is not None and not isinstance(memory_ids, QuerySet):
        # the hits' links by the memory index, the entities checked on each: where the
        # planner intersected both indexes, a name in fifty users' graphs read all its links
        # to keep the hits' (docs/graph.md, "hybrid graph boost")
        sql += "JOIN unnest(%s::uuid[]) AS h(id) ON l.memory_id = h.id "
        params.append(list(memory_ids))
    sql += "WHERE l.project_id = %s AND l.entity_id = ANY(%s::bigint[])"
    params += [project.pk, list(scores)]
    if isinstance(memory_ids, QuerySet):
        subquery, sub_params = memory_ids.query.sql_with_params()
        sql += f" AND l.memory_id IN ({subquery})"
        params += sub_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        links = cursor.fetchall()
    misses: dict[UUID, float] = defaultdict(lambda: 1.0)
    via: dict[UUID, list[int]] = defaultdict(list)
    for entity_id, memory_id, relevance in links:
        misses[memory_id] *= 1.0 - min(1.0, scores[entity_id] * relevance)
        via[memory_id].append(entity_id)
    return {memory_id: (1.0 - miss, via[memory_id]) for memory_id, miss in misses.items()}


def _depth_option(query: SearchQuery, name: str, default: int) -> int:
    value = query.options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 5:
        raise InvalidInput(f"{name} must be an integer 0-5", fields={name: ["integer 0-5"]})
    return value


def graph_search(*, project: Project, query: SearchQuery) -> list[SearchHit]:
    """`mode=graph`: memories of the entities the query names and of their neighbours."""
    depth = _depth_option(query, "depth", DEFAULT_DEPTH)
    scope = query_scope(query)
    seeds = entities_in_text(project=project, text=query.text, scope=scope)
    if not seeds:
        return []
    scores = entity_scores(project=project, seeds=seeds, depth=depth, scope=scope)
    allowed = search_queryset(project=project, query=query)
    ranked = _memory_scores(project, scores, allowed.values("pk"))
    best = sorted(ranked.items(), key=lambda item: (-item[1][0], str(item[0])))
    best = best[: candidate_count(query)]
    memories = allowed.in_bulk([memory_id for memory_id, _ in best])
    hits = []
    for memory_id, (score, via) in best:
        if memory_id in memories:
            parts = {"graph": score, "entities": float(len(via))}
            hits.append(SearchHit(memory=memories[memory_id], score=score, parts=parts))
    return hits


def graph_boost(
    *, project: Project, query: SearchQuery, hits: list[SearchHit], prepared: Any = None
) -> dict:
    """Hybrid: when the query names known entities, raise the hits linked to them or to
    their direct neighbours by a share of their relevance, up to BOOST_WEIGHT of it
    (`graph_weight`, `graph_depth` options; `graph_share`), each entity weighted by its
    specificity so ubiquitous ones barely count. `prepared` is what `graph_boost.prepare`
    returned for this query (hybrid computes it while its semantic statement runs); without
    it the boost prepares itself."""
    if not hits:
        return {}
    scores = graph_boost_scores(project=project, query=query) if prepared is None else prepared
    if not scores:
        return {}
    weight = _boost_weight(query)
    ranked = _memory_scores(project, scores, [hit.memory.pk for hit in hits])
    relevance = {hit.memory.pk: hit.score for hit in hits}
    return {
        memory_id: graph_share(weight, score, relevance[memory_id])
        for memory_id, (score, _) in ranked.items()
        if score > 0
    }


def graph_share(weight: float, graph_score: float, relevance: float) -> float:
    """What the graph adds to a hit: a share of the relevance its text earned, not a fixed
    amount, so a name the question shares with an otherwise unrelated memory (one word,
    "Go" in "where did she go to college") cannot lift it above the memories that answer:
    a hit fully explained by the graph gains `weight` × its relevance."""
    return weight * graph_score * relevance


def graph_boost_scores(*, project: Project, query: SearchQuery) -> dict[int, float]:
    """{entity id: score} of the entities the query names and their neighbours, each seed
    weighted by its specificity; empty when the query names none (or the boost is off)."""
    if _boost_weight(query) == 0:
        return {}
    scope = query_scope(query)
    seeds = entities_in_text(project=project, text=query.text, scope=scope)
    weights = specificity(project=project, entity_ids=list(seeds))
    seeds = {pk: score * weights[pk] for pk, score in seeds.items() if weights[pk] > 0}
    if not seeds:
        return {}
    for pk, share in name_as_word_share(project=project, entity_ids=list(seeds)).items():
        seeds[pk] *= share
    depth = _depth_option(query, "graph_depth", BOOST_DEPTH)
    return entity_scores(project=project, seeds=seeds, depth=depth, scope=scope)


def _boost_weight(query: SearchQuery) -> float:
    return check_unit_interval("graph_weight", query.options.get("graph_weight", BOOST_WEIGHT))


graph_boost.boost_name = "graph"  # type: ignore[attr-defined]
graph_boost.prepare = graph_boost_scores  # type: ignore[attr-defined]
