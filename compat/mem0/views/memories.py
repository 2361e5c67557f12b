"""mem0's memory endpoints: add, list, search, read, update, delete, delete by scope, history
and the batch calls. Each validates mem0's input, calls the platform's service or selector and
answers in mem0's shape (compat/mem0/representations.py)."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from compat.mem0 import serializers as s
from compat.mem0.filters import (
    APP_ID_KEY,
    SCOPE_FIELDS,
    all_of,
    filters_from_query_string,
    scope_of,
    translate_filters,
)
from compat.mem0.oss import store_each_message
from compat.mem0.representations import add_event_body, history_body, memory_body
from compat.mem0.views.base import Mem0View
from memories.memory_scope import Scope
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_history, memory_list
from memories.selectors.search_types import SearchQuery
from memories.services.fact_extraction import memories_add
from memories.services.fact_extraction.llm import FACT_EXTRACTION_TASK
from memories.services.memories import memories_delete, memory_delete, memory_update
from memories.services.reading import memories_recall, memory_read
from platformcore.lib.errors import InvalidInput, ServiceError

DEFAULT_TOP_K = 10  # mem0's default


def list_filters(data: dict[str, Any]) -> MemoryFilters:
    """get_all's and search's `filters`, `categories` (any of) and date range."""
    categories = data.get("categories")
    expression = all_of(
        translate_filters(data.get("filters")),
        {"tags": {"in": categories}} if categories else None,
    )
    return MemoryFilters(
        expression=expression,
        created_after=data.get("start_date"),
        created_before=_through(data.get("end_date")),
    )


def _through(end: datetime | None) -> datetime | None:
    """mem0's end_date is inclusive: a bare date (midnight) keeps that whole day."""
    if end is not None and end.time() == time.min:
        return end + timedelta(days=1)
    return end


class AddView(Mem0View):
    def post(self, request: Request) -> Response:
        data = self.validated(s.AddSerializer, request.data)
        scope = scope_of(data, data.get("filters"))
        metadata = dict(data.get("metadata") or {})
        if scope.get("app_id"):
            metadata["app_id"] = scope["app_id"]
        common = {
            "project": self.project,
            "scope": Scope.of(scope, required=False),
            "actor": self.actor,
            "metadata": metadata,
            "occurred_at": data.get("timestamp"),
        }
        messages = [data["messages"]] if isinstance(data["messages"], dict) else data["messages"]
        infer = data.get("infer") is not False
        if not infer and isinstance(messages, list):
            events = store_each_message(messages, common)
        else:
            prompt = self._prompt(data, scope)
            added = memories_add(messages=messages, prompt=prompt, infer=infer, **common)
            events = added["results"]
        return Response({"results": [add_event_body(event) for event in events]})

    def _prompt(self, data: dict[str, Any], scope: dict[str, str]) -> str | None:
        """Custom instructions extend our extraction task (an LLM must be configured). They
        are a project-wide setting in mem0's platform, so only admin keys may give them."""
        agent_only = bool(scope.get("agent_id")) and not scope.get("user_id")
        instructions = data.get("custom_instructions")
        if agent_only and data.get("agent_custom_instructions"):
            instructions = data["agent_custom_instructions"]
        given = data.get("custom_instructions") or data.get("agent_custom_instructions")
        if given and not self.request.auth.has_scope("admin"):  # type: ignore[union-attr]
            raise PermissionDenied("custom_instructions need an API key with the 'admin' scope.")
        if not instructions:
            return None
        return f"{FACT_EXTRACTION_TASK}\n\nAlso follow these instructions:\n{instructions}"


class MemoryListView(Mem0View):
    """get_all: POST /v3/memories/ with `filters` in the body, `page`/`page_size` in the query
    string (or the body)."""

    required_scopes = {None: "read"}  # a POST that only reads

    def post(self, request: Request) -> Response:
        data = self.validated(s.ListSerializer, request.data)
        paging = self.validated(s.PageSerializer, self._paging(request))
        page, size = paging["page"], paging.get("page_size") or s.default_page_size()
        found = memory_list(
            project=self.project,
            filters=list_filters(data),
            limit=size,
            offset=(page - 1) * size,
        )
        body = {"count": found.count, **self.page_links(request, page, size, found.count)}
        body["results"] = [memory_body(memory) for memory in found.results]
        return Response(body)

    def _paging(self, request: Request) -> dict[str, Any]:
        body = cast(dict[str, Any], request.data)  # an object: ListSerializer checked it
        paging: dict[str, Any] = {k: body[k] for k in ("page", "page_size") if k in body}
        paging.update(
            {k: request.query_params[k] for k in ("page", "page_size") if k in request.query_params}
        )
        return paging


