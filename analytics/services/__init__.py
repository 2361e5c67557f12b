"""Writes of analytics records."""

from __future__ import annotations

from django.db import transaction

from analytics.models import ToolFeedback, TriggerType
from memories.services.pii import scrub_for_storage
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

MAX_SUGGESTION = 1000
MAX_CONTEXT = 1000


def _text(name: str, value: str, limit: int) -> str:
    value = (value or "").strip()
    if len(value) > limit:
        raise InvalidInput(f"{name} is longer than {limit} characters", fields={name: ["too long"]})
    return value


@transaction.atomic
def tool_feedback_record(
    *,
    project: Project,
    tool_name: str,
    relevant: bool,
    sufficient: bool,
    actor: Actor,
    suggestion: str = "",
    context: str = "",
    session_id: str = "",
    trigger_type: str = TriggerType.VOLUNTARY,
) -> ToolFeedback:
    """Store an agent's verdict on a tool call."""
    tool_name = (tool_name or "").strip()
    if not tool_name or len(tool_name) > 100:
        raise InvalidInput("tool_name must be 1-100 characters", fields={"tool_name": ["1-100"]})
    if trigger_type not in TriggerType.values:
        allowed = ", ".join(TriggerType.values)
        raise InvalidInput(
            f"trigger_type must be one of {allowed}", fields={"trigger_type": [allowed]}
        )
    texts = scrub_for_storage(  # PII masking, as for every stored text
        project=project,
        values={
            "suggestion": _text("suggestion", suggestion, MAX_SUGGESTION),
            "context": _text("context", context, MAX_CONTEXT),
        },
    )
    return ToolFeedback.objects.create(
        project=project,
        tool_name=tool_name,
        relevant=bool(relevant),
        sufficient=bool(sufficient),
        **texts,
        session_id=_text("session_id", session_id, 255),
        trigger_type=trigger_type,
        actor=str(actor),
    )
