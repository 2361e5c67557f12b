"""mem0's key check (ping), memory feedback, exports, and a clear 501 for the parts of mem0's
API this platform does not have (summaries, profiles, webhooks, organisation management)."""

from __future__ import annotations

from typing import Any

from django.core import signing
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from analytics.services import tool_feedback_record
from compat.mem0 import serializers as s
from compat.mem0.filters import SCOPE_FIELDS, all_of, translate_filters
from compat.mem0.representations import memory_body
from compat.mem0.views.base import Mem0View
from memories.selectors.filter_language import filter_expression_q
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_get, memory_list
from platformcore.lib.errors import InvalidInput, NotFound
from tenants.models import Project

ORG_ID = "memory-platform"  # mem0's clients want an organisation; a project here stands alone
FEEDBACK_TOOL = "mem0.feedback"  # the tool name mem0 feedback is recorded under
EXPORT_SALT = "compat.mem0.export"
EXPORT_LIMIT = 1000  # memories in one export


class PingView(Mem0View):
    """What mem0's clients call on construction to check the key."""

    def get(self, request: Request) -> Response:
        body = {"status": "ok", "message": "pong", "org_id": ORG_ID}
        return Response(body | {"project_id": self.project.slug, "user_email": None})


class FeedbackView(Mem0View):
    """mem0's verdict on a memory, recorded as tool feedback (analytics): POSITIVE counts as
    relevant and sufficient, NEGATIVE and VERY_NEGATIVE as neither; the verdict and memory id
    are its context, the reason its suggestion. `feedback: null` (mem0: clear it) records
    nothing: feedback here is an append-only log."""

    def post(self, request: Request) -> Response:
        data = self.validated(s.FeedbackSerializer, request.data)
        memory = memory_get(project=self.project, memory_id=data["memory_id"])
        feedback, reason = data.get("feedback"), data.get("feedback_reason") or ""
        if feedback:
            tool_feedback_record(
                project=self.project,
                tool_name=FEEDBACK_TOOL,
                relevant=feedback == "POSITIVE",
                sufficient=feedback == "POSITIVE",
                actor=self.actor,
                suggestion=reason,
                context=f"memory {memory.pk}: {feedback}",
            )
        return Response({"id": str(memory.pk), "feedback": feedback, "feedback_reason": reason})


def _export_expression(data: dict[str, Any]) -> dict[str, Any] | None:
    top_level = {name: data[name] for name in SCOPE_FIELDS if data.get(name)}
    return all_of(translate_filters(data.get("filters")), translate_filters(top_level))


class ExportCreateView(Mem0View):
    """An export is computed when it is fetched: its id is the signed request (project,
    filters, schema), so no job or table is needed and another project's id is a 404."""

    def post(self, request: Request) -> Response:
        data = self.validated(s.ExportCreateSerializer, request.data)
        expression = _export_expression(data)
        if expression is not None:
            filter_expression_q(expression, project=self.project)  # a bad filter: 400 now
        request_body = {"p": self.project.pk, "f": expression, "s": data["schema"]}
        export_id = signing.dumps(request_body, salt=EXPORT_SALT, compress=True)
        message = "Memory export request received. The export will be ready in a few seconds."
        return Response({"message": message, "id": export_id}, status=201)


class ExportGetView(Mem0View):
    required_scopes = {None: "read"}

    def post(self, request: Request) -> Response:
        data = self.validated(s.ExportGetSerializer, request.data)
        export_id, schema = data.get("memory_export_id"), None
        if export_id:
            expression, schema = _export_request(export_id, self.project)
        elif data.get("filters") or any(data.get(name) for name in SCOPE_FIELDS):
            expression = _export_expression(data)
        else:
            message = "give memory_export_id (from create_memory_export) or filters"
            raise InvalidInput(message, fields={"memory_export_id": [message]})
        found = memory_list(
            project=self.project,
            filters=MemoryFilters(expression=expression),
            limit=EXPORT_LIMIT,
            offset=0,
        )
        memories = [memory_body(memory) for memory in found.results]
        body = {"id": export_id, "status": "completed", "schema": schema}
        return Response(body | {"count": found.count, "memories": memories})


def _export_request(export_id: str, project: Project) -> tuple[Any, Any]:
    try:
        request_body = signing.loads(export_id, salt=EXPORT_SALT)
    except signing.BadSignature as exc:
        raise NotFound("export not found") from exc
    if request_body.get("p") != project.pk:
        raise NotFound("export not found")
    return request_body.get("f"), request_body.get("s")


class NotSupported(APIException):
    status_code = 501
    default_code = "not_supported"


class NotSupportedView(Mem0View):
    """A part of mem0's API with no counterpart here: 501 with what to use instead."""

    required_scopes = {None: "read"}
    feature = ""
    instead = ""

    def refuse(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotSupported(f"{self.feature} are not supported by Memory Platform. {self.instead}")

    get = post = put = patch = delete = refuse
