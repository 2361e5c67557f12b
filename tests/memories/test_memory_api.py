from __future__ import annotations

import pytest

from memories.models import Memory, MemoryHistory
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


def test_store_basic_memory_has_defaults_and_embedding(alice: Tenant) -> None:
    response = alice.post(
        URL, {"content": "User prefers TypeScript", "memory_type": "preference", "user_id": "u1"}
    )
    assert response.status_code == 201
    body = response.json()
    assert body["created"] is True
    assert body["confidence"] == 1.0
    assert body["effective_confidence"] == pytest.approx(1.0, abs=1e-3)  # seconds of decay
    assert body["memory_type"] == "preference"
    assert body["has_embedding"] is True
    assert body["version"] == 1
    assert body["token_count"] > 0
    assert len(Memory.objects.get(pk=body["id"]).embedding) == 384


def test_store_requires_a_scope(alice: Tenant) -> None:
    response = alice.post(URL, {"content": "orphan"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert "At least one of user_id, agent_id, or run_id" in error["message"]
    assert set(error["fields"]) == {"user_id", "agent_id", "run_id"}


def test_exact_duplicate_returns_existing_with_created_false(alice: Tenant, remember) -> None:
    first = remember("User prefers dark mode")
    response = alice.post(URL, {"content": "  user prefers   DARK mode ", "user_id": "u1"})
    assert response.status_code == 200
    assert response.json()["id"] == first["id"]
    assert response.json()["created"] is False
    assert Memory.objects.count() == 1


def test_same_content_in_another_scope_is_a_new_memory(remember) -> None:
    first = remember("User prefers dark mode", user_id="u1")
    second = remember("User prefers dark mode", user_id="u2")
    assert first["id"] != second["id"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"content": "x" * 8001}, "content"),
        ({"content": ""}, "content"),
        ({"content": 123}, "content"),
        ({"content": "ok", "memory_type": "gossip"}, "memory_type"),
        ({"content": "ok", "confidence": 1.5}, "confidence"),
        ({"content": "ok", "importance": -0.1}, "importance"),
        ({"content": "ok", "confidence": "high"}, "confidence"),
        ({"content": "ok", "tags": "not-a-list"}, "tags"),
        ({"content": "ok", "metadata": ["x"]}, "metadata"),
        ({"content": "ok", "pinned": "maybe"}, "pinned"),
        ({"content": "ok", "user_id": 5}, "user_id"),
    ],
)
def test_bad_input_is_400_naming_the_field(alice: Tenant, payload: dict, field: str) -> None:
    payload.setdefault("user_id", "u1")
    response = alice.post(URL, payload)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]
    assert Memory.objects.count() == 0


def test_malformed_json_is_400(alice: Tenant) -> None:
    response = alice.client.post(URL, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert "error" in response.json()


def test_get_update_and_history(alice: Tenant, remember) -> None:
    memory = remember("User lives in Paris", tags=["location"])
    url = f"{URL}{memory['id']}/"
    assert alice.get(url).json()["content"] == "User lives in Paris"

    response = alice.patch(url, {"content": "User lives in Berlin", "importance": 0.9})
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "User lives in Berlin"
    assert body["version"] == 2
    assert body["importance"] == 0.9

    history = alice.get(f"{url}history/").json()
    assert [entry["event"] for entry in history] == ["ADD", "UPDATE"]
    assert history[1]["old_content"] == "User lives in Paris"
    assert history[1]["new_content"] == "User lives in Berlin"
    assert history[1]["actor"].startswith("key:")
    assert history[1]["user_id"] == "u1"


def test_update_re_embeds_content(alice: Tenant, remember) -> None:
    memory = remember("User likes cats")
    before = list(Memory.objects.get(pk=memory["id"]).embedding)
    alice.patch(f"{URL}{memory['id']}/", {"content": "Quarterly revenue grew by ten percent"})
    assert list(Memory.objects.get(pk=memory["id"]).embedding) != before


def test_put_accepts_mem0_text_field(alice: Tenant, remember) -> None:
    memory = remember("User likes tea")
    response = alice.put(f"{URL}{memory['id']}/", {"text": "User likes green tea"})
    assert response.status_code == 200
    assert response.json()["content"] == "User likes green tea"


def test_update_without_change_keeps_version(alice: Tenant, remember) -> None:
    memory = remember("User likes tea")
    response = alice.patch(f"{URL}{memory['id']}/", {"content": "User likes tea"})
    assert response.json()["version"] == 1
    assert MemoryHistory.objects.filter(memory_id=memory["id"]).count() == 1


def test_scope_cannot_be_changed_by_update(alice: Tenant, remember) -> None:
    memory = remember("User likes tea")
    response = alice.patch(f"{URL}{memory['id']}/", {"user_id": "someone-else"})
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]["fields"]


