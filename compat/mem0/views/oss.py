"""REST over mem0's open-source `Memory` (compat/mem0/oss.py), in two shapes:

- the `/v1/` wrapper of that API (`POST /v1/memories/`, `GET /v1/memories/search/?q=`,
  `GET /v1/memories/`, `POST /v1/reset/`, `POST /v1/entities/`,
  `GET /v1/entities/<name>/relations/`), beside mem0's platform paths that share its prefix
  and already answer its reads, updates and deletes of one memory;
- mem0's self-hosted server (`POST/GET/DELETE /memories`, `GET/PUT/DELETE /memories/<id>`,
  `GET /memories/<id>/history`, `POST /search`, `POST /reset`), without trailing slashes.

`enable_graph` (query string or body) adds the graph's `relations` to add and search.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from compat.mem0 import oss
from compat.mem0 import serializers as s
from compat.mem0.views.base import Mem0View
from compat.mem0.views.entities import EntityListView
from compat.mem0.views.memories import DeleteAllView
from platformcore.lib.errors import NotFound


class MethodScopes:
    """A view whose methods need other scopes than their HTTP verbs say (a POST that only
    reads): `required_scopes` by lowercase method name (tenants.permissions)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.action = request.method.lower() if request.method else None
        super().initial(request, *args, **kwargs)  # type: ignore[misc]


def _graph(request: Request) -> bool:
    value = request.query_params.get("enable_graph")
    if value is None and isinstance(request.data, dict):
        value = request.data.get("enable_graph")
    return str(value).lower() in ("1", "true", "yes")


def _query(request: Request) -> dict[str, Any]:
    return {key: request.query_params.get(key) for key in request.query_params}


# --- the /v1/ wrapper -------------------------------------------------------------------------


class V1MemoriesView(DeleteAllView):
    """`POST /v1/memories/` adds, `GET` lists a scope (`user_id`, `agent_id`, `run_id`,
    `limit`), `DELETE` deletes a scope (mem0's platform `delete_all`)."""

    def get(self, request: Request) -> Response:
        data = self.validated(s.OssListSerializer, _query(request))
        return Response(oss.oss_get_all(project=self.project, data=data))

    def post(self, request: Request) -> Response:
        data = self.validated(s.OssAddSerializer, request.data)
        body = oss.oss_add(project=self.project, actor=self.actor, data=data, graph=_graph(request))
        return Response(body)


class V1SearchView(Mem0View):
    """`GET /v1/memories/search/?q=...&user_id=...&limit=...`."""

    def get(self, request: Request) -> Response:
        params = _query(request)
        params["query"] = params.pop("q", None)
        data = self.validated(s.OssSearchSerializer, params)
        return Response(oss.oss_search(project=self.project, data=data, graph=_graph(request)))


class ResetView(Mem0View):
    """Wipe the caller's project (admin keys): `POST /v1/reset/`, mem0's server `POST /reset`."""

    required_scopes = {None: "admin"}

    def post(self, request: Request) -> Response:
        return Response(oss.oss_reset(project=self.project))


class V1EntitiesView(MethodScopes, EntityListView):
    """`GET /v1/entities/` lists users, agents and runs (mem0's platform); `POST` with a
    scope lists that scope's knowledge-graph entities."""

    required_scopes = {"post": "read"}

    def post(self, request: Request) -> Response:
        data = self.validated(s.OssListSerializer, request.data)
        return Response(oss.oss_entities(project=self.project, data=data))


class V1EntityRelationsView(Mem0View):
    def get(self, request: Request, name: str) -> Response:
        data = self.validated(s.OssScopeSerializer, _query(request))
        return Response(oss.oss_entity_relations(project=self.project, name=name, data=data))


# --- mem0's self-hosted server ----------------------------------------------------------------


class ServerMemoriesView(Mem0View):
    def post(self, request: Request) -> Response:
        data = self.validated(s.OssAddSerializer, request.data)
        body = oss.oss_add(project=self.project, actor=self.actor, data=data, graph=_graph(request))
        return Response(body)

    def get(self, request: Request) -> Response:
        """A scope's memories; without one, every memory of the project (admin keys)."""
        data = self.validated(s.OssListSerializer, _query(request))
        if any(data.get(name) for name in ("user_id", "agent_id", "run_id")):
            return Response(oss.oss_get_all(project=self.project, data=data))
        if not request.auth.has_scope("admin"):  # type: ignore[union-attr]
            raise PermissionDenied("Admin role required to list all memories.")
        return Response(oss.oss_list_project(project=self.project, limit=data["limit"]))

    def delete(self, request: Request) -> Response:
        data = self.validated(s.OssScopeSerializer, _query(request))
        oss.oss_delete_all(project=self.project, actor=self.actor, data=data)
        return Response({"message": "All relevant memories deleted"})


class ServerMemoryView(Mem0View):
    def get(self, request: Request, memory_id: str) -> Response:
        memory = oss.oss_get(project=self.project, memory_id=memory_id)
        if memory is None:
            raise NotFound("memory not found")
        return Response(memory)

    def put(self, request: Request, memory_id: str) -> Response:
        data = self.validated(s.OssUpdateSerializer, request.data)
        answer = oss.oss_update(
            project=self.project, actor=self.actor, memory_id=memory_id, data=data
        )
        return Response(answer)

    def delete(self, request: Request, memory_id: str) -> Response:
        oss.oss_delete(project=self.project, actor=self.actor, memory_id=memory_id)
        return Response({"message": "Memory deleted successfully"})


class ServerHistoryView(Mem0View):
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(oss.oss_history(project=self.project, memory_id=memory_id))


class ServerSearchView(Mem0View):
    required_scopes = {None: "read"}  # a POST that only reads

    def post(self, request: Request) -> Response:
        data = self.validated(s.OssSearchSerializer, request.data)
        return Response(oss.oss_search(project=self.project, data=data, graph=_graph(request)))
