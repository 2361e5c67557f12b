from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tenants.models import ApiKey
from tenants.services import api_key_create, api_key_revoke, api_key_verify
from tests.conftest import Tenant, make_tenant

pytestmark = pytest.mark.django_db


def test_keys_are_stored_only_as_hashes(alice: Tenant) -> None:
    key = ApiKey.objects.get(project=alice.project)
    assert alice.key not in (key.key_hash, key.prefix)
    assert alice.key.startswith(f"mp_{key.prefix}_")


def test_missing_key_is_401_with_json_error(anonymous) -> None:
    response = anonymous.get("/api/v1/memories/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_invalid_key_is_401(anonymous, alice: Tenant) -> None:
    anonymous.credentials(HTTP_AUTHORIZATION=alice.key[:-2] + "xx")
    assert anonymous.get("/api/v1/memories/").status_code == 401


def test_x_api_key_header_authenticates(anonymous, alice: Tenant) -> None:
    anonymous.credentials(HTTP_X_API_KEY=alice.key)
    assert anonymous.get("/api/v1/memories/").status_code == 200


def test_revoked_key_is_401(alice: Tenant) -> None:
    api_key_revoke(prefix=ApiKey.objects.get(project=alice.project).prefix)
    assert alice.get("/api/v1/memories/").status_code == 401


def test_expired_key_is_401(alice: Tenant) -> None:
    ApiKey.objects.filter(project=alice.project).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert alice.get("/api/v1/memories/").status_code == 401


def test_read_only_key_cannot_write(db: None) -> None:
    reader = make_tenant("reader", scopes=["read"])
    assert reader.get("/api/v1/memories/").status_code == 200
    response = reader.post("/api/v1/memories/", {"content": "x", "user_id": "u"})
    assert response.status_code == 403
    assert "write" in response.json()["error"]["message"]


def test_reset_needs_admin_scope(db: None) -> None:
    writer = make_tenant("writer", scopes=["read", "write"])
    assert writer.post("/api/v1/reset/").status_code == 403


def test_admin_scope_implies_read_and_write(db: None) -> None:
    admin = make_tenant("admin-only", scopes=["admin"])
    assert admin.post("/api/v1/memories/", {"content": "x", "user_id": "u"}).status_code == 201


def test_verify_touches_last_used(alice: Tenant) -> None:
    assert api_key_verify(alice.key) is not None
    assert ApiKey.objects.get(project=alice.project).last_used_at is not None


def test_unknown_scope_is_rejected(alice: Tenant) -> None:
    from platformcore.lib.errors import InvalidInput

    with pytest.raises(InvalidInput):
        api_key_create(project=alice.project, scopes=["read", "root"])
