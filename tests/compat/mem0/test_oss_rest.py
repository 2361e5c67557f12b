"""mem0's self-hosted server paths, called as a client written from its server/main.py calls
them (`X-API-Key`, no trailing slashes, the scope in `filters`), and what the `/v1/` wrapper of
the open-source API adds beside mem0's platform paths; another project's key gets nothing."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import Tenant, make_tenant


class JsonClient(APIClient):
    """Sends JSON bodies, as mem0's server expects them."""

    def post(self, path: str, data: Any = None, format: str = "json", **kwargs: Any) -> Any:
        return super().post(path, data, format=format, **kwargs)

    def put(self, path: str, data: Any = None, format: str = "json", **kwargs: Any) -> Any:
        return super().put(path, data, format=format, **kwargs)


def server_client(key: str) -> APIClient:
    client = JsonClient()
    client.credentials(HTTP_X_API_KEY=key)
    return client


@pytest.fixture
def server(alice: Tenant) -> APIClient:
    return server_client(alice.key)


def _json(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.content
    return response.json()


def test_the_server_paths_add_list_search_update_and_keep_history(server) -> None:
    body = {"messages": [{"role": "user", "content": "I live in Paris"}], "user_id": "u1"}
    (added,) = _json(server.post("/memories", body))["results"]
    assert (added["event"], added["memory"]) == ("ADD", "User lives in Paris")
    listed = _json(server.get("/memories?user_id=u1"))["results"]
    assert [m["id"] for m in listed] == [added["id"]]
    found = _json(
        server.post("/search", {"query": "where does the user live", "filters": {"user_id": "u1"}})
    )
    assert [hit["memory"] for hit in found["results"]] == ["User lives in Paris"]
    old_style = _json(server.post("/search", {"query": "Paris", "user_id": "u1", "top_k": 1}))
    assert len(old_style["results"]) == 1
    updated = server.put(f"/memories/{added['id']}", {"text": "User lives in Rome"})
    assert _json(updated) == {"message": "Memory updated successfully!"}
    assert _json(server.get(f"/memories/{added['id']}"))["memory"] == "User lives in Rome"
    history = _json(server.get(f"/memories/{added['id']}/history"))
    assert [(h["event"], h["new_memory"]) for h in history] == [
        ("ADD", "User lives in Paris"),
        ("UPDATE", "User lives in Rome"),
    ]


def test_the_server_paths_delete_one_a_scope_and_everything(server, alice) -> None:
    ids = [
        _json(server.post("/memories", {"messages": [m], "user_id": u, "infer": False}))["results"][
            0
        ]["id"]
        for m, u in (
            ({"role": "user", "content": "one"}, "u1"),
            ({"role": "user", "content": "two"}, "u1"),
            ({"role": "user", "content": "three"}, "u2"),
        )
    ]
    assert _json(server.delete(f"/memories/{ids[0]}"))["message"] == "Memory deleted successfully"
    assert server.get(f"/memories/{ids[0]}").status_code == 404
    deleted = _json(server.delete("/memories?user_id=u1"))
    assert deleted["message"] == "All relevant memories deleted"
    assert _json(server.get("/memories?user_id=u1"))["results"] == []
    refused = server.delete("/memories")
    assert refused.status_code == 400 and "user_id" in refused.json()["detail"]
    assert [m["memory"] for m in _json(server.get("/memories"))["results"]] == ["three"]  # admin
    assert _json(server.post("/reset"))["message"] == "All memories reset"
    assert _json(server.get("/memories"))["results"] == []


def test_listing_everything_and_reset_need_an_admin_key(alice) -> None:
    writer = server_client(make_tenant(alice.project.slug, scopes=["read", "write"]).key)
    assert writer.get("/memories").status_code == 403
    assert writer.post("/reset").status_code == 403
    assert writer.post("/v1/reset/").status_code == 403
    assert writer.get("/memories?user_id=u1").status_code == 200


def test_configuring_over_http_is_refused_with_what_to_do_instead(server) -> None:
    refused = server.post("/configure", {"llm": {"provider": "openai"}})
    assert refused.status_code == 501
    assert "MEMORY_LLM_" in refused.json()["detail"]


def test_the_v1_wrapper_sits_beside_mem0s_platform_paths(alice) -> None:
    added = _json(alice.post("/v1/memories/", {"messages": "I like tea", "user_id": "u1"}))
    memory_id = added["results"][0]["id"]
    assert _json(alice.get("/v1/memories/?user_id=u1"))["results"][0]["id"] == memory_id
    assert _json(alice.get(f"/v1/memories/{memory_id}/"))["categories"] == []  # platform shape
    assert _json(alice.get("/v1/entities/"))["results"][0]["name"] == "u1"  # mem0's users
    hits = _json(alice.get("/v1/memories/search/?q=tea&user_id=u1&limit=1"))["results"]
    assert [hit["id"] for hit in hits] == [memory_id]
    missing_query = alice.get("/v1/memories/search/?user_id=u1")
    assert missing_query.status_code == 400 and "query" in missing_query.json()["error"]["fields"]


def test_another_projects_key_gets_nothing_of_alice(alice, charlie) -> None:
    body = {"messages": "Alice works at Google", "user_id": "u1"}
    added = _json(alice.post("/v1/memories/", body))
    memory_id = added["results"][0]["id"]
    other = server_client(charlie.key)
    assert other.get(f"/memories/{memory_id}").status_code == 404
    assert other.put(f"/memories/{memory_id}", {"text": "x"}).status_code == 404
    assert other.delete(f"/memories/{memory_id}").status_code == 404
    assert _json(other.get(f"/memories/{memory_id}/history")) == []
    assert _json(other.get("/memories?user_id=u1"))["results"] == []
    assert _json(other.post("/search", {"query": "Google", "user_id": "u1"}))["results"] == []
    assert _json(charlie.get("/v1/memories/search/?q=Google&user_id=u1"))["results"] == []
    assert _json(charlie.post("/v1/entities/", {"user_id": "u1"}))["results"] == []
    assert charlie.get("/v1/entities/Alice/relations/?user_id=u1").status_code == 404
    _json(charlie.post("/v1/reset/"))
    _json(other.post("/reset"))
    assert _json(alice.get(f"/v1/memories/{memory_id}/"))["memory"] == "Alice works at Google"


def test_searches_of_every_wrapper_count_against_the_search_limit(alice, settings) -> None:
    settings.MEMORY_RATE_LIMITS = {"read": "10/day", "search": "2/day", "write": "10/day"}
    server = server_client(alice.key)
    assert server.post("/search", {"query": "tea", "user_id": "u1"}).status_code == 200
    assert alice.get("/v1/memories/search/?q=tea&user_id=u1").status_code == 200
    assert alice.get("/v1/memories/search/?q=tea&user_id=u1").status_code == 429
    assert alice.get("/v1/memories/?user_id=u1").status_code == 200  # a read


def test_add_with_the_graph_answers_with_the_relations_it_made(alice) -> None:
    """The graph of an API write is otherwise extracted after the answer; mem0's `add` with
    `enable_graph` answers with it, so it is extracted before."""
    body = {"messages": "I work at Google with Priya", "user_id": "u1", "enable_graph": True}
    added = _json(alice.post("/v1/memories/", body))
    relations = added["relations"]["added_entities"]
    assert relations, added
    assert any(r["destination"].lower() == "google" for r in relations), relations
