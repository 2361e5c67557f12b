"""REST endpoints of memory intelligence: add, consolidate, lifecycle, contradictions and the
session tools. Each view validates its input, calls one service and shapes the answer."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import MemorySerializer, PaginationSerializer, ScopeSerializer
from memories.memory_scope import Scope
from memories.models import MAX_DECAY_RATE, ContradictionResolution, ContradictionReview, MemoryType
from memories.representations import context_body
from memories.services.archive import memory_decompress
from memories.services.contradictions import (
    contradiction_get,
    contradiction_list,
    contradiction_resolve,
)
from memories.services.decay_control import (
    decay_control_status,
    decay_pause,
    decay_resume,
    memory_set_decay_rate,
)
from memories.services.fact_extraction import memories_add
from memories.services.layers import session_close
from memories.services.lifecycle import (
    memories_decay,
    memories_prune,
    memory_decay_status,
    memory_preserve,
    prune_candidates,
    prune_threshold,
)
from memories.services.maintenance import STAGES as MAINTENANCE_STAGES
from memories.services.maintenance import memories_maintain
from memories.services.session import REFLECT_FIELDS, session_context, session_reflect
from memories.services.tuning import tuning
from memories.services.utility import memories_feedback, memory_utility
from platformcore.lib.fields import StrictBooleanField, StrictCharField, StrictFloatField
from platformcore.lib.schema import error_response, path_ids
from tenants.views import ProjectScopedMixin


class AnyJSONField(serializers.JSONField):
    """Validated by the service (string or list of chat messages)."""


class AddSerializer(ScopeSerializer):
    messages = AnyJSONField(help_text="a string, or a list of {role, content} chat messages")
    metadata = serializers.DictField(required=False, default=dict)
    prompt = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="replaces the extraction prompt for this call (the output format and the "
        "data rule stay)",
    )
    infer = StrictBooleanField(required=False, default=True)
    occurred_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="when the messages were said, if not now (an imported conversation)",
    )


class SinceField(serializers.DateTimeField):
    """An ISO 8601 date-time, or "last": since the project's last consolidation."""

    def to_internal_value(self, value: Any) -> Any:
        return value if value == "last" else super().to_internal_value(value)

    def to_representation(self, value: Any) -> Any:
        return value if value == "last" else super().to_representation(value)


class ConsolidateSerializer(serializers.Serializer):
    similarity_threshold = StrictFloatField(min_value=0.01, max_value=1.0, required=False)
    dry_run = StrictBooleanField(required=False, default=False)
    stages = serializers.ListField(
        child=serializers.ChoiceField(choices=MAINTENANCE_STAGES),
        required=False,
        allow_empty=False,
        help_text="the pipeline's stages to run, in their order (default: all)",
    )
    since = SinceField(
        required=False,
        allow_null=True,
        help_text='only memories changed since then look for partners; "last": since the '
        "project's last consolidation; absent: a full run",
    )


class PruneSerializer(serializers.Serializer):
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    dry_run = StrictBooleanField(required=False, default=False)


class PruneCandidatesQuerySerializer(PaginationSerializer):
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    dry_run = serializers.BooleanField(required=False, help_text="accepted; a GET never prunes")


class PruneCandidatesSerializer(serializers.Serializer):
    threshold = serializers.FloatField()
    enabled = serializers.BooleanField(help_text="whether the daily prune job runs here")
    tier_expiry = serializers.BooleanField(
        help_text="whether cold, stale memories are pruned too (Memento's cold-tier expiry)"
    )
    count = serializers.IntegerField()
    results = MemorySerializer(
        many=True, help_text="each with `prune_reason`: stale (listed first) or low_confidence"
    )


class PreserveSerializer(serializers.Serializer):
    until = serializers.DateTimeField(required=False, allow_null=True)


class DecayRateSerializer(serializers.Serializer):
    decay_rate = StrictFloatField(
        min_value=0.0,
        max_value=MAX_DECAY_RATE,
        allow_null=True,
        help_text="this memory's decay rate per day; null: the project's",
    )


class FeedbackSerializer(serializers.Serializer):
    helpful = StrictBooleanField()
    tool_name = StrictCharField(required=False, allow_blank=True, default="", max_length=100)


class ResolveSerializer(serializers.Serializer):
    resolution = serializers.ChoiceField(choices=ContradictionResolution.choices)
    content = StrictCharField(required=False, allow_blank=True)
    note = StrictCharField(required=False, allow_blank=True, default="")


class ContradictionQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["open", "resolved", "all"], default="open")


