"""Contradiction review in the Django admin: side by side, filtered by status, resolved with
actions that go through the same service as the REST resolve endpoint."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memories.models import ContradictionReview, LinkType, Memory, MemoryLink

CHANGELIST = "/admin/memories/contradictionreview/"


@pytest.fixture
def curator(db: None) -> Client:
    user = get_user_model().objects.create_superuser("curator", "curator@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def review(add, settings) -> ContradictionReview:
    settings.MEMORY_DELETE_DECISIONS = "review"
    add("I am vegetarian")
    add("I started eating meat again")  # offline, under review: added and flagged
    return ContradictionReview.objects.get()


def _act(curator: Client, action: str, *reviews: ContradictionReview):
    selected = [str(r.pk) for r in reviews]
    return curator.post(CHANGELIST, {"action": action, "_selected_action": selected}, follow=True)


def test_the_changelist_shows_both_memories_side_by_side(curator, review):
    page = curator.get(CHANGELIST).content.decode()
    assert "User is vegetarian" in page
    assert "User started eating meat again" in page
    assert "user u1" in page
    detail = curator.get(f"{CHANGELIST}{review.pk}/change/").content.decode()
    assert '<table class="contradiction">' in detail
    assert "<th>confidence</th>" in detail


def test_the_changelist_filters_by_status(curator, review):
    open_ = curator.get(CHANGELIST, {"status__exact": "open"}).content.decode()
    assert "User is vegetarian" in open_
    resolved = curator.get(CHANGELIST, {"status__exact": "resolved"}).content.decode()
    assert "User is vegetarian" not in resolved


def test_keep_b_supersedes_a_and_records_the_admin_user(curator, review):
    response = _act(curator, "keep_b", review)

    assert response.status_code == 200
    review.refresh_from_db()
    assert (review.status, review.resolution, review.resolved_by) == (
        "resolved",
        "keep_b",
        "user:curator",
    )
    assert review.resolved_at is not None
    assert Memory.objects.get(pk=review.memory_a_id).deleted_at is not None
    assert Memory.objects.get(pk=review.memory_b_id).deleted_at is None
    assert MemoryLink.objects.filter(
        from_memory_id=review.memory_a_id,
        to_memory_id=review.memory_b_id,
        link_type=LinkType.SUPERSEDED_BY,
    ).exists()


def test_the_admin_and_the_rest_endpoint_leave_the_store_alike(curator, add, alice, review):
    add("I like dark mode", user_id="u2")
    add("I don't like dark mode", user_id="u2")
    other = ContradictionReview.objects.exclude(pk=review.pk).get()

    _act(curator, "merge", review)
    alice.post(f"/api/v1/contradictions/{other.pk}/resolve/", {"resolution": "merge"})

    for done in (review, other):
        done.refresh_from_db()
        assert (done.status, done.resolution) == ("resolved", "merge")
        a, b = Memory.objects.get(pk=done.memory_a_id), Memory.objects.get(pk=done.memory_b_id)
        assert (a.deleted_at is None, b.deleted_at is None) == (True, False)
        assert a.version == 1  # merged without new content: A's text stays
    assert review.resolved_by == "user:curator"
    assert other.resolved_by.startswith("key:")


def test_keep_both_removes_the_contradicts_links_and_deletes_nothing(curator, review):
    _act(curator, "keep_both", review)
    assert not MemoryLink.objects.filter(link_type=LinkType.CONTRADICTS).exists()
    assert Memory.objects.filter(deleted_at__isnull=True).count() == 2


def test_resolving_twice_reports_an_error_and_changes_nothing(curator, review):
    _act(curator, "keep_a", review)
    page = _act(curator, "keep_b", review).content.decode()
    assert "already resolved" in page
    review.refresh_from_db()
    assert review.resolution == "keep_a"
    assert Memory.objects.get(pk=review.memory_a_id).deleted_at is None


def test_reviews_cannot_be_added_by_hand(curator):
    assert curator.get(f"{CHANGELIST}add/").status_code == 403
