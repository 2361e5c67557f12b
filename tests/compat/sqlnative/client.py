"""A client of the SQL-native entity memory server's REST API, written from its
specification (§8 and the REST tests of §10.6): the paths without a trailing slash, JSON
bodies, filters in the query string, a memory object back from every memory call and arrays
from lists and searches. It knows nothing of the platform; tests point it at the platform."""

from __future__ import annotations

from typing import Any

import httpx


class SqlNativeError(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"{response.status_code}: {response.text}")
        self.status_code = response.status_code


class SqlNativeClient:
    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise SqlNativeError(response)
        return response.json()

    # POST /api/memories: store_memory's parameters
    def store(self, content: str, memory_type: str = "observation", **fields: Any) -> Any:
        return self._call(
            "POST", "/api/memories", json={"content": content, "memory_type": memory_type, **fields}
        )

    def memories(self, **filters: Any) -> Any:
        return self._call("GET", "/api/memories", params=_query(filters))

    def memory(self, memory_id: str) -> Any:
        return self._call("GET", f"/api/memories/{memory_id}")

    def update(self, memory_id: str, **fields: Any) -> Any:
        return self._call("PUT", f"/api/memories/{memory_id}", json=fields)

    def delete(self, memory_id: str) -> Any:
        return self._call("DELETE", f"/api/memories/{memory_id}")

    # GET /api/memories/search (query params: q, mode, types, tags, limit)
    def search(self, q: str, **params: Any) -> Any:
        return self._call("GET", "/api/memories/search", params=_query({"q": q, **params}))

    def consolidate(self, similarity_threshold: float = 0.85, dry_run: bool = False) -> Any:
        body = {"similarity_threshold": similarity_threshold, "dry_run": dry_run}
        return self._call("POST", "/api/memories/consolidate", json=body)

    def create_entity(self, name: str, entity_type: str, description: str = "") -> Any:
        body = {"name": name, "entity_type": entity_type, "description": description}
        return self._call("POST", "/api/entities", json=body)

    def entity(self, entity_id: int) -> Any:
        return self._call("GET", f"/api/entities/{entity_id}")

    def entity_graph(self, entity_id: int, depth: int = 1) -> Any:
        return self._call("GET", f"/api/entities/{entity_id}/graph", params={"depth": depth})

    def create_relation(self, source: str, target: str, relation_type: str, **fields: Any) -> Any:
        body = {"source": source, "target": target, "relation_type": relation_type, **fields}
        return self._call("POST", "/api/relations", json=body)

    def overview(self) -> Any:
        return self._call("GET", "/api/analytics/overview")


def _query(params: dict[str, Any]) -> dict[str, Any]:
    """Lists as the server's query strings take them: comma-separated."""
    return {k: ",".join(v) if isinstance(v, list) else v for k, v in params.items()}
