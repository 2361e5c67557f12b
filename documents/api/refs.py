"""Memories citing document chunks over REST: a memory's references (list, add, remove) and
learning a document's facts as memories (`add` over its chunks)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from documents.refs import (
    MAX_QUOTE,
    RELATIONS,
    RefInput,
    document_learn,
    memory_details,
    memory_ref_create,
    memory_ref_delete,
)
from memories.selectors.memories import memory_get
from platformcore.lib.fields import StrictBooleanField, StrictCharField
from platformcore.lib.schema import path_ids
from tenants.views import ProjectScopedMixin


class MemoryRefSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField(min_value=1)
    relation = serializers.ChoiceField(choices=RELATIONS, default="cites")
    quote = StrictCharField(
        required=False, allow_blank=True, max_length=MAX_QUOTE, trim_whitespace=False
    )
    quote_start = serializers.IntegerField(required=False, min_value=0)
    quote_end = serializers.IntegerField(required=False, min_value=0)
    score = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)


class DocumentLearnSerializer(serializers.Serializer):
    chunk_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=1000,
        help_text="only these chunks (default: all)",
    )
    infer = StrictBooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="extract facts (default: when an LLM is configured); false: store each "
        "chunk's passage as it is",
    )


@path_ids(id="uuid")
class MemoryRefsView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict}, description="The document chunks the memory cites.")
    def get(self, request: Request, pk: str) -> Response:
        memory = memory_get(project=self.project, memory_id=pk)
        return Response(memory_details(project=self.project, memory=memory))

    @extend_schema(request=MemoryRefSerializer, responses={201: dict})
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(MemoryRefSerializer, request.data)
        memory_ref_create(project=self.project, memory_id=pk, ref=RefInput(**data))
        memory = memory_get(project=self.project, memory_id=pk)
        body = memory_details(project=self.project, memory=memory)
        return Response(body, status=status.HTTP_201_CREATED)


@path_ids(id="uuid", chunk_id="int")
class MemoryRefDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: str, chunk_id: str) -> Response:
        memory_ref_delete(project=self.project, memory_id=pk, chunk_id=chunk_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


@path_ids(id="uuid")
class DocumentLearnView(ProjectScopedMixin, APIView):
    @extend_schema(
        request=DocumentLearnSerializer,
        responses={200: dict},
        description="Extract facts from the document's chunks (`add` on each) into "
        "documentary memories, each citing the chunk it was learned from.",
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(DocumentLearnSerializer, request.data)
        result = document_learn(
            project=self.project,
            document_id=pk,
            actor=self.actor,
            chunk_ids=data.get("chunk_ids"),
            infer=data["infer"],
        )
        return Response(result)
