"""The tag registry's writes: a tag's description (MemorizedMCP-TS's `tags` table).

Tags are not registered on write: every tag in use on a memory or an entity is listed by
`entities.selectors.tags` with its counts, computed from the rows that carry it. A row here
only holds what cannot be computed, the description, so memory writes pay nothing for the
registry and its counts never drift."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from entities.models import MAX_TAG_LENGTH, Tag
from platformcore.lib.errors import InvalidInput, NotFound
from tenants.models import Project

MAX_DESCRIPTION_LENGTH = 2000


def check_tag_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("name must be a non-empty string", fields={"name": ["required"]})
    name = value.strip()
    if len(name) > MAX_TAG_LENGTH:
        message = f"at most {MAX_TAG_LENGTH} characters"
        raise InvalidInput(f"name: {message}", fields={"name": [message]})
    return name


def _check_description(value: Any) -> str:
    if not isinstance(value, str):
        message = "must be a string"
        raise InvalidInput(f"description {message}", fields={"description": [message]})
    if len(value) > MAX_DESCRIPTION_LENGTH:
        message = f"at most {MAX_DESCRIPTION_LENGTH} characters"
        raise InvalidInput(f"description: {message}", fields={"description": [message]})
    return value.strip()


@transaction.atomic
def tag_describe(*, project: Project, name: Any, description: Any) -> Tag:
    """Register a tag with its description, or change the description of a registered one
    (the tag need not be in use yet)."""
    name, description = check_tag_name(name), _check_description(description)
    values = {"description": description, "updated_at": timezone.now()}
    try:
        with transaction.atomic():
            tag, _ = Tag.objects.update_or_create(project=project, name=name, defaults=values)
    except IntegrityError:  # a concurrent describe created it first: ours is the later word
        tag = Tag.objects.select_for_update().get(project=project, name=name)
        Tag.objects.filter(pk=tag.pk).update(**values)
        tag.refresh_from_db()
    return tag


@transaction.atomic
def tag_forget(*, project: Project, name: Any) -> None:
    """Drop a tag's registry row (its description); the tag stays listed while in use."""
    deleted, _ = Tag.objects.filter(project=project, name=check_tag_name(name)).delete()
    if not deleted:
        raise NotFound("tag not registered")