class ReflectSerializer(ScopeSerializer):
    summary = StrictCharField()
    session_id = StrictCharField(required=False, allow_null=True, max_length=255)
    decisions = serializers.ListField(child=StrictCharField(), required=False, default=list)
    errors_resolved = serializers.ListField(child=StrictCharField(), required=False, default=list)
    new_procedures = serializers.ListField(child=StrictCharField(), required=False, default=list)
    open_questions = serializers.ListField(child=StrictCharField(), required=False, default=list)
    task_effectiveness = serializers.DictField(required=False, allow_null=True)
    promote = serializers.ListField(
        child=StrictCharField(),
        required=False,
        help_text="ids of the session's working memory to keep as long-term memory",
    )


class SessionCloseSerializer(serializers.Serializer):
    session_id = StrictCharField(max_length=255, help_text="the run whose working memory ends")
    promote = serializers.ListField(
        child=StrictCharField(),
        required=False,
        help_text="ids of the session's working memory to keep as long-term memory",
    )


class ContextSerializer(ScopeSerializer):
    token_budget = serializers.IntegerField(min_value=1, max_value=100_000, default=2000)
    types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryType.choices), required=False, default=list
    )
    session_id = StrictCharField(required=False, allow_null=True, max_length=255)


class ContradictionSerializer(serializers.ModelSerializer):
    memory_a = MemorySerializer()
    memory_b = MemorySerializer()

    class Meta:
        model = ContradictionReview
        fields = [
            "id",
            "memory_a",
            "memory_b",
            "similarity",
            "cues",
            "detected_by",
            "reason",
            "status",
            "resolution",
            "resolved_by",
            "resolved_at",
            "note",
            "created_at",
        ]
        read_only_fields = fields


def _scope(data: dict[str, Any]) -> Scope:
    return Scope.of(data, required=False)


class AddView(ProjectScopedMixin, APIView):
    @extend_schema(request=AddSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(AddSerializer, request.data)
        result = memories_add(
            project=self.project,
            messages=data["messages"],
            scope=Scope.of(data),
            actor=self.actor,
            metadata=data["metadata"],
            prompt=data.get("prompt"),
            infer=data["infer"],
            occurred_at=data.get("occurred_at"),
        )
        return Response(result)


class ConsolidateView(ProjectScopedMixin, APIView):
    @extend_schema(request=ConsolidateSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(ConsolidateSerializer, request.data)
        body = memories_maintain(project=self.project, actor=self.actor, **data)
        return Response(body)


class DecayRunView(ProjectScopedMixin, APIView):
    @extend_schema(operation_id="v1_memories_decay_control_retrieve", responses={200: dict})
    def get(self, request: Request) -> Response:
        """Whether the project's scheduled decay is paused, and when it last ran."""
        return Response(decay_control_status(project=self.project))

    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request) -> Response:
        report = memories_decay(project=self.project, actor=self.actor)
        return Response(report.as_dict() | {"promoted": report.promoted, "demoted": report.demoted})


class DecayPauseView(ProjectScopedMixin, APIView):
    """Pause (or, on the resume route, resume) the project's scheduled decay (admin scope)."""

    required_scopes = {None: "admin"}
    resume = False

    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request) -> Response:
        control = decay_resume if self.resume else decay_pause
        return Response(control(project=self.project, actor=self.actor))


class PruneView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[PruneCandidatesQuerySerializer], responses=PruneCandidatesSerializer)
    def get(self, request: Request) -> Response:
        """What the next prune would remove (nothing is removed): lowest confidence first."""
        query = self.validated(PruneCandidatesQuerySerializer, request.query_params)
        threshold = prune_threshold(self.project, query.get("threshold"))
        candidates = prune_candidates(project=self.project, threshold=threshold)
        offset = query.get("offset", 0)
        limit = query.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE
        page = list(
            candidates.defer("embedding", "search_vector", "summary_embedding")[
                offset : offset + limit
            ]
        )
        results = MemorySerializer(page, many=True).data
        for item, memory in zip(results, page, strict=True):  # why each would go
            item["prune_reason"] = "stale" if memory.stale else "low_confidence"
        body = {
            "threshold": threshold,
            "enabled": bool(tuning(self.project, "pruning")),
            "tier_expiry": bool(tuning(self.project, "tier_expiry")),
            "count": candidates.count(),
            "results": results,
        }
        return Response(body)

    @extend_schema(request=PruneSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(PruneSerializer, request.data)
        return Response(memories_prune(project=self.project, actor=self.actor, **data).as_dict())


@path_ids(id="uuid")
class DecayStatusView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, pk: str) -> Response:
        return Response(memory_decay_status(project=self.project, memory_id=pk))

    @extend_schema(request=DecayRateSerializer, responses={200: dict})
    def patch(self, request: Request, pk: str) -> Response:
        """Set this memory's own decay rate (null: back to the project's)."""
        data = self.validated(DecayRateSerializer, request.data)
        memory_set_decay_rate(project=self.project, memory_id=pk, decay_rate=data["decay_rate"])
        return Response(memory_decay_status(project=self.project, memory_id=pk))


