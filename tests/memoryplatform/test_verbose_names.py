"""Every model reads properly in the admin: "Memories", not "Memorys"."""

from __future__ import annotations

import re

import pytest
from django.apps import apps

APPS = {"platformcore", "tenants", "memories", "entities", "analytics", "portability"}
NAIVE_PLURAL = re.compile(r"[^aeiou]ys$")  # "memorys", "entitys"


def test_no_model_has_a_naive_plural() -> None:
    wrong = [
        f"{model._meta.label}: {model._meta.verbose_name_plural}"
        for model in apps.get_models()
        if model._meta.app_label in APPS
        and NAIVE_PLURAL.search(str(model._meta.verbose_name_plural))
    ]
    assert wrong == []


def test_memories_and_their_history_are_named_as_people_say_them() -> None:
    memory = apps.get_model("memories", "Memory")._meta
    history = apps.get_model("memories", "MemoryHistory")._meta
    api_key = apps.get_model("tenants", "ApiKey")._meta
    assert (memory.verbose_name, memory.verbose_name_plural) == ("memory", "memories")
    assert history.verbose_name_plural == "memory history"
    assert api_key.verbose_name_plural == "API keys"


@pytest.mark.django_db
def test_the_admin_lists_memories_under_their_proper_name(admin_client) -> None:
    index = admin_client.get("/admin/").content.decode()
    assert ">Memories<" in index
    assert "Memorys" not in index
    changelist = admin_client.get("/admin/memories/memory/").content.decode()
    assert "Select memory to change" in changelist
