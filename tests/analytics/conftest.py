"""Curators of the admin: a superuser, and staff limited to one project by its group."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from memories.models import Memory
from tenants.models import Project
from tests.memories.intelligence.conftest import add  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Any:
    """Analytics are cached briefly; each test starts from the store."""
    cache.clear()
    yield
    cache.clear()


def staff_client(username: str, *, superuser: bool = False, projects: list[Project] = ()) -> Client:
    """A logged-in admin user: a superuser, or staff curating `projects` (group
    `project:<slug>` holding every model permission)."""
    users = get_user_model()
    if superuser:
        user = users.objects.create_superuser(username, f"{username}@example.com", "pw")
    else:
        user = users.objects.create_user(username, f"{username}@example.com", "pw", is_staff=True)
        for project in projects:
            group, _ = Group.objects.get_or_create(name=f"project:{project.slug}")
            group.permissions.set(Permission.objects.all())
            user.groups.add(group)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def curator(db: None) -> Client:
    return staff_client("curator", superuser=True)


@pytest.fixture
def alice_curator(alice) -> Client:
    """Staff who curates alice's project only."""
    return staff_client("alices-curator", projects=[alice.project])


def age(memory_id: str, days: float, **fields: Any) -> None:
    """Make a memory `days` old and unread since."""
    then = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None, **fields)
