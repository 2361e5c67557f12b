"""Ranking by vector distance with rows that are not in the HNSW graph yet.

A bulk write with `vector_index: deferred` stores its rows with `vector_pending`, which keeps
them out of the graph (the index's predicate is `deleted_at IS NULL AND NOT vector_pending`)
until the indexing job (memories.services.vector_index) clears the flag. Every statement
that ranks memories through the graph is therefore run twice over, in one statement: the
rows in the graph, where `NOT vector_pending` in the WHERE lets the planner use the partial
index, and the pending rows (found by `memory_vector_pending`), ranked exactly; each ranked
and limited on its own, then the two together. With nothing pending the second part is one
probe of an empty index.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

MARK = "{pending}"


def graph_and_pending(statement: str, column: str) -> str:
    """`statement`, a ranking SELECT (ORDER BY the distance, LIMIT) whose WHERE has the
    marker `{pending}`, as `(in the graph) UNION ALL (pending)`; its parameters appear
    twice. `column` is the flag as the statement names it (`m.vector_pending`)."""
    if MARK not in statement:
        raise ValueError(f"a ranking statement needs the {MARK} marker")
    in_graph = statement.replace(MARK, f"NOT {column}")
    pending = statement.replace(MARK, column)
    return f"({in_graph}) UNION ALL ({pending})"


def split_by_graph(queryset: QuerySet[Any]) -> tuple[QuerySet[Any], QuerySet[Any]]:
    """The rows of `queryset` in the graph, and those whose vector is pending."""
    return queryset.filter(vector_pending=False), queryset.filter(vector_pending=True)
