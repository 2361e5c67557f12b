"""What was said around a hit: the memories stored just before and after it in its run.

A conversation stored turn by turn answers a question across neighbouring turns: "When did
Caroline go to the support group?" matches the turn that asks about it, and the answer is
the next one ("I went yesterday..."), which shares no word with the question. Hybrid search
therefore adds to the `width` memories on each side of its best `seeds` hits, in the same run
(`run_id`) and ordered by when they happened (`occurred_at`, else when they were stored; then
the order they were stored in), a share of the hit's relevance: `weight` × relevance
/ distance (1 for the adjacent memory, 2 for the next...). A neighbour already found gets it
added to its own relevance; one not found becomes a hit with that share alone (`parts`
name it `neighbour`). Neighbours are read through the search's own filtered memories, so a
memory the filters or the tenant exclude never comes in this way; hits without a run have
no neighbours and cost nothing. A conversation imported out of order (last week's turns after
today's, each with its `occurred_at`) has its neighbours in the order they were said.

On the LoCoMo development conversations, turns stored plainly: hybrid R@10 0.689 without,
0.738 with (0.734 with the parameters chosen leave-one-conversation-out; docs/benchmarks.md).
Settings:
MEMORY_SEARCH_NEIGHBOURS (width, 0 switches it off), MEMORY_SEARCH_NEIGHBOUR_WEIGHT,
MEMORY_SEARCH_NEIGHBOUR_SEEDS; per query `options={"neighbours": width,
"neighbour_weight": w}`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.conf import settings

from memories.selectors.search.dispatch import SearchBase, candidate, candidate_columns
from memories.selectors.search.statements import fetch_with_settings
from memories.selectors.search_types import SearchHit, SearchQuery
from platformcore.lib.errors import InvalidInput, check_unit_interval

MAX_WIDTH = 5  # memories on each side


def neighbour_options(query: SearchQuery) -> tuple[int, float]:
    """(width, weight) of the query: its options, else the settings; width 0 is off."""
    width = query.options.get("neighbours")
    width = settings.MEMORY_SEARCH_NEIGHBOURS if width is None else width
    if isinstance(width, bool) or not isinstance(width, int) or not 0 <= width <= MAX_WIDTH:
        message = f"an integer 0-{MAX_WIDTH}"
        raise InvalidInput(f"neighbours must be {message}", fields={"neighbours": [message]})
    weight = query.options.get("neighbour_weight")
    weight = settings.MEMORY_SEARCH_NEIGHBOUR_WEIGHT if weight is None else weight
    return width, check_unit_interval("neighbour_weight", weight)


def add_neighbours(base: SearchBase, hits: list[SearchHit], query: SearchQuery) -> list[SearchHit]:
    """`hits` (relevance before decay) with the neighbours of the best ones added; see the
    module docstring."""
    width, weight = neighbour_options(query)
    if not width or not weight or not hits:
        return hits
    ranked = sorted(hits, key=lambda hit: -hit.score)[: settings.MEMORY_SEARCH_NEIGHBOUR_SEEDS]
    seeds = [hit for hit in ranked if getattr(hit.memory, "run_id", None) and hit.score > 0]
    if not seeds:
        return hits
    by_id = {hit.memory.pk: hit for hit in hits}
    for seed, memory, distance in _neighbours(base, seeds, width):
        amount = weight * seed.score / distance
        hit = by_id.get(memory.pk)
        if hit is None:
            hit = by_id[memory.pk] = SearchHit(memory, 0.0, {"keyword": 0.0, "semantic": 0.0})
        hit.score += amount
        hit.parts["neighbour"] = hit.parts.get("neighbour", 0.0) + amount
    return list(by_id.values())


def _neighbours(
    base: SearchBase, seeds: list[SearchHit], width: int
) -> list[tuple[SearchHit, Any, int]]:
    """(seed, neighbour candidate, distance) for the `width` memories before and after each
    seed in its run, within the search's base, in one statement; a run's order is
    `_position`'s."""
    fields = list(candidate_columns())
    columns = ", ".join(f"b.{name}" for name in (*fields, "ec"))
    # the run's order as its index holds it (memory_project_run): a CASE, where a COALESCE
    # would keep the comparison out of the index under row-level security
    said = "(CASE WHEN b.occurred_at IS NULL THEN b.created_at ELSE b.occurred_at END)"
    side = (
        f"SELECT {columns}, %s AS side FROM {base.source('b')}"
        f" WHERE b.run_id = s.run AND ({said}, b.created_at, b.id) {{op}} (s.w, s.at, s.i)"
        f" ORDER BY {said} {{order}}, b.created_at {{order}}, b.id {{order}} LIMIT %s"
    )
    before = side.format(op="<", order="DESC")
    after = side.format(op=">", order="ASC")
    sql = (
        "SELECT s.i, n.* FROM unnest(%s::uuid[], %s::text[], %s::timestamptz[],"
        " %s::timestamptz[]) AS s(i, run, w, at)"
        f" CROSS JOIN LATERAL (({before}) UNION ALL ({after})) AS n"
    )
    params = [
        [seed.memory.pk for seed in seeds],
        [seed.memory.run_id for seed in seeds],
        [_position(seed.memory)[0] for seed in seeds],
        [seed.memory.created_at for seed in seeds],
        -1,
        *base.params,
        width,
        1,
        *base.params,
        width,
    ]
    rows = fetch_with_settings(base.db, sql, params)
    seed_of = {seed.memory.pk: seed for seed in seeds}
    sides: dict[tuple[Any, int], list[tuple[Any, Any]]] = defaultdict(list)
    for row in rows:
        found = candidate(row[1:], row[1 + len(fields)] if base.confidence else None)
        sides[(row[0], row[-1])].append((_position(found), found))
    out = []
    for (seed_id, direction), found in sides.items():
        found.sort(key=lambda pair: pair[0], reverse=direction < 0)
        for distance, (_, memory) in enumerate(found, start=1):
            out.append((seed_of[seed_id], memory, distance))
    return out


def _position(memory: Any) -> tuple[Any, Any, Any]:
    """Where a memory stands in its run: when it happened (else when it was stored), then when
    it was stored, then its id."""
    return (memory.occurred_at or memory.created_at, memory.created_at, memory.pk)
