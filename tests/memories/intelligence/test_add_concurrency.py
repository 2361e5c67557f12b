"""POST /memories/add/ asks the model without holding the scope's lock, then re-checks its
decisions under the lock (a fake OpenAI server that takes its time answering)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memories.models import Memory
from tests.conftest import Tenant, make_tenant
from tests.fakes.openai_server import FakeOpenAI, hang

THINKING = 4.0  # seconds the fake model takes to decide


@pytest.fixture
def slow_llm(fake_openai: FakeOpenAI, settings) -> FakeOpenAI:
    settings.MEMORY_LLM_TIMEOUT = 30.0
    settings.MEMORY_GRAPH_EXTRACTION = "off"  # only the add pipeline talks to the model:
    settings.MEMORY_UTILITY_SCORING = False  # neither the graph nor the utility job
    return fake_openai


class AddInBackground:
    """POST /memories/add/ in a thread; `wait_for_decision` returns once the model has the
    decision request (the pipeline is waiting for its answer)."""

    def __init__(self, tenant: Tenant, fake: FakeOpenAI, body: dict[str, Any]) -> None:
        self.fake, self.done = fake, threading.Event()
        self.response: Any = None
        self.thread = threading.Thread(target=self._run, args=(tenant, body))

    def _run(self, tenant: Tenant, body: dict[str, Any]) -> None:
        try:
            self.response = tenant.post("/api/v1/memories/add/", body)
        finally:
            self.done.set()
            connection.close()

    def start(self) -> AddInBackground:
        self.thread.start()
        return self

    def wait_for_decision(self) -> None:
        deadline = time.monotonic() + 30
        while len(self.fake.chat_requests()) < 2:
            assert time.monotonic() < deadline, "the decision request never came"
            time.sleep(0.02)

    def events(self) -> list[dict[str, Any]]:
        self.thread.join(60)
        assert self.response is not None and self.response.status_code == 200
        return self.response.json()["results"]


def _script(fake: FakeOpenAI, fact: str, decisions: list[dict[str, Any]]) -> None:
    fake.reply({"facts": [fact]}, hang(THINKING), {"memory": decisions})


@pytest.mark.django_db(transaction=True)
def test_a_writer_of_the_same_scope_is_not_blocked_while_the_model_decides(slow_llm):
    alice = make_tenant("alice")
    alice.post("/api/v1/memories/", {"content": "Warm up the embedder", "user_id": "u9"})
    _script(slow_llm, "User's name is Bob", [{"event": "ADD"}])
    add = AddInBackground(alice, slow_llm, {"messages": "My name is Bob", "user_id": "u1"})
    add.start().wait_for_decision()

    response = alice.post("/api/v1/memories/", {"content": "User likes tea", "user_id": "u1"})

    assert response.status_code == 201
    assert not add.done.is_set()  # the store went through while the model was still thinking
    assert [(e["event"], e["memory"]) for e in add.events()] == [("ADD", "User's name is Bob")]


def _delete(alice: Tenant, memory_id: str) -> None:
    assert alice.delete(f"/api/v1/memories/{memory_id}/").status_code == 204


def _edit(alice: Tenant, memory_id: str) -> None:
    body = {"content": "User lives in NYC on weekdays"}
    assert alice.patch(f"/api/v1/memories/{memory_id}/", body).status_code == 200


MEANWHILE: dict[str, Callable[[Tenant, str], None]] = {"deleted": _delete, "edited": _edit}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("meanwhile", ["deleted", "edited"])
def test_an_update_of_a_memory_deleted_or_edited_meanwhile_becomes_an_add(slow_llm, meanwhile):
    alice = make_tenant("alice")
    target = alice.post("/api/v1/memories/", {"content": "User lives in NYC", "user_id": "u1"})
    target_id = target.json()["id"]
    _script(
        slow_llm,
        "User lives in Boston",
        [{"event": "UPDATE", "id": "0", "data": "User lives in Boston"}],
    )
    add = AddInBackground(alice, slow_llm, {"messages": "I live in Boston", "user_id": "u1"})
    add.start().wait_for_decision()

    MEANWHILE[meanwhile](alice, target_id)

    [event] = add.events()
    assert (event["event"], event["memory"]) == ("ADD", "User lives in Boston")
    assert event["id"] != target_id
    target_now = Memory.objects.get(pk=target_id)
    assert target_now.version == (2 if meanwhile == "edited" else 1)  # untouched by the add
    assert (target_now.deleted_at is None) == (meanwhile == "edited")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("meanwhile", ["deleted", "edited"])
def test_a_delete_of_a_memory_deleted_or_edited_meanwhile_becomes_none(slow_llm, meanwhile):
    alice = make_tenant("alice")
    target = alice.post("/api/v1/memories/", {"content": "User lives in NYC", "user_id": "u1"})
    target_id = target.json()["id"]
    _script(
        slow_llm,
        "User moved away from NYC",
        [{"event": "DELETE", "id": "0"}, {"event": "ADD", "data": "User moved away from NYC"}],
    )
    body = {"messages": "I moved away from NYC", "user_id": "u1"}
    add = AddInBackground(alice, slow_llm, body)
    add.start().wait_for_decision()

    MEANWHILE[meanwhile](alice, target_id)

    events = add.events()
    assert [e["event"] for e in events] == ["NONE", "ADD"]
    assert events[0]["id"] == target_id
    target_now = Memory.objects.get(pk=target_id)
    if meanwhile == "edited":  # the edited text was never shown to the model: it stays
        assert target_now.deleted_at is None
        assert target_now.content == "User lives in NYC on weekdays"


def test_decisions_of_one_call_see_the_changes_the_call_made_itself(add, fake_openai, remember):
    existing = remember("User lives in NYC", user_id="u1")["id"]
    fake_openai.reply(
        {"facts": ["User lives in Boston", "User lives in Boston near the harbour"]},
        {"memory": [{"event": "UPDATE", "id": "0", "data": "User lives in Boston"}]},
        {"memory": [{"event": "UPDATE", "id": "0", "data": "User lives in Boston by the sea"}]},
    )
    events = add("I live in Boston, near the harbour")
    assert [(e["event"], e["id"]) for e in events] == [("UPDATE", existing), ("UPDATE", existing)]
    assert Memory.objects.get(pk=existing).content == "User lives in Boston by the sea"


@pytest.mark.django_db(transaction=True)
def test_a_none_about_a_memory_deleted_meanwhile_adds_the_fact(slow_llm):
    alice = make_tenant("alice")
    target = alice.post("/api/v1/memories/", {"content": "User likes tea", "user_id": "u1"})
    target_id = target.json()["id"]
    _script(slow_llm, "User likes tea", [{"event": "NONE", "id": "0"}])
    add = AddInBackground(alice, slow_llm, {"messages": "I like tea", "user_id": "u1"})
    add.start().wait_for_decision()

    _delete(alice, target_id)

    [event] = add.events()
    assert (event["event"], event["memory"]) == ("ADD", "User likes tea")
    assert event["id"] != target_id
