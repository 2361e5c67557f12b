"""The per-project budget of expensive requests: one project's heavy requests queue behind
each other (in the event loop, holding no request thread), past the queue or the wait they get
429 with Retry-After, and another project's requests are not held up."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.db import connections

from platformcore.lib.work_budget import ProjectBusy, WorkBudget, credentials
from tests.conftest import make_tenant
from tests.memoryplatform.test_asgi_http import _headers

pytestmark = pytest.mark.anyio


async def test_a_lane_runs_its_slots_queues_a_few_and_refuses_the_rest() -> None:
    budget = WorkBudget(slots=1, queue=1, wait=0.2)
    order: list[str] = []

    async def heavy(lane: str, name: str, hold: float) -> str:
        try:
            async with budget.slot(lane):
                order.append(name)
                await asyncio.sleep(hold)
            return "ran"
        except ProjectBusy as busy:
            return "waited" if busy.waited else "refused"

    first = asyncio.create_task(heavy("project:1", "first", 0.5))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(heavy("project:1", "second", 0))
    await asyncio.sleep(0.01)
    third = await heavy("project:1", "third", 0)  # the queue of one is taken
    other = await heavy("project:2", "other", 0)  # another project: its own lane
    assert (third, other) == ("refused", "ran")
    assert await second == "waited"  # 0.2 s passed while the first still ran
    assert await first == "ran"
    assert order == ["first", "other"]
    assert await heavy("project:1", "later", 0) == "ran"  # the lane is free again


@pytest.mark.django_db(transaction=True)
async def test_a_busy_project_gets_429_on_a_heavy_route_while_another_project_writes() -> None:
    from memoryplatform.asgi import application, django_and_channels

    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    handler = django_and_channels.application_mapping["http"]
    body = json.dumps({"messages": "I like green tea.", "user_id": "u1"}).encode()

    async def add(key: str) -> dict:
        return await HttpCommunicator(
            application, "POST", "/api/v1/memories/add/", body=body, headers=_headers(key, body)
        ).get_response(timeout=30)

    try:
        assert (await add(alice.key))["status"] == 200  # authenticated: lane known
        lane = credentials.lane_of(alice.key)
        assert lane.startswith("project:")
        handler._budget.wait = 0.3
        async with handler._budget.slot(lane):  # alice's budget is taken
            refused = await add(alice.key)
            served = await add(bob.key)
        headers = dict(refused["headers"])
        assert refused["status"] == 429 and int(headers[b"Retry-After"]) > 0
        assert json.loads(refused["body"])["error"]["code"] == "project_busy"
        assert served["status"] == 200
    finally:
        handler._budget.wait = 10.0
        await sync_to_async(connections.close_all)()
