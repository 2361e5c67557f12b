"""Two ways into mem0's open-source `Memory` contract, driven alike: the in-process
`memory_platform.Memory` (on the test database) and its `/v1/` REST wrapper (DRF's test
client, with alice's key). A test written against `api` runs through both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from memory_platform import Memory, errors
from tests.conftest import Tenant


class RestError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        detail = body.get("detail") if isinstance(body, dict) else body
        super().__init__(f"{status}: {detail}")
        self.status, self.body = status, body


# a library error and the status its REST counterpart answers with
STATUS = {
    errors.ScopeError: 400,
    errors.ValidationError: 400,
    errors.NotFoundError: 404,
    errors.ConflictError: 409,
}


class InProcess:
    name = "in-process"

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.memory = Memory(config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)

    @contextmanager
    def refused(self, error: type[errors.MemoryError]) -> Iterator[Any]:
        with pytest.raises(error) as info:
            yield info


class Rest:
    """The `/v1/` wrapper as a client written from the specification would call it."""

    name = "rest"

    def __init__(self, tenant: Tenant, *, graph: bool = False) -> None:
        self.tenant, self.graph = tenant, graph

    def _ok(self, response: Any) -> Any:
        if response.status_code >= 400:
            raise RestError(response.status_code, response.json())
        return response.json()

    def _query(self, **params: Any) -> str:
        kept = {k: v for k, v in params.items() if v is not None}
        if "filters" in kept:
            kept["filters"] = json.dumps(kept["filters"])
        if self.graph:
            kept["enable_graph"] = "true"
        return urlencode(kept)

    @contextmanager
    def refused(self, error: type[errors.MemoryError]) -> Iterator[Any]:
        with pytest.raises(RestError) as info:
            yield info
        assert info.value.status == STATUS[error], info.value.body

    def add(self, messages: Any, **fields: Any) -> Any:
        body = {"messages": messages, **{k: v for k, v in fields.items() if v is not None}}
        return self._ok(self.tenant.post(f"/v1/memories/?{self._query()}", body))

    def search(self, query: str, **params: Any) -> Any:
        return self._ok(self.tenant.get(f"/v1/memories/search/?{self._query(q=query, **params)}"))

    def get(self, memory_id: str) -> Any:
        response = self.tenant.get(f"/v1/memories/{memory_id}/")
        return None if response.status_code == 404 else self._ok(response)

    def get_all(self, **params: Any) -> Any:
        return self._ok(self.tenant.get(f"/v1/memories/?{self._query(**params)}"))

    def update(self, memory_id: str, text: str) -> Any:
        return self._ok(self.tenant.put(f"/v1/memories/{memory_id}/", {"text": text}))

    def delete(self, memory_id: str) -> Any:
        return self._ok(self.tenant.delete(f"/v1/memories/{memory_id}/"))

    def delete_all(self, **scope: Any) -> Any:
        return self._ok(self.tenant.delete(f"/v1/memories/?{self._query(**scope)}"))

    def history(self, memory_id: str) -> Any:
        response = self.tenant.get(f"/v1/memories/{memory_id}/history/")
        return [] if response.status_code == 404 else self._ok(response)

    def reset(self) -> None:
        self._ok(self.tenant.post("/v1/reset/"))

    def entities(self, **scope: Any) -> Any:
        return self._ok(self.tenant.post("/v1/entities/", scope))

    def relations(self, name: str, **scope: Any) -> Any:
        path = f"/v1/entities/{quote(name)}/relations/?{self._query(**scope)}"
        return self._ok(self.tenant.get(path))


@pytest.fixture(params=["in-process", "rest"])
def api(request: pytest.FixtureRequest, alice: Tenant) -> InProcess | Rest:
    return InProcess() if request.param == "in-process" else Rest(alice)


@pytest.fixture(params=["in-process", "rest"])
def graph_api(
    request: pytest.FixtureRequest, alice: Tenant
) -> tuple[InProcess | Rest, InProcess | Rest]:
    """(with graph results on: `relations` in add and search, without), on one store."""
    if request.param == "in-process":
        return InProcess({"graph_store": {"provider": "postgres"}}), InProcess()
    return Rest(alice, graph=True), Rest(alice)


@pytest.fixture
def quiet_model(settings: Any) -> None:
    """Only the calls under test reach the fake model."""
    settings.MEMORY_UTILITY_SCORING = False