def test_update_into_duplicate_content_is_409(alice: Tenant, remember) -> None:
    remember("User likes tea")
    other = remember("User likes coffee")
    response = alice.patch(f"{URL}{other['id']}/", {"content": "User likes tea"})
    assert response.status_code == 409
    assert Memory.objects.get(pk=other["id"]).content == "User likes coffee"


def test_bad_update_leaves_memory_as_it_was(alice: Tenant, remember) -> None:
    memory = remember("User likes tea")
    response = alice.patch(
        f"{URL}{memory['id']}/", {"content": "User likes mint tea", "confidence": 7}
    )
    assert response.status_code == 400
    assert Memory.objects.get(pk=memory["id"]).content == "User likes tea"


def test_soft_delete_hides_memory_from_every_read_but_keeps_history(
    alice: Tenant, remember
) -> None:
    memory = remember("Temporary note")
    url = f"{URL}{memory['id']}/"
    assert alice.delete(url).status_code == 204
    assert alice.get(url).status_code == 404
    assert alice.get(URL).json()["count"] == 0
    assert alice.patch(url, {"content": "again"}).status_code == 404
    assert alice.delete(url).status_code == 404
    assert Memory.objects.get(pk=memory["id"]).deleted_at is not None
    history = alice.get(f"{url}history/").json()
    assert [entry["event"] for entry in history] == ["ADD", "DELETE"]
    assert history[-1]["is_deleted"] is True


def test_restore_brings_a_deleted_memory_back(alice: Tenant, remember) -> None:
    memory = remember("Temporary note")
    alice.delete(f"{URL}{memory['id']}/")
    assert alice.post(f"{URL}{memory['id']}/restore/").status_code == 200
    assert alice.get(f"{URL}{memory['id']}/").status_code == 200
    events = [e["event"] for e in alice.get(f"{URL}{memory['id']}/history/").json()]
    assert events == ["ADD", "DELETE", "RESTORE"]


def test_storing_deleted_content_again_creates_a_new_memory(alice: Tenant, remember) -> None:
    memory = remember("Temporary note")
    alice.delete(f"{URL}{memory['id']}/")
    again = remember("Temporary note")
    assert again["created"] is True and again["id"] != memory["id"]


def test_unknown_and_malformed_ids_are_404(alice: Tenant) -> None:
    assert alice.get(f"{URL}00000000-0000-0000-0000-000000000000/").status_code == 404
    assert alice.get(f"{URL}not-a-uuid/").status_code == 404
    assert alice.get(f"{URL}not-a-uuid/history/").status_code == 404


def test_list_filters_by_scope_type_tags_source_and_confidence(alice: Tenant, remember) -> None:
    remember("A", user_id="u1", memory_type="fact", tags=["x", "y"], source="chat")
    remember("B", user_id="u1", memory_type="decision", tags=["x"], confidence=0.3)
    remember("C", user_id="u2", agent_id="bot", memory_type="fact", tags=["y"])

    def contents(**params: object) -> list[str]:
        response = alice.get(URL, params)
        assert response.status_code == 200, response.json()
        return sorted(item["content"] for item in response.json()["results"])

    assert contents(user_id="u1") == ["A", "B"]
    assert contents(user_id="u2", agent_id="bot") == ["C"]
    assert contents(user_id="u1", agent_id="bot") == []
    assert contents(memory_type="fact") == ["A", "C"]
    assert contents(memory_type="fact,decision") == ["A", "B", "C"]
    assert contents(tags="x,y") == ["A"]
    assert contents(source="chat") == ["A"]
    assert contents(min_confidence=0.5) == ["A", "C"]


def test_list_pagination_is_stable_and_bounded(alice: Tenant, remember) -> None:
    for index in range(25):
        remember(f"memory number {index}")
    first = alice.get(URL, {"limit": 10}).json()
    assert first["count"] == 25 and len(first["results"]) == 10
    second = alice.get(URL, {"limit": 10, "offset": 10}).json()
    assert not {m["id"] for m in first["results"]} & {m["id"] for m in second["results"]}
    assert len(alice.get(URL).json()["results"]) == 20
    assert alice.get(URL, {"limit": 101}).status_code == 400
    assert alice.get(URL, {"offset": -1}).status_code == 400


def test_list_rejects_bad_filter_values(alice: Tenant) -> None:
    response = alice.get(URL, {"memory_type": "gossip"})
    assert response.status_code == 400
    assert "memory_type" in str(response.json()["error"]["fields"])
    assert alice.get(URL, {"created_after": "yesterday"}).status_code == 400


def test_delete_by_scope_leaves_other_scopes(alice: Tenant, remember) -> None:
    remember("one", user_id="u1")
    remember("two", user_id="u1")
    remember("three", user_id="u2")
    response = alice.delete(f"{URL}?user_id=u1")
    assert response.status_code == 200
    assert response.json()["deleted"] == 2
    assert [m["content"] for m in alice.get(URL).json()["results"]] == ["three"]