@path_ids(id="uuid")
class DecompressView(ProjectScopedMixin, APIView):
    @extend_schema(request=None, responses=MemorySerializer)
    def post(self, request: Request, pk: str) -> Response:
        """Put a compressed (archived) memory's full text back."""
        memory = memory_decompress(project=self.project, memory_id=pk)
        return Response(MemorySerializer(memory).data)


@path_ids(id="uuid")
class UtilityView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, pk: str) -> Response:
        """The memory's utility score, when it was assessed, and the heuristic's parts."""
        return Response(memory_utility(project=self.project, memory_id=pk))


@path_ids(id="uuid")
class FeedbackView(ProjectScopedMixin, APIView):
    @extend_schema(request=FeedbackSerializer, responses={201: dict})
    def post(self, request: Request, pk: str) -> Response:
        """Say whether this memory helped; its utility is scored again."""
        data = self.validated(FeedbackSerializer, request.data)
        memories_feedback(project=self.project, memory_ids=[pk], actor=self.actor, **data)
        return Response({"id": pk, "recorded": True}, status=status.HTTP_201_CREATED)


@path_ids(id="uuid")
class PreserveView(ProjectScopedMixin, APIView):
    @extend_schema(request=PreserveSerializer, responses=MemorySerializer)
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(PreserveSerializer, request.data or {})
        memory = memory_preserve(
            project=self.project, memory_id=pk, actor=self.actor, until=data.get("until")
        )
        return Response(MemorySerializer(memory).data)


class ContradictionListView(ProjectScopedMixin, APIView):
    @extend_schema(
        operation_id="v1_contradictions_list",
        parameters=[ContradictionQuerySerializer],
        responses=inline_serializer(
            "ContradictionList",
            {"results": ContradictionSerializer(many=True), "count": serializers.IntegerField()},
        ),
    )
    def get(self, request: Request) -> Response:
        query = self.validated(ContradictionQuerySerializer, request.query_params)
        reviews = list(contradiction_list(project=self.project, status=query["status"])[:100])
        return Response(
            {"results": ContradictionSerializer(reviews, many=True).data, "count": len(reviews)}
        )


@path_ids(id="uuid")
class ContradictionDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses=ContradictionSerializer)
    def get(self, request: Request, pk: str) -> Response:
        review = contradiction_get(project=self.project, review_id=pk)
        return Response(ContradictionSerializer(review).data)


@path_ids(id="uuid")
class ContradictionResolveView(ProjectScopedMixin, APIView):
    @extend_schema(
        request=ResolveSerializer,
        responses={
            200: ContradictionSerializer,
            409: error_response("Already resolved, or one of its memories was deleted."),
        },
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(ResolveSerializer, request.data)
        review = contradiction_resolve(project=self.project, review_id=pk, actor=self.actor, **data)
        review = contradiction_get(project=self.project, review_id=review.pk)
        return Response(ContradictionSerializer(review).data)


class ReflectView(ProjectScopedMixin, APIView):
    @extend_schema(request=ReflectSerializer, responses={201: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(ReflectSerializer, request.data)
        reflection = session_reflect(
            project=self.project,
            scope=_scope(data),
            actor=self.actor,
            summary=data["summary"],
            session_id=data.get("session_id"),
            lists={name: data.get(name) for name in REFLECT_FIELDS},
            task_effectiveness=data.get("task_effectiveness"),
            promote=data.get("promote"),
        )
        return Response(reflection.as_dict(), status=status.HTTP_201_CREATED)


class SessionCloseView(ProjectScopedMixin, APIView):
    @extend_schema(request=SessionCloseSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        """End a session: its working memory (the run's short-term memories) leaves, but for
        what the promotion rule keeps and `promote` names."""
        data = self.validated(SessionCloseSerializer, request.data)
        report = session_close(
            project=self.project,
            session_id=data["session_id"],
            actor=self.actor,
            promote=data.get("promote"),
        )
        return Response(report.as_dict())


class ContextView(ProjectScopedMixin, APIView):
    required_scopes = {None: "read"}  # a POST that only reads, as MCP's memory_context

    @extend_schema(request=ContextSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(ContextSerializer, request.data)
        context = session_context(
            project=self.project,
            scope=_scope(data),
            token_budget=data["token_budget"],
            types=data["types"] or None,
            session_id=data.get("session_id"),
        )
        return Response(context_body(context))
