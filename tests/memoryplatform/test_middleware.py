"""The adapted stock middleware: the same headers and admin behaviour, in both handler modes;
API paths skip the browser-only middleware (no session, no CSRF cookie)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from tests.conftest import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _api_checks(response) -> None:
    assert response.status_code == 200
    assert response.headers["X-Content-Type-Options"] == "nosniff"  # security middleware
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "sessionid" not in response.cookies and "csrftoken" not in response.cookies


def _admin_checks(response) -> None:
    assert response.status_code == 200 and b"csrfmiddlewaretoken" in response.content
    assert "csrftoken" in response.cookies
    assert response.headers["X-Frame-Options"] == "DENY"


def test_sync_handler_keeps_headers_and_the_admin_login() -> None:
    key = make_tenant("alice").key
    client = Client()
    _api_checks(client.get("/api/v1/memories/", headers={"Authorization": f"Bearer {key}"}))
    _admin_checks(client.get("/admin/login/"))


def test_async_handler_keeps_headers_and_the_admin_login() -> None:
    key = make_tenant("alice").key

    async def requests() -> None:
        client = AsyncClient(enforce_csrf_checks=True)
        headers = {"Authorization": f"Bearer {key}"}
        _api_checks(await client.get("/api/v1/memories/", headers=headers))
        _admin_checks(await client.get("/admin/login/"))
        post = await client.post("/admin/login/", {"username": "x", "password": "y"})
        assert post.status_code == 403  # no CSRF token: the admin is still protected

    async_to_sync(requests)()