def test_delete_without_scope_is_refused(alice: Tenant, remember) -> None:
    remember("one")
    response = alice.delete(URL)
    assert response.status_code == 400
    assert alice.get(URL).json()["count"] == 1


def test_reset_wipes_only_the_callers_project(alice: Tenant, bob: Tenant, remember) -> None:
    remember("alice's memory")
    bob.post(URL, {"content": "bob's memory", "user_id": "u1"})
    response = alice.post("/api/v1/reset/")
    assert response.status_code == 200
    assert response.json()["deleted"]["memories"] == 1
    assert alice.get(URL).json()["count"] == 0
    assert bob.get(URL).json()["count"] == 1


def test_links_create_list_update_and_delete(alice: Tenant, remember) -> None:
    error = remember("Deploy failed: missing env var", memory_type="error")
    fix = remember("Set DATABASE_URL before deploy", memory_type="procedure")
    url = f"{URL}{error['id']}/links/"
    response = alice.post(url, {"to_id": fix["id"], "link_type": "resolved_by", "strength": 0.9})
    assert response.status_code == 201
    link = response.json()
    again = alice.post(url, {"to_id": fix["id"], "link_type": "resolved_by", "strength": 0.5})
    assert again.status_code == 200 and again.json()["id"] == link["id"]
    assert again.json()["strength"] == 0.5
    assert [item["id"] for item in alice.get(f"{URL}{fix['id']}/links/").json()] == [link["id"]]
    assert alice.delete(f"{url}{link['id']}/").status_code == 204
    assert alice.get(url).json() == []


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"link_type": "likes"}, "link_type"),
        ({"link_type": "supports", "strength": 2}, "strength"),
        ({"link_type": "supports", "to_id": "nope"}, "to_id"),
    ],
)
def test_bad_links_are_400(alice: Tenant, remember, payload: dict, field: str) -> None:
    one, two = remember("one"), remember("two")
    payload.setdefault("to_id", two["id"])
    response = alice.post(f"{URL}{one['id']}/links/", payload)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_self_link_is_refused(alice: Tenant, remember) -> None:
    one = remember("one")
    response = alice.post(f"{URL}{one['id']}/links/", {"to_id": one["id"]})
    assert response.status_code == 400


def test_openapi_schema_and_docs_are_served(anonymous) -> None:
    schema = anonymous.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/memories/" in schema.content
    assert anonymous.get("/api/docs/").status_code == 200


def test_health_reports_database(anonymous) -> None:
    response = anonymous.get("/health/")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"


def test_an_update_can_retire_the_memories_it_supersedes(alice, remember):
    old = remember("The office is in Berlin")
    new = remember("The office moved")
    response = alice.patch(
        f"/api/v1/memories/{new['id']}/",
        {"content": "The office is in Munich now", "supersedes": [old["id"]]},
    )
    assert response.status_code == 200, response.json()
    assert alice.get(f"/api/v1/memories/{old['id']}/").status_code == 404
    retired = alice.get(f"/api/v1/memories/{old['id']}/history/").json()[-1]
    assert (retired["event"], retired["new_values"]) == (
        "DELETE",
        {"reason": f"superseded by {new['id']}"},
    )
    missing = alice.patch(
        f"/api/v1/memories/{new['id']}/",
        {"content": "Not applied", "supersedes": ["00000000-0000-0000-0000-000000000000"]},
    )
    assert missing.status_code == 404
    assert (
        alice.get(f"/api/v1/memories/{new['id']}/").json()["content"]
        == "The office is in Munich now"
    )


def test_tags_and_metadata_have_caps_every_writer_meets(alice):
    many_tags = alice.post(
        "/api/v1/memories/",
        {"content": "tagged", "user_id": "u1", "tags": [f"t{i}" for i in range(101)]},
    )
    assert many_tags.status_code == 400 and "tags" in many_tags.json()["error"]["fields"]
    big_metadata = alice.post(
        "/api/v1/memories/",
        {"content": "labelled", "user_id": "u1", "metadata": {"blob": "x" * 20_000}},
    )
    assert big_metadata.status_code == 400 and "metadata" in big_metadata.json()["error"]["fields"]


def test_the_bulk_cap_holds_for_every_caller_not_only_the_api(alice):
    from memories.services.bulk import MAX_BULK_ITEMS, memories_create_bulk
    from memories.services.memories import MemoryInput
    from platformcore.lib.actor import command
    from platformcore.lib.errors import InvalidInput

    items = [MemoryInput(content=f"item {i}", user_id="u1") for i in range(MAX_BULK_ITEMS + 1)]
    with pytest.raises(InvalidInput) as refused:
        memories_create_bulk(project=alice.project, items=items, actor=command("test"))
    assert "memories" in refused.value.fields
