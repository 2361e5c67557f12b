"""Fuzzing the REST API from its own OpenAPI schema (schemathesis).

Every operation that `/api/schema/` documents gets generated requests, valid and invalid, sent
in-process to the WSGI application against the real test database. Each response must be no
5xx, have a documented status and content type, and a body that conforms to the documented
schema. One run uses an admin key (so every operation is reachable, on seeded resources as
well as on made-up ids), one an unknown key (everything must be a documented 401).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from memories.models import ContradictionReview, Memory
from memories.services.contradictions import Verdict, contradiction_record
from tests.conftest import Tenant, make_tenant

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Bounded: a few generated examples per operation, no deadline (a busy 2-core machine), the same
# examples on every run; a failure still shrinks to a small reproducing request.
# tests/fuzz/test_hostile_classes.py sends the known hostile shapes (deep JSON, NULs, huge
# numbers) to every operation besides.
FUZZ = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)


# Schemathesis's coverage phase derives ~7,500 boundary cases from the schema (each missing
# field, wrong type, edge value), 95 % of the requests. The suite sends a fixed quarter of them,
# chosen by a hash of the request so the same ones go every run; `MEMORY_FUZZ_FULL=1` sends all.
COVERAGE_SHARE = 1 if os.environ.get("MEMORY_FUZZ_FULL") == "1" else 4


def _sent(case: Any, share: int = COVERAGE_SHARE) -> bool:
    """Whether this case goes out: every fuzzing case, and one coverage case in `share`."""
    if share == 1 or case.meta is None or case.meta.phase.name != "coverage":
        return True
    key = repr((case.method, case.path, case.path_parameters, case.query, case.body))
    return int(hashlib.blake2b(key.encode(), digest_size=4).hexdigest(), 16) % share == 0


@pytest.fixture
def api_schema(transactional_db: None) -> Any:
    from memoryplatform.wsgi import application

    return schemathesis.openapi.from_wsgi("/api/schema/", application)


schema = schemathesis.pytest.from_fixture("api_schema")


def _seed(tenant: Tenant) -> dict[str, str]:
    """One of each resource, so generated requests also reach existing objects."""
    memory = tenant.post("/api/v1/memories/", {"content": "Alice likes tea", "user_id": "u1"})
    other = tenant.post("/api/v1/memories/", {"content": "Alice hates tea", "user_id": "u1"})
    memory_id, other_id = memory.json()["id"], other.json()["id"]
    link = tenant.post(f"/api/v1/memories/{memory_id}/links/", {"to_id": other_id}).json()
    alice = tenant.post("/api/v1/entities/", {"name": "Alice", "entity_type": "person"}).json()
    tea = tenant.post("/api/v1/entities/", {"name": "Tea", "entity_type": "concept"}).json()
    relation = tenant.post(
        "/api/v1/relations/",
        {"source_id": alice["id"], "target_id": tea["id"], "relation_type": "likes"},
    ).json()
    document = tenant.post("/api/v1/documents/", {"text": "Tea notes.", "user_id": "u1"}).json()
    older, newer = Memory.objects.filter(pk__in=[memory_id, other_id]).order_by("created_at")
    verdict = Verdict(contradicts=True, cues=["likes/hates"], reason="", detected_by="cues")
    review = contradiction_record(
        project=tenant.project, older=older, newer=newer, similarity=0.9, verdict=verdict
    ) or ContradictionReview.objects.filter(project=tenant.project).latest("created_at")
    return {
        "memory": memory_id,
        "link": str(link["id"]),
        "entity": str(alice["id"]),
        "relation": str(relation["id"]),
        "document": str(document["id"]),
        "contradiction": str(review.pk),
    }


@pytest.fixture
def admin(transactional_db: None) -> Tenant:
    return make_tenant("fuzz")


@pytest.fixture
def seeded(admin: Tenant) -> dict[str, str]:
    return _seed(admin)


def _existing(path: str, name: str, seeded: dict[str, str]) -> str | None:
    if name == "memory_pk":
        return seeded["memory"]
    if name != "id":
        return None
    for prefix, kind in (
        ("/api/v1/memories/{memory_pk}/links/", "link"),
        ("/api/v1/memories/", "memory"),
        ("/api/v1/entities/", "entity"),
        ("/api/v1/relations/", "relation"),
        ("/api/v1/documents/", "document"),
        ("/api/v1/contradictions/", "contradiction"),
    ):
        if path.startswith(prefix):
            return seeded[kind]
    return None


_turn = itertools.count()


def _on_existing_objects(case: Any, seeded: dict[str, str]) -> None:
    """Valid requests, and every other invalid one, go to the seeded objects' ids (a made-up
    id is a 404 before anything else runs)."""
    positive = case.meta is not None and not case.meta.generation.mode.is_negative
    if case.path_parameters and (positive or next(_turn) % 2):
        for name in list(case.path_parameters):
            if (value := _existing(case.path, name, seeded)) is not None:
                case.path_parameters[name] = value


# Not in the schema, so not fuzzed here: the SSE stream `/api/v1/events/` (a response that never
# ends; `/api/v1/events/schema/` documents its events), the MCP endpoints (tests/mcpserver) and
# mem0's paths `/v1/`, `/v2/` (tests/compat). `reset` empties the project: it runs on its own.
@pytest.mark.slow
@schema.exclude(path="/api/v1/reset/").parametrize()
@FUZZ
def test_every_operation_answers_as_documented_for_an_admin_key(
    case: Any, admin: Tenant, seeded: dict[str, str]
) -> None:
    if not _sent(case):
        return
    _on_existing_objects(case, seeded)
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {admin.key}"}, checks=CHECKS
    )
    if case.method == "DELETE" and response.status_code < 300:  # the next ones need them
        seeded.update(_seed(admin))


@pytest.mark.slow
@schema.include(path="/api/v1/reset/").parametrize()
@FUZZ
def test_reset_answers_as_documented_for_an_admin_key(case: Any, admin: Tenant) -> None:
    if not _sent(case):
        return
    case.call_and_validate(headers={"Authorization": f"Bearer {admin.key}"}, checks=CHECKS)


@pytest.mark.slow
@schema.parametrize()
@settings(FUZZ, max_examples=3)
def test_every_operation_answers_a_documented_401_for_an_unknown_key(case: Any) -> None:
    # Authentication answers before any parameter is read: the boundary cases add nothing here.
    if not _sent(case, share=1 if COVERAGE_SHARE == 1 else 20):
        return
    response = case.call_and_validate(
        headers={"Authorization": "Bearer mp_not-a-key"}, checks=CHECKS
    )
    assert response.status_code == 401, (case.method, case.path, response.text)
