"""What the mem0 layer translates, checked in-process (the live tests drive mem0's own clients):
requests sent as mem0's clients send them, `Authorization: Token <key>` included."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from rest_framework.test import APIClient

from memories.models import Memory
from memories.services.fact_extraction.llm import FACT_EXTRACTION_TASK
from platformcore.llm import DATA_RULE
from tests.conftest import Tenant


@pytest.fixture
def mem0(alice: Tenant) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alice.key}")
    return client


def _post(client: APIClient, path: str, body: dict[str, Any], status: int = 200) -> Any:
    response = client.post(path, body, format="json")
    assert response.status_code == status, response.json()
    return response.json()


def test_infer_false_stores_each_user_and_assistant_message_as_given(mem0) -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "I am allergic to nuts."},
        {"role": "assistant", "content": "I will remember that."},
    ]
    body = {"messages": messages, "user_id": "u1", "infer": False}
    events = _post(mem0, "/v3/memories/add/", body)["results"]
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "I am allergic to nuts."),
        ("ADD", "I will remember that."),
    ]


def test_the_scope_may_come_in_filters_and_app_id_is_kept_in_metadata(mem0) -> None:
    body = {"messages": "Uses the beta app", "filters": {"user_id": "u1"}, "app_id": "beta"}
    event = _post(mem0, "/v3/memories/add/", body | {"infer": False})["results"][0]
    memory = mem0.get(f"/v1/memories/{event['id']}/").json()
    assert (memory["user_id"], memory["app_id"]) == ("u1", "beta")
    listed = _post(mem0, "/v3/memories/", {"filters": {"app_id": "beta"}})
    assert [m["id"] for m in listed["results"]] == [event["id"]]
    deleted = mem0.delete("/v1/memories/?app_id=beta")
    assert deleted.json()["deleted"] == 1


def test_categories_dates_and_expiration_dates_translate(mem0, alice) -> None:
    event = _post(
        mem0, "/v3/memories/add/", {"messages": "Ate ramen", "user_id": "u1", "infer": False}
    )["results"][0]
    Memory.objects.filter(pk=event["id"]).update(tags=["food"])
    today = Memory.objects.get(pk=event["id"]).created_at.date().isoformat()
    found = _post(mem0, "/v3/memories/", {"categories": ["food"], "end_date": today})
    assert found["count"] == 1 and found["results"][0]["categories"] == ["food"]
    assert _post(mem0, "/v3/memories/", {"categories": ["travel"]})["count"] == 0
    assert _post(mem0, "/v3/memories/", {"start_date": "2999-01-01"})["count"] == 0

    updated = mem0.put(
        f"/v1/memories/{event['id']}/", {"expiration_date": "2999-12-31"}, format="json"
    )
    assert updated.json()["expiration_date"] == "2999-12-31"
    cleared = mem0.put(f"/v1/memories/{event['id']}/", {"expiration_date": None}, format="json")
    assert cleared.json()["expiration_date"] is None


def test_delete_all_reads_the_filters_mem0_clients_put_in_the_query_string(mem0) -> None:
    for user in ("u1", "u2"):
        body = {"messages": f"Note of {user}", "user_id": user, "infer": False}
        _post(mem0, "/v3/memories/add/", body)
    response = mem0.delete("/v1/memories/?" + urlencode({"filters": "{'user_id': 'u1'}"}))
    assert response.json()["deleted"] == 1
    assert _post(mem0, "/v3/memories/", {})["count"] == 1


def test_delete_all_without_a_scope_deletes_nothing_and_names_the_fields(mem0) -> None:
    _post(mem0, "/v3/memories/add/", {"messages": "Keep me", "user_id": "u1", "infer": False})
    for query in ({}, {"filters": "{'created_at': {'gte': '2000-01-01'}}"}):
        response = mem0.delete("/v1/memories/?" + urlencode(query))
        assert response.status_code == 400
        assert "delete without a scope" in response.json()["detail"]
        assert "user_id" in response.json()["error"]["fields"]
    assert _post(mem0, "/v3/memories/", {})["count"] == 1


def test_custom_instructions_extend_the_extraction_prompt(mem0, fake_openai) -> None:
    fake_openai.reply({"facts": ["User likes ramen"]}, {"memory": [{"event": "ADD"}]})
    body = {"messages": "I like ramen", "user_id": "u1"}
    _post(mem0, "/v3/memories/add/", body | {"custom_instructions": "Only food preferences."})
    system = fake_openai.chat_requests()[0]["body"]["messages"][0]["content"]
    assert system.startswith(FACT_EXTRACTION_TASK)
    assert system.index("Only food preferences.") < system.index(DATA_RULE)


def test_errors_carry_the_detail_mem0_clients_read(mem0, anonymous) -> None:
    unauthenticated = anonymous.get("/v1/ping/")
    assert unauthenticated.status_code == 401 and unauthenticated.json()["detail"]
    bad = mem0.post("/v3/memories/search/", {"query": "x", "top_k": 0}, format="json")
    assert bad.status_code == 400 and "top_k" in bad.json()["detail"]
    assert mem0.delete("/v2/entities/planet/mars/").json()["error"]["fields"] == {
        "type": ["one of user, agent, run, app"]
    }


def test_another_projects_key_is_refused_every_object_of_alice(mem0, bob) -> None:
    event = _post(
        mem0, "/v3/memories/add/", {"messages": "Alice only", "user_id": "u1", "infer": False}
    )["results"][0]
    export = _post(mem0, "/v1/exports/", {"schema": {}, "user_id": "u1"}, status=201)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {bob.key}")
    path = f"/v1/memories/{event['id']}/"
    assert other.get(path).status_code == 404
    assert other.get(f"{path}history/").status_code == 404
    assert other.put(path, {"text": "mine"}, format="json").status_code == 404
    assert other.delete(path).status_code == 404
    feedback = {"memory_id": event["id"], "feedback": "POSITIVE"}
    assert other.post("/v1/feedback/", feedback, format="json").status_code == 404
    export_get = {"memory_export_id": export["id"]}
    assert other.post("/v1/exports/get/", export_get, format="json").status_code == 404
    assert other.delete("/v2/entities/user/u1/").status_code == 404
    assert _post(other, "/v3/memories/", {})["count"] == 0
    assert _post(other, "/v3/memories/search/", {"query": "Alice only"})["results"] == []
    assert other.get("/v1/entities/").json()["results"] == []
    assert other.delete("/v1/memories/?user_id=u1").json()["deleted"] == 0
    assert mem0.get(path).json()["memory"] == "Alice only"