class DeleteAllView(Mem0View):
    def delete(self, request: Request) -> Response:
        """delete_all: every memory of one scope; refused without one (the whole project is
        wiped only by POST /api/v1/reset/ with an admin key)."""
        data = self.validated(s.DeleteAllSerializer, request.query_params)
        filters = filters_from_query_string(data.get("filters"))
        if not scope_of(data, filters):
            message = "refusing to delete without a scope: give user_id, agent_id, run_id or app_id"
            raise InvalidInput(message, fields={name: [message] for name in SCOPE_FIELDS})
        app_id = data.get("app_id")
        criteria = MemoryFilters(
            user_id=data.get("user_id") or None,
            agent_id=data.get("agent_id") or None,
            run_id=data.get("run_id") or None,
            expression=all_of(translate_filters(filters), {APP_ID_KEY: app_id} if app_id else None),
        )
        result = memories_delete(
            project=self.project,
            actor=self.actor,
            filters=criteria,
            force=True,
            reason="delete_all",
        )
        deleted = len(result.deleted_ids)
        return Response({"message": "Memories deleted successfully!", "deleted": deleted})


class SearchView(Mem0View):
    required_scopes = {None: "read"}

    def post(self, request: Request) -> Response:
        data = self.validated(s.SearchSerializer, request.data)
        query = SearchQuery(
            text=data["query"],
            filters=list_filters(data),
            limit=data.get("top_k") or min(DEFAULT_TOP_K, settings.MEMORY_MAX_PAGE_SIZE),
            min_similarity=data.get("threshold"),
            options={} if data.get("rerank") is None else {"rerank": data["rerank"]},
        )
        result = memories_recall(project=self.project, query=query)
        hits = [memory_body(hit.memory, score=hit.score) for hit in result.hits]  # type: ignore[arg-type]
        return Response({"results": hits})


class MemoryDetailView(Mem0View):
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(memory_body(memory_read(project=self.project, memory_id=memory_id)))

    def put(self, request: Request, memory_id: str) -> Response:
        data = self.validated(s.UpdateSerializer, request.data)
        memory = memory_update(
            project=self.project, memory_id=memory_id, changes=_changes(data), actor=self.actor
        )
        return Response(memory_body(memory))

    def delete(self, request: Request, memory_id: str) -> Response:
        """`delete_linked` needs nothing more: the memories one superseded are deleted already."""
        memory_delete(project=self.project, memory_id=memory_id, actor=self.actor)
        return Response({"message": "Memory deleted successfully!"})


def _changes(data: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if "text" in data:
        changes["content"] = data["text"]
    if data.get("metadata") is not None:
        changes["metadata"] = data["metadata"]
    if "expiration_date" in data:
        changes["expires_at"] = data["expiration_date"]
    return changes


class HistoryView(Mem0View):
    def get(self, request: Request, memory_id: str) -> Response:
        entries = memory_history(project=self.project, memory_id=memory_id)
        return Response([history_body(entry) for entry in entries])


class BatchView(Mem0View):
    """Up to 1,000 updates or deletes, all or nothing; an unknown id is a 404 naming it."""

    def put(self, request: Request) -> Response:
        items = self.validated(s.BatchUpdateSerializer, request.data)["memories"]
        with transaction.atomic():
            for index, item in enumerate(items):
                try:
                    memory_update(
                        project=self.project,
                        memory_id=item["memory_id"],
                        changes=_changes(item),
                        actor=self.actor,
                    )
                except ServiceError as exc:
                    raise _at(exc, f"memories[{index}]") from exc
        return Response({"message": f"Successfully updated {len(items)} memories"})

    def delete(self, request: Request) -> Response:
        items = self.validated(s.BatchDeleteSerializer, request.data)["memories"]
        result = memories_delete(
            project=self.project,
            actor=self.actor,
            memory_ids=[item["memory_id"] for item in items],
            force=True,
            reason="batch_delete",
        )
        return Response({"message": f"Successfully deleted {len(result.deleted_ids)} memories"})


def _at(exc: ServiceError, prefix: str) -> ServiceError:
    """The same error, its fields named under one batch item (`memories[3].memory_id`)."""
    fields = {f"{prefix}.{name}": messages for name, messages in exc.fields.items()}
    if not fields:
        fields = {f"{prefix}.memory_id": [exc.message]}
    return type(exc)(f"{prefix}: {exc.message}", fields=fields)
