"""Decay control: pause and resume a project's scheduled decay, a memory's own decay rate.

Pausing is the safety valve of the mcp-ai-memory plan: while a project's decay is paused, the
hourly job leaves its scores and states alone (an explicit run, `POST /memories/decay/` or
`manage.py run_decay`, still runs: someone asked for it). The same services serve the REST
API, the MCP tools, the `decay_control` command and the admin action.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memories.models import MAX_DECAY_RATE, MaintenanceState, Memory
from platformcore.events import EventType, emit
from platformcore.lib.actor import Actor
from platformcore.lib.errors import InvalidInput, NotFound, parse_uuid
from tenants.models import Project


def decay_paused(*, project: Project) -> bool:
    return MaintenanceState.objects.filter(project=project, decay_paused_at__isnull=False).exists()


def decay_control_status(*, project: Project) -> dict[str, Any]:
    state = MaintenanceState.objects.filter(project=project).first()
    paused_at = state.decay_paused_at if state else None
    return {
        "project": project.slug,
        "paused": paused_at is not None,
        "paused_at": paused_at,
        "paused_by": (state.decay_paused_by or None) if state and paused_at else None,
        "last_decay_at": state.last_decay_at if state else None,
    }


@transaction.atomic
def decay_pause(*, project: Project, actor: Actor) -> dict[str, Any]:
    """Pause the project's scheduled decay (again: nothing changes, the first pause stays)."""
    state, _ = MaintenanceState.objects.select_for_update().get_or_create(project=project)
    if state.decay_paused_at is None:
        state.decay_paused_at, state.decay_paused_by = timezone.now(), str(actor)
        state.save(update_fields=["decay_paused_at", "decay_paused_by"])
        _emit(project, "decay_paused", actor)
    return decay_control_status(project=project)


@transaction.atomic
def decay_resume(*, project: Project, actor: Actor) -> dict[str, Any]:
    """Let the scheduled decay run again in this project."""
    state, _ = MaintenanceState.objects.select_for_update().get_or_create(project=project)
    if state.decay_paused_at is not None:
        state.decay_paused_at, state.decay_paused_by = None, ""
        state.save(update_fields=["decay_paused_at", "decay_paused_by"])
        _emit(project, "decay_resumed", actor)
    return decay_control_status(project=project)


def _emit(project: Project, type: EventType, actor: Actor) -> None:
    emit(project_id=project.pk, project_slug=project.slug, type=type, data={"by": str(actor)})


def check_decay_rate(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("decay_rate must be a number", fields={"decay_rate": ["a number"]})
    if not 0 <= value <= MAX_DECAY_RATE:
        message = f"between 0 and {MAX_DECAY_RATE} (per day)"
        raise InvalidInput(f"decay_rate must be {message}", fields={"decay_rate": [message]})
    return float(value)


@transaction.atomic
def memory_set_decay_rate(
    *, project: Project, memory_id: UUID | str, decay_rate: float | None
) -> Memory:
    """Give one memory its own decay rate per day (0: it never decays by age; None: back to
    the project's). It takes effect at the next decay run; the status predicts with it now."""
    rate = check_decay_rate(decay_rate)
    pk = parse_uuid(memory_id, what="memory")
    updated = Memory.objects.for_project(project).alive().filter(pk=pk).update(decay_rate=rate)
    if not updated:
        raise NotFound("memory not found")
    return Memory.objects.get(pk=pk)
