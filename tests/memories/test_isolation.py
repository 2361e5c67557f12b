"""Charlie can never see, change or delete alice's memories: 404 or empty, never data."""

from __future__ import annotations

import pytest

from memories.models import Memory
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


@pytest.fixture
def alices(alice: Tenant, remember) -> dict:
    first = remember("Alice's secret plan", tags=["secret"])
    second = remember("Alice's other note")
    alice.post(f"{URL}{first['id']}/links/", {"to_id": second["id"]})
    return first


def test_list_is_empty_for_another_project(charlie: Tenant, alices: dict) -> None:
    body = charlie.get(URL, {"user_id": "u1"}).json()
    assert body["count"] == 0 and body["results"] == []


@pytest.mark.parametrize("suffix", ["", "history/", "links/"])
def test_reads_of_another_projects_memory_are_404(
    charlie: Tenant, alices: dict, suffix: str
) -> None:
    assert charlie.get(f"{URL}{alices['id']}/{suffix}").status_code == 404


def test_writes_to_another_projects_memory_are_404(charlie: Tenant, alices: dict) -> None:
    url = f"{URL}{alices['id']}/"
    assert charlie.patch(url, {"content": "hijacked"}).status_code == 404
    assert charlie.put(url, {"content": "hijacked"}).status_code == 404
    assert charlie.delete(url).status_code == 404
    assert charlie.post(f"{url}restore/").status_code == 404
    assert Memory.objects.get(pk=alices["id"]).content == "Alice's secret plan"


def test_linking_to_another_projects_memory_is_404(charlie: Tenant, alices: dict) -> None:
    mine = charlie.post(URL, {"content": "charlie's", "user_id": "u1"}).json()
    response = charlie.post(f"{URL}{mine['id']}/links/", {"to_id": alices["id"]})
    assert response.status_code == 404
    assert charlie.post(f"{URL}{alices['id']}/links/", {"to_id": mine["id"]}).status_code == 404


def test_deleting_another_projects_link_is_404(
    alice: Tenant, charlie: Tenant, alices: dict
) -> None:
    link = alice.get(f"{URL}{alices['id']}/links/").json()[0]
    assert charlie.delete(f"{URL}{alices['id']}/links/{link['id']}/").status_code == 404
    assert len(alice.get(f"{URL}{alices['id']}/links/").json()) == 1


def test_bulk_delete_and_reset_never_touch_another_project(charlie: Tenant, alices: dict) -> None:
    assert charlie.delete(f"{URL}?user_id=u1").json()["deleted"] == 0
    assert charlie.post("/api/v1/reset/").status_code == 200
    assert Memory.objects.alive().count() == 2


def test_same_content_in_two_projects_is_two_memories(charlie: Tenant, alices: dict) -> None:
    response = charlie.post(URL, {"content": "Alice's secret plan", "user_id": "u1"})
    assert response.status_code == 201
    assert response.json()["id"] != alices["id"]
