"""A project's own instructions for fact extraction and the update decision (admin keys)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcpserver.auth import actor_for
from mcpserver.tools import call
from memories.representations import project_prompt_body, project_prompts_body
from memories.selectors.prompts import project_prompt_versions
from memories.services.prompts import MAX_PROMPT_CHARS, project_prompt_rollback, project_prompt_set
from tenants.models import ApiKey

Kind = Literal["extraction", "update_decision"]


async def project_prompts(kind: Kind | None = None) -> dict[str, Any]:
    """The project's instructions for fact extraction and the update decision: every
    version (newest first) and the active version of each kind."""

    def run(key: ApiKey) -> dict[str, Any]:
        return project_prompts_body(list(project_prompt_versions(project=key.project, kind=kind)))

    return await call("admin", run)


async def project_prompt_set_tool(
    kind: Kind,
    text: Annotated[
        str,
        Field(
            max_length=MAX_PROMPT_CHARS,
            description="Appended to our prompt for this step; empty switches it off",
        ),
    ],
) -> dict[str, Any]:
    """Set the project's instructions for one LLM step as a new version (appended to ours,
    never replacing them)."""

    def run(key: ApiKey) -> dict[str, Any]:
        prompt = project_prompt_set(project=key.project, kind=kind, text=text, actor=actor_for(key))
        return project_prompt_body(prompt, active=bool(prompt.text))

    return await call("admin", run)


async def project_prompt_rollback_tool(
    kind: Kind, version: Annotated[int, Field(ge=1, description="The version to re-activate")]
) -> dict[str, Any]:
    """Re-activate an old version of the project's instructions (as a new version)."""

    def run(key: ApiKey) -> dict[str, Any]:
        prompt = project_prompt_rollback(
            project=key.project, kind=kind, version=version, actor=actor_for(key)
        )
        return project_prompt_body(prompt, active=bool(prompt.text))

    return await call("admin", run)
