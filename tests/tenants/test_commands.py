from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tenants.models import ApiKey, Project

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_operator_creates_project_and_key_then_uses_it() -> None:
    run("create_project", "acme", "--name", "Acme Corp")
    key = (
        run("create_api_key", "--project", "acme", "--scopes", "read,write")
        .strip()
        .splitlines()[-1]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.post("/api/v1/memories/", {"content": "hello", "user_id": "u"}, format="json")
    assert response.status_code == 201
    assert Project.objects.get(slug="acme").name == "Acme Corp"


def test_create_project_twice_fails() -> None:
    run("create_project", "acme")
    with pytest.raises(CommandError, match="already exists"):
        run("create_project", "acme")


def test_create_key_for_unknown_project_fails() -> None:
    with pytest.raises(CommandError, match="no project"):
        run("create_api_key", "--project", "nope")


def test_bad_scopes_fail() -> None:
    run("create_project", "acme")
    with pytest.raises(CommandError, match="scopes"):
        run("create_api_key", "--project", "acme", "--scopes", "read,superuser")


def test_list_and_revoke_keys() -> None:
    run("create_project", "acme")
    run("create_api_key", "--project", "acme", "--name", "ci")
    prefix = ApiKey.objects.get().prefix
    listing = run("list_api_keys")
    assert prefix in listing and "active" in listing
    run("revoke_api_key", prefix)
    assert "revoked" in run("list_api_keys", "--project", "acme")


def test_revoke_unknown_key_fails() -> None:
    with pytest.raises(CommandError):
        run("revoke_api_key", "deadbeef")
