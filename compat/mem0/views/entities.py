"""mem0's entities: the users, agents, runs and apps that have memories (`users()`), and
deleting one with all its memories (`delete_users()`)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from compat.mem0 import serializers as s
from compat.mem0.filters import APP_ID_KEY
from compat.mem0.representations import scope_body
from compat.mem0.selectors import SCOPE_COLUMNS, memory_scopes
from compat.mem0.views.base import Mem0View
from memories.selectors.filters import MemoryFilters
from memories.services.memories import memories_delete
from platformcore.lib.errors import NotFound, check_choice


class EntityListView(Mem0View):
    def get(self, request: Request) -> Response:
        paging = self.validated(s.EntityPageSerializer, request.query_params)
        page, size = paging["page"], paging["page_size"]
        found = memory_scopes(project=self.project, limit=size, offset=(page - 1) * size)
        body = {"count": found.count, **self.page_links(request, page, size, found.count)}
        body["results"] = [scope_body(row) for row in found.results]
        return Response(body)


class EntityDetailView(Mem0View):
    def delete(self, request: Request, kind: str, name: str) -> Response:
        check_choice("type", kind, list(SCOPE_COLUMNS))
        criteria = MemoryFilters(
            user_id=name if kind == "user" else None,
            agent_id=name if kind == "agent" else None,
            run_id=name if kind == "run" else None,
            expression={APP_ID_KEY: name} if kind == "app" else None,
        )
        result = memories_delete(
            project=self.project,
            actor=self.actor,
            filters=criteria,
            force=True,
            reason="delete_entity",
        )
        if not result.deleted_ids:
            raise NotFound(f"no {kind} named {name!r} has memories")
        return Response({"message": "Entity deleted successfully!"})
