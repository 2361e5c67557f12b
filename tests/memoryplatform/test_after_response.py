"""Work a request leaves for after its answer (platformcore/lib/after_response.py): queued
while the request runs, done when the server closes the sent response, in the request's
project scope; anywhere else, done at once."""

from __future__ import annotations

import logging

import pytest
from django.http import HttpResponse

from entities.models import EntityMemory
from platformcore.lib.after_response import (
    AfterResponseMiddleware,
    after_response,
    collecting,
)
from platformcore.lib.project_scope import current_scope, project_scope
from tests.conftest import make_tenant


def test_outside_a_request_the_work_runs_at_once() -> None:
    done = []
    assert not collecting()
    after_response(lambda: done.append(1))
    assert done == [1]


def test_queued_work_runs_when_the_response_closes_in_order_and_in_its_scope(caplog) -> None:
    done: list[object] = []

    def view(request: object) -> HttpResponse:
        assert collecting()
        with project_scope(7):
            after_response(lambda: done.append(("scope", current_scope())))
        after_response(lambda: after_response(lambda: done.append("queued by the work")))
        after_response(lambda: 1 / 0)
        after_response(lambda: done.append("after a failure"))
        return HttpResponse("answer")

    response = AfterResponseMiddleware(view)(object())
    assert done == [] and not collecting()  # the answer is ready, the work is not done
    with caplog.at_level(logging.ERROR, logger="platformcore.lib.after_response"):
        response.close()
    assert done == [("scope", 7), "after a failure", "queued by the work"]
    assert "work after the response failed" in caplog.text


def test_a_view_that_raises_still_gets_its_work_done() -> None:
    done = []

    def view(request: object) -> HttpResponse:
        after_response(lambda: done.append(1))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        AfterResponseMiddleware(view)(object())
    assert done == [1] and not collecting()


@pytest.mark.django_db
def test_a_store_through_the_api_has_its_graph_once_the_client_has_the_answer(client) -> None:
    """Django's test client closes the response before it returns, as a server does once the
    answer is sent: the graph extracted after the answer is there for the next request."""
    alice = make_tenant("alice")
    response = client.post(
        "/api/v1/memories/",
        {"content": "Marie Curie works at the Sorbonne in Paris", "user_id": "u1"},
        content_type="application/json",
        headers={"authorization": f"Bearer {alice.key}"},
    )
    assert response.status_code == 201
    with project_scope(alice.project.pk):
        names = set(
            EntityMemory.objects.filter(memory_id=response.json()["id"]).values_list(
                "entity__name", flat=True
            )
        )
    assert {"Marie Curie", "Sorbonne"} <= names
