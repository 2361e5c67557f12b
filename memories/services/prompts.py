"""A project's own instructions for fact extraction and the update decision, versioned.

They are appended to our prompts, after the security rule, never replacing them (see
memories.services.fact_extraction.llm); entry points allow them to admin-scope keys only, since
they steer what the model stores. Each change is a new version; a rollback copies an old
version's text into a new one."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from memories.models import ProjectPrompt, PromptKind
from platformcore.lib.actor import Actor
from platformcore.lib.errors import Conflict, InvalidInput, NotFound, check_choice
from tenants.models import Project

MAX_PROMPT_CHARS = 4000  # as a request's own `prompt` (memories.services.fact_extraction.pipeline)


def check_prompt_text(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("text must be a string", fields={"text": ["must be a string"]})
    if len(value) > MAX_PROMPT_CHARS:
        message = f"at most {MAX_PROMPT_CHARS} characters"
        raise InvalidInput(f"text: {message}", fields={"text": [message]})
    return value.strip()


def _next_version(project: Project, kind: str) -> int:
    latest = ProjectPrompt.objects.filter(project=project, kind=kind).aggregate(v=Max("version"))
    return int(latest["v"] or 0) + 1


def _insert(
    project: Project, kind: str, text: str, actor: Actor, rolled_back_from: int | None = None
) -> ProjectPrompt:
    prompt = ProjectPrompt(
        project=project,
        kind=kind,
        version=_next_version(project, kind),
        text=text,
        created_by=actor.name,
        rolled_back_from=rolled_back_from,
    )
    try:
        with transaction.atomic():
            prompt.save(force_insert=True)
    except IntegrityError as exc:  # a concurrent change took this version number
        raise Conflict("the prompt was changed concurrently; retry") from exc
    return prompt


@transaction.atomic
def project_prompt_set(*, project: Project, kind: Any, text: Any, actor: Actor) -> ProjectPrompt:
    """A new active version of the project's `kind` instructions (an empty text switches
    them off)."""
    kind = check_choice("kind", kind, PromptKind.values)
    return _insert(project, kind, check_prompt_text(text), actor)


@transaction.atomic
def project_prompt_rollback(
    *, project: Project, kind: Any, version: Any, actor: Actor
) -> ProjectPrompt:
    """Re-activate an old version: its text becomes a new version."""
    kind = check_choice("kind", kind, PromptKind.values)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        message = "a positive integer"
        raise InvalidInput(f"version must be {message}", fields={"version": [message]})
    old = ProjectPrompt.objects.filter(project=project, kind=kind, version=version).first()
    if old is None:
        raise NotFound(f"no version {version} of the {kind} prompt")
    return _insert(project, kind, old.text, actor, rolled_back_from=old.version)
