"""Every route falls in exactly one rate-limit class (MEMORY_RATE_LIMIT_ROUTES, or a key's
limits by the scope it needs), requests without a key are limited per client address, and a
route that is not classified fails this test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import ResolverMatch
from rest_framework.views import APIView

from tenants.models import RATE_SCOPES
from tenants.permissions import HasApiKeyScope
from tenants.throttling import ApiKeyRateThrottle, route_rate_class
from tests.conftest import Tenant

NOT_KEYED = {"address", "streams", "none"}


def _routes(patterns: list[Any], prefix: str = "", namespace: str = "") -> Iterator[Any]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(n for n in (namespace, entry.namespace or "") if n)
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), namespace, entry


def _keyed_api_view(callback: Any) -> bool:
    """A DRF view that takes an API key and counts against the key's limits."""
    view = getattr(callback, "cls", None)
    return (
        view is not None
        and issubclass(view, APIView)
        and HasApiKeyScope in view.permission_classes
        and ApiKeyRateThrottle in view.throttle_classes
    )


def test_every_route_is_in_exactly_one_rate_limit_class() -> None:
    unclassified, doubled = [], []
    for route, namespace, pattern in _routes(get_resolver().url_patterns):
        match = ResolverMatch(
            pattern.callback, (), {}, url_name=pattern.name, namespaces=namespace.split(":")
            if namespace else [], route=route,
        )  # fmt: skip
        named = route_rate_class(match)
        keyed = _keyed_api_view(pattern.callback)
        if named is None and not keyed:
            unclassified.append(route)
        elif named in NOT_KEYED and keyed:
            doubled.append(route)  # a keyed view counted per address too
        elif named is not None:
            assert named in (*RATE_SCOPES, *NOT_KEYED), (route, named)
    assert unclassified == [], "classify these routes in MEMORY_RATE_LIMIT_ROUTES"
    assert doubled == []


def test_requests_without_a_key_are_limited_per_client_address(db: None, client: Any) -> None:
    limits = {**settings.MEMORY_RATE_LIMITS, "address": "3/day"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings, "MEMORY_RATE_LIMITS", limits)
        answers = [
            client.post("/oauth/token", {"grant_type": "password"}, REMOTE_ADDR="203.0.113.7")
            for _ in range(4)
        ]
        other = client.post("/oauth/token", {"grant_type": "password"}, REMOTE_ADDR="203.0.113.8")
        schema = client.get("/api/schema/", REMOTE_ADDR="203.0.113.7")
        probe = client.get("/health/live", REMOTE_ADDR="203.0.113.7")
    assert [a.status_code for a in answers] == [400, 400, 400, 429]
    assert int(answers[-1]["Retry-After"]) > 0
    assert answers[-1].json()["error"]["code"] == "throttled"
    assert other.status_code == 400  # another address has its own budget
    assert schema.status_code == 429  # one budget per address, whatever the route
    assert probe.status_code == 200  # probes are never counted


def test_mem0_search_counts_against_the_search_limit(alice: Tenant) -> None:
    alice.project.limits = {"search": "1/day", "read": "none"}  # no window ends mid-test
    alice.project.save(update_fields=["limits"])
    first = alice.post("/v3/memories/search/", {"query": "x", "filters": {"user_id": "u"}})
    second = alice.post("/api/v1/memories/search/", {"query": "x"})
    assert first.status_code == 200, first.content
    assert second.status_code == 429


def test_a_read_key_may_ask_for_session_context(alice: Tenant) -> None:
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    response = reader.post("/api/v1/session/context/", {"user_id": "u1"})
    assert response.status_code == 200, response.content
