"""The SQL-native entity memory server's REST clients against the platform: the client of
`client.py`, written from that server's specification, an httpx client whose transport is
Django's test client (in process, through every middleware, on the test's transaction), at
the unversioned `/api/...` paths."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from memories.models import Memory
from tests.compat.sqlnative.client import SqlNativeClient, SqlNativeError
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

HOOKS = [
    "React hooks must be called at the top level of a component",
    "Call React hooks only at the top level of your components",
    "React hooks may only be called at the top level of function components",
]


class DjangoTransport(httpx.BaseTransport):
    """httpx requests answered by Django's test client."""

    def __init__(self) -> None:
        self.django = Client()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        answer = self.django.generic(
            request.method,
            path,
            data=request.read(),
            content_type=headers.pop("content-type", "application/octet-stream"),
            headers=headers,
        )
        return httpx.Response(
            answer.status_code, headers=dict(answer.items()), content=answer.content
        )


def connect(tenant: Tenant) -> Iterator[SqlNativeClient]:
    transport = DjangoTransport()
    headers = {"Authorization": f"Bearer {tenant.key}"}
    with httpx.Client(transport=transport, base_url="http://testserver", headers=headers) as http:
        yield SqlNativeClient(http)


@pytest.fixture
def server(alice: Tenant) -> Iterator[SqlNativeClient]:
    yield from connect(alice)


@pytest.fixture
def other(charlie: Tenant) -> Iterator[SqlNativeClient]:
    yield from connect(charlie)


def _age(memory_id: str, days: int) -> None:
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


def test_a_client_written_from_the_specification_stores_reads_updates_and_deletes(server):
    stored = server.store("User prefers TypeScript", "preference", tags=["lang"])
    assert stored["created"] is True and stored["confidence"] == 1.0
    assert stored["has_embedding"] is True
    assert stored["agent_id"] == "default"  # a scope-less write: the server's single store
    again = server.store("User prefers TypeScript", "preference")
    assert again["id"] == stored["id"] and again["created"] is False

    listed = server.memories(memory_types=["preference"], tags=["lang"])
    assert [memory["id"] for memory in listed] == [stored["id"]]
    assert server.memory(stored["id"])["content"] == "User prefers TypeScript"

    updated = server.update(stored["id"], content="User prefers TypeScript with strict mode")
    assert updated["version"] == 2 and updated["content"].endswith("strict mode")
    assert server.delete(stored["id"]) == {"id": stored["id"], "deleted": True}
    with pytest.raises(SqlNativeError) as missing:
        server.memory(stored["id"])
    assert missing.value.status_code == 404


def test_search_filters_by_the_types_alias_and_returns_an_array_with_scores(server):
    server.store("Chose React over Vue for the frontend", "decision")
    server.store("React renders the dashboard widgets", "observation")
    found = server.search("React frontend", types=["decision"], limit=5)
    assert isinstance(found, list) and len(found) == 1
    assert found[0]["memory_type"] == "decision" and found[0]["score"] > 0
    both = server.search("React", mode="keyword")
    assert len(both) == 2


def test_min_confidence_is_the_effective_confidence_after_decay(server):
    fresh = server.store("The build cache lives in /var/cache/ci")
    old = server.store("The old build cache lived in /tmp/ci")
    _age(old["id"], 60)  # two half-lives unread: effective confidence ~0.25
    listed = server.memories(min_confidence=0.5)
    assert [memory["id"] for memory in listed] == [fresh["id"]]
    found = server.search("build cache", min_confidence=0.5)
    assert [memory["id"] for memory in found] == [fresh["id"]]


def test_consolidate_merges_clusters_and_removes_nothing_else(server):
    ids = [server.store(text)["id"] for text in HOOKS]
    forgotten = server.store("A note nobody has read in a year")
    _age(forgotten["id"], 400)  # the prune rule would remove it; merging must not
    preview = server.consolidate(dry_run=True)
    assert preview["clusters_found"] == 1 and preview["memories_merged"] == 2
    report = server.consolidate()
    assert report == {
        "clusters_found": 1,
        "memories_merged": 2,
        "memories_deleted": 2,
        "dry_run": False,
        "clusters": report["clusters"],
    }
    assert {memory["id"] for memory in server.memories()} == {ids[0], forgotten["id"]}


def test_entities_relations_and_analytics_answer_at_the_servers_paths(server):
    alice = server.create_entity("Alice", "person", "Software engineer")
    server.create_relation("Alice", "Bob", "collaborates_with", strength=0.8)
    graph = server.entity_graph(alice["id"], depth=1)
    assert {node["name"] for node in graph["nodes"]} == {"Alice", "Bob"}
    assert server.entity(alice["id"])["name"] == "Alice"
    server.store("Alice manages the frontend team", entity_names=["Alice"])
    overview = server.overview()
    assert overview["total_memories"] == 1 and overview["total_entities"] >= 2


def test_another_projects_key_gets_nothing(server, other):
    stored = server.store("Alice's deploy key rotates monthly")
    assert other.memories() == [] and other.search("deploy key") == []
    for call in (other.memory, other.delete):
        with pytest.raises(SqlNativeError) as refused:
            call(stored["id"])
        assert refused.value.status_code == 404
    assert server.memory(stored["id"])["id"] == stored["id"]
