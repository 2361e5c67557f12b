"""Reads of a project's own LLM instructions (memories.models.ProjectPrompt)."""

from __future__ import annotations

from django.db.models import QuerySet

from memories.models import ProjectPrompt, PromptKind
from platformcore.lib.errors import check_choice
from tenants.models import Project


def project_prompt_versions(
    *, project: Project, kind: str | None = None
) -> QuerySet[ProjectPrompt]:
    """Every version of the project's instructions, by kind then newest first."""
    queryset = ProjectPrompt.objects.filter(project=project)
    if kind:
        queryset = queryset.filter(kind=check_choice("kind", kind, PromptKind.values))
    return queryset.order_by("kind", "-version")


def project_prompt_active(*, project: Project, kind: str) -> ProjectPrompt | None:
    """The version in force for `kind` (the newest), or None when there is none or it is
    empty (the instructions were switched off)."""
    latest = ProjectPrompt.objects.filter(project=project, kind=kind).order_by("-version").first()
    return latest if latest is not None and latest.text.strip() else None


def project_prompts_active(*, project: Project) -> dict[str, ProjectPrompt | None]:
    """{kind: active version or None} for every kind."""
    return {kind: project_prompt_active(project=project, kind=kind) for kind in PromptKind.values}
