"""REST endpoints of memory intelligence: add, consolidate, lifecycle, contradictions and the
session tools. Each view validates its input, calls one service and shapes the answer."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import MemorySerializer, PaginationSerializer, ScopeSerializer
from memories.models import ContradictionResolution, ContradictionReview, MemoryType
from memories.services.content import Scope
from memories.services.contradictions import (
    contradiction_get,
    contradiction_list,
    contradiction_resolve,
)
from memoryplatform.lib.fields import StrictBooleanField, StrictCharField, StrictFloatField
from tenants.views import ProjectScopedMixin


class AnyJSONField(serializers.JSONField):
    """Validated by the service (string or list of chat messages)."""


class AddSerializer(ScopeSerializer):
    messages = AnyJSONField(help_text="a string, or a list of {role, content} chat messages")
    metadata = serializers.DictField(required=False, default=dict)
    prompt = StrictCharField(required=False, allow_blank=True, allow_null=True)
    infer = StrictBooleanField(required=False, default=True)


class SinceField(serializers.DateTimeField):
    """An ISO 8601 date-time, or "last": since the project's last consolidation."""

    def to_internal_value(self, value: Any) -> Any:
        return value if value == "last" else super().to_internal_value(value)

    def to_representation(self, value: Any) -> Any:
        return value if value == "last" else super().to_representation(value)


class ConsolidateSerializer(serializers.Serializer):
    similarity_threshold = StrictFloatField(min_value=0.01, max_value=1.0, required=False)
    dry_run = StrictBooleanField(required=False, default=False)
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
    count = serializers.IntegerField()
    results = MemorySerializer(many=True)


class PreserveSerializer(serializers.Serializer):
    until = serializers.DateTimeField(required=False, allow_null=True)


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
        from memories.services.extraction import memories_add

        data = self.validated(AddSerializer, request.data)
        result = memories_add(
            project=self.project,
            messages=data["messages"],
            scope=Scope.of(data),
            actor=self.actor,
            metadata=data["metadata"],
            prompt=data.get("prompt"),
            infer=data["infer"],
        )
        return Response(result)


class ConsolidateView(ProjectScopedMixin, APIView):
    @extend_schema(request=ConsolidateSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        from memories.services.consolidation import memories_consolidate

        data = self.validated(ConsolidateSerializer, request.data)
        report = memories_consolidate(project=self.project, actor=self.actor, **data)
        return Response(report.as_dict())


class DecayRunView(ProjectScopedMixin, APIView):
    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request) -> Response:
        from memories.services.lifecycle import memories_decay

        return Response(memories_decay(project=self.project, actor=self.actor).as_dict())


class PruneView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[PruneCandidatesQuerySerializer], responses=PruneCandidatesSerializer)
    def get(self, request: Request) -> Response:
        """What the next prune would remove (nothing is removed): lowest confidence first."""
        from memories.services.lifecycle import prune_candidates, prune_threshold
        from memories.services.tuning import tuning

        query = self.validated(PruneCandidatesQuerySerializer, request.query_params)
        threshold = prune_threshold(self.project, query.get("threshold"))
        candidates = prune_candidates(project=self.project, threshold=threshold)
        offset = query.get("offset", 0)
        limit = query.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE
        page = list(candidates.defer("embedding", "search_vector")[offset : offset + limit])
        body = {
            "threshold": threshold,
            "enabled": bool(tuning(self.project, "pruning")),
            "count": candidates.count(),
            "results": MemorySerializer(page, many=True).data,
        }
        return Response(body)

    @extend_schema(request=PruneSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        from memories.services.lifecycle import memories_prune

        data = self.validated(PruneSerializer, request.data)
        return Response(memories_prune(project=self.project, actor=self.actor, **data).as_dict())


class DecayStatusView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, pk: str) -> Response:
        from memories.services.lifecycle import memory_decay_status

        return Response(memory_decay_status(project=self.project, memory_id=pk))


class PreserveView(ProjectScopedMixin, APIView):
    @extend_schema(request=PreserveSerializer, responses=MemorySerializer)
    def post(self, request: Request, pk: str) -> Response:
        from memories.services.lifecycle import memory_preserve

        data = self.validated(PreserveSerializer, request.data or {})
        memory = memory_preserve(
            project=self.project, memory_id=pk, actor=self.actor, until=data.get("until")
        )
        return Response(MemorySerializer(memory).data)


class ContradictionListView(ProjectScopedMixin, APIView):
    @extend_schema(parameters=[ContradictionQuerySerializer], responses=ContradictionSerializer)
    def get(self, request: Request) -> Response:
        query = self.validated(ContradictionQuerySerializer, request.query_params)
        reviews = list(contradiction_list(project=self.project, status=query["status"])[:100])
        return Response(
            {"results": ContradictionSerializer(reviews, many=True).data, "count": len(reviews)}
        )


class ContradictionDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses=ContradictionSerializer)
    def get(self, request: Request, pk: str) -> Response:
        review = contradiction_get(project=self.project, review_id=pk)
        return Response(ContradictionSerializer(review).data)


class ContradictionResolveView(ProjectScopedMixin, APIView):
    @extend_schema(request=ResolveSerializer, responses=ContradictionSerializer)
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(ResolveSerializer, request.data)
        review = contradiction_resolve(project=self.project, review_id=pk, actor=self.actor, **data)
        review = contradiction_get(project=self.project, review_id=review.pk)
        return Response(ContradictionSerializer(review).data)


class ReflectView(ProjectScopedMixin, APIView):
    @extend_schema(request=ReflectSerializer, responses={201: dict})
    def post(self, request: Request) -> Response:
        from memories.services.session import REFLECT_FIELDS, session_reflect

        data = self.validated(ReflectSerializer, request.data)
        results = session_reflect(
            project=self.project,
            scope=_scope(data),
            actor=self.actor,
            summary=data["summary"],
            session_id=data.get("session_id"),
            lists={name: data.get(name) for name in REFLECT_FIELDS},
            task_effectiveness=data.get("task_effectiveness"),
        )
        body = [
            {
                "id": str(r.memory.pk),
                "memory_type": r.memory.memory_type,
                "content": r.memory.content,
                "created": r.created,
            }
            for r in results
        ]
        return Response({"results": body}, status=status.HTTP_201_CREATED)


class ContextView(ProjectScopedMixin, APIView):
    @extend_schema(request=ContextSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        from memories.services.session import session_context

        data = self.validated(ContextSerializer, request.data)
        context = session_context(
            project=self.project,
            scope=_scope(data),
            token_budget=data["token_budget"],
            types=data["types"] or None,
            session_id=data.get("session_id"),
        )
        return Response(
            {
                "core": MemorySerializer(context.core, many=True).data,
                "working": MemorySerializer(context.working, many=True).data,
                "tokens_used": context.tokens_used,
                "token_budget": context.token_budget,
                "text": context.as_text(),
            }
        )
