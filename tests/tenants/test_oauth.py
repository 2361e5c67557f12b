"""OAuth 2.1 for MCP clients: metadata, registration, consent with an API key, PKCE, tokens
bound to the key's project and scopes, revocation and expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from platformcore.db.rls import tenant_tables
from tenants.services import api_key_revoke
from tests.conftest import make_tenant
from tests.tenants.oauth_helpers import (
    REDIRECT_URI,
    Pkce,
    authorize_url,
    consent,
    exchange,
    redirect_params,
    refresh,
    register,
    token_for,
)

pytestmark = pytest.mark.django_db

ORIGIN = "http://testserver"


@pytest.fixture
def web() -> Client:
    return Client()


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_authorization_server_metadata_offers_only_code_with_s256_and_refresh(web):
    metadata = web.get("/.well-known/oauth-authorization-server").json()
    assert metadata["issuer"] == ORIGIN
    assert metadata["authorization_endpoint"] == f"{ORIGIN}/oauth/authorize"
    assert metadata["token_endpoint"] == f"{ORIGIN}/oauth/token"
    assert metadata["registration_endpoint"] == f"{ORIGIN}/oauth/register"
    assert metadata["revocation_endpoint"] == f"{ORIGIN}/oauth/revoke"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert metadata["scopes_supported"] == ["admin", "read", "write"]


def test_protected_resource_metadata_exists_for_the_origin_and_each_mcp_endpoint(web):
    root = web.get("/.well-known/oauth-protected-resource").json()
    assert root["resource"] == ORIGIN
    assert root["authorization_servers"] == [ORIGIN]
    for path in ("mcp", "sse"):
        document = web.get(f"/.well-known/oauth-protected-resource/{path}").json()
        assert document["resource"] == f"{ORIGIN}/{path}"
        assert document["authorization_servers"] == [ORIGIN]
        assert document["bearer_methods_supported"] == ["header"]
    assert web.get("/.well-known/oauth-protected-resource/elsewhere").status_code == 404


def test_a_client_registers_itself_as_a_public_client(web):
    response = register(web)
    assert response.status_code == 201
    body = response.json()
    assert body["client_id"] and "client_secret" not in body
    assert body["token_endpoint_auth_method"] == "none"
    assert body["redirect_uris"] == [REDIRECT_URI]


@pytest.mark.parametrize(
    "metadata",
    [
        {"grant_types": ["implicit"]},
        {"grant_types": ["password"]},
        {"grant_types": ["client_credentials"]},
        {"response_types": ["token"]},
        {"redirect_uris": ["http://example.com/callback"]},
        {"redirect_uris": []},
    ],
)
def test_registration_refuses_what_oauth_2_1_leaves_out(web, metadata):
    response = register(web, **metadata)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_a_token_from_a_consent_reads_the_keys_project_only(web, alice, bob):
    mine = alice.post("/api/v1/memories/", {"content": "alice's note", "user_id": "u1"}).json()
    theirs = bob.post("/api/v1/memories/", {"content": "bob's note", "user_id": "u1"}).json()
    tokens = token_for(web, alice.key)
    assert tokens["token_type"] == "Bearer" and tokens["refresh_token"]
    assert set(tokens["scope"].split()) == {"read", "write"}

    listed = web.get("/api/v1/memories/", **bearer(tokens["access_token"]))
    assert listed.status_code == 200
    assert [memory["id"] for memory in listed.json()["results"]] == [mine["id"]]
    other = web.get(f"/api/v1/memories/{theirs['id']}/", **bearer(tokens["access_token"]))
    assert other.status_code == 404


def test_a_token_gets_no_more_scopes_than_the_key_that_authorized_it(web):
    reader = make_tenant("reader", scopes=["read"])
    tokens = token_for(web, reader.key, scope="read write admin")
    assert tokens["scope"] == "read"
    refused = web.post(
        "/api/v1/memories/",
        {"content": "x"},
        content_type="application/json",
        **bearer(tokens["access_token"]),
    )
    assert refused.status_code == 403


def test_the_person_may_grant_fewer_scopes_than_asked(web, alice):
    client_id = register(web).json()["client_id"]
    pkce = Pkce.new()
    url = authorize_url(client_id, pkce, scope="read write")
    code = redirect_params(consent(web, url, alice.key, granted=["read"]))["code"]
    assert exchange(web, client_id, code, pkce.verifier).json()["scope"] == "read"


def test_the_consent_redirect_names_the_issuer_and_echoes_the_state(web, alice):
    client_id = register(web).json()["client_id"]
    params = redirect_params(consent(web, authorize_url(client_id, Pkce.new()), alice.key))
    assert params["state"] == "s-1"
    assert params["iss"] == ORIGIN


def test_a_wrong_key_keeps_the_person_on_the_consent_page(web):
    client_id = register(web).json()["client_id"]
    response = consent(web, authorize_url(client_id, Pkce.new()), "mp_deadbeef_not-a-key")
    assert response.status_code == 400
    assert "Not a usable API key" in response.content.decode()


def test_denying_sends_access_denied_back_to_the_client(web, alice):
    client_id = register(web).json()["client_id"]
    params = redirect_params(consent(web, authorize_url(client_id, Pkce.new()), "", allow=False))
    assert params["error"] == "access_denied"
    assert params["state"] == "s-1"


def test_a_consent_posted_with_a_foreign_redirect_uri_is_not_followed(web, alice):
    client_id = register(web).json()["client_id"]
    response = consent(
        web, authorize_url(client_id, Pkce.new()), alice.key, redirect_uri="https://evil.example/"
    )
    assert response.status_code == 400
    assert "Location" not in response


def test_an_authorization_request_without_pkce_is_refused(web):
    client_id = register(web).json()["client_id"]
    params = redirect_params(web.get(authorize_url(client_id, None)))
    assert params["error"] == "invalid_request"


def test_a_plain_pkce_challenge_is_refused(web):
    client_id = register(web).json()["client_id"]
    url = authorize_url(client_id, None, code_challenge="x" * 43, code_challenge_method="plain")
    params = redirect_params(web.get(url))
    assert params["error"] == "invalid_request"


def test_an_unknown_client_is_told_on_the_page_not_redirected(web):
    response = web.get(authorize_url("nobody", Pkce.new()))
    assert response.status_code in (400, 401)
    assert "Authorization failed" in response.content.decode()


@pytest.mark.parametrize("verifier", [None, "wrong-verifier-" + "x" * 40])
def test_a_code_is_exchanged_only_with_its_pkce_verifier(web, alice, verifier):
    client_id = register(web).json()["client_id"]
    pkce = Pkce.new()
    code = redirect_params(consent(web, authorize_url(client_id, pkce), alice.key))["code"]
    response = exchange(web, client_id, code, verifier)
    assert response.status_code == 400
    assert response.json()["error"] in ("invalid_request", "invalid_grant")


def test_a_code_is_used_once(web, alice):
    client_id = register(web).json()["client_id"]
    pkce = Pkce.new()
    code = redirect_params(consent(web, authorize_url(client_id, pkce), alice.key))["code"]
    assert exchange(web, client_id, code, pkce.verifier).status_code == 200
    assert exchange(web, client_id, code, pkce.verifier).status_code == 400


@pytest.mark.parametrize(
    "grant", ["password", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code", ""]
)
def test_a_grant_the_server_does_not_offer_gets_one_answer_before_any_password_check(
    web, grant, django_user_model, monkeypatch
):
    from django.contrib.auth import hashers

    staff = django_user_model.objects.create_user("staff", password="right-password")
    client_id = register(web).json()["client_id"]
    checked = []
    monkeypatch.setattr(hashers, "check_password", lambda *a, **k: checked.append(1))
    answers = []
    for username, password in [(staff.username, "right-password"), ("staff", "wrong"), ("x", "y")]:
        data = {"grant_type": grant, "username": username, "password": password}
        response = web.post("/oauth/token", {**data, "client_id": client_id})
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1] == answers[2]  # no oracle for a staff password
    assert answers[0][0] == 400 and answers[0][1]["error"] == "unsupported_grant_type"
    assert checked == []  # refused before any password was hashed


def test_a_refresh_token_rotates_and_its_replay_is_refused(web, alice):
    tokens = token_for(web, alice.key)
    renewed = refresh(web, tokens["client_id"], tokens["refresh_token"])
    assert renewed.status_code == 200
    fresh = renewed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert web.get("/api/v1/memories/", **bearer(fresh["access_token"])).status_code == 200
    assert refresh(web, tokens["client_id"], tokens["refresh_token"]).status_code == 400


def test_revoking_the_key_ends_its_tokens_and_their_refresh(web, alice):
    tokens = token_for(web, alice.key)
    api_key_revoke(prefix=alice.key)
    response = web.get("/api/v1/memories/", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert refresh(web, tokens["client_id"], tokens["refresh_token"]).status_code == 400


def test_a_revoked_token_is_refused(web, alice):
    tokens = token_for(web, alice.key)
    data = {"token": tokens["access_token"], "client_id": tokens["client_id"]}
    assert web.post("/oauth/revoke", data).status_code == 200
    assert web.get("/api/v1/memories/", **bearer(tokens["access_token"])).status_code == 401


def test_an_expired_token_is_refused(web, alice):
    tokens = token_for(web, alice.key)
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    response = web.get("/api/v1/memories/", **bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert "resource_metadata=" in response["WWW-Authenticate"]


def test_the_daily_job_deletes_expired_tokens_and_keeps_live_ones(web, alice):
    from django_q.tasks import async_task

    from memories.tasks import SCHEDULES

    live = token_for(web, alice.key)
    token_for(web, alice.key)
    gone = AccessToken.objects.order_by("-id").first()
    gone.expires = timezone.now() - timedelta(days=60)
    gone.save()
    gone.refresh_token.delete()
    task, _ = SCHEDULES["oauth-token-cleanup"]
    async_task(task)  # jobs run inline in tests
    assert not AccessToken.objects.filter(pk=gone.pk).exists()
    assert web.get("/api/v1/memories/", **bearer(live["access_token"])).status_code == 200


def test_a_token_meant_for_the_mcp_endpoint_is_refused_by_the_rest_api(web, alice):
    tokens = token_for(web, alice.key, resource=f"{ORIGIN}/mcp")
    assert web.get("/api/v1/memories/", **bearer(tokens["access_token"])).status_code == 401
    everywhere = token_for(web, alice.key, resource=ORIGIN)
    assert web.get("/api/v1/memories/", **bearer(everywhere["access_token"])).status_code == 200


def test_the_registration_token_is_no_api_credential(web):
    registration = register(web).json()["registration_access_token"]
    assert web.get("/api/v1/memories/", **bearer(registration)).status_code == 401


def test_api_keys_keep_working_beside_tokens(web, alice):
    token_for(web, alice.key)
    assert alice.get("/api/v1/memories/").status_code == 200


def test_the_oauth_tables_are_outside_row_level_security_and_open_to_the_app_role():
    with connection.cursor() as cursor:
        tenant = {row[0] for row in tenant_tables(cursor)}
        role = connection.settings_dict.get("APP_ROLE")
        tables = ["oauth2_provider_application", "oauth2_provider_grant"]
        tables += ["oauth2_provider_accesstoken", "oauth2_provider_refreshtoken"]
        tables += ["tenants_oauth_keyholder", "auth_user"]
        for table in tables:
            assert table not in tenant
            if role:
                cursor.execute(
                    "SELECT has_table_privilege(%s, %s, 'SELECT, INSERT, UPDATE, DELETE')",
                    [role, table],
                )
                assert cursor.fetchone()[0], table
