"""Fixtures for memory intelligence tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Tenant


@pytest.fixture
def add(alice: Tenant):
    """POST /memories/add/ for alice (user u1 unless given) and return the events."""

    def _add(messages: Any, **fields: Any) -> list[dict[str, Any]]:
        fields.setdefault("user_id", "u1")
        response = alice.post("/api/v1/memories/add/", {"messages": messages, **fields})
        assert response.status_code == 200, response.json()
        return response.json()["results"]

    return _add
