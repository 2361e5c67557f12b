"""Episodes over REST: start and list them, read one with its memories in order, close one."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import PaginationSerializer, ScopeSerializer
from memories.memory_scope import Scope
from memories.representations import episode_body
from memories.selectors.episodes import (
    EpisodeFilters,
    episode_get,
    episode_list,
    episode_memories,
)
from memories.services.episodes import MAX_NAME, MAX_SUMMARY, episode_close, episode_start
from platformcore.lib.fields import StrictBooleanField, StrictCharField
from platformcore.lib.schema import path_ids
from tenants.views import ProjectScopedMixin


class EpisodeStartSerializer(ScopeSerializer):
    name = StrictCharField(required=False, allow_blank=True, max_length=MAX_NAME)
    metadata = serializers.DictField(required=False)


class EpisodeListQuerySerializer(PaginationSerializer, ScopeSerializer):
    open = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="true: open only; false: closed"
    )


class EpisodeCloseSerializer(serializers.Serializer):
    summary = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=MAX_SUMMARY,
        help_text="the summary; default: the LLM's (when configured), else an extractive one",
    )
    summarize = StrictBooleanField(
        required=False, default=True, help_text="false: close without a summary"
    )


class EpisodeView(ProjectScopedMixin, APIView):
    @extend_schema(request=EpisodeStartSerializer, responses={201: dict})
    def post(self, request: Request) -> Response:
        data = self.validated(EpisodeStartSerializer, request.data)
        episode = episode_start(
            project=self.project,
            scope=Scope.of(data),
            actor=self.actor,
            name=data.get("name", ""),
            metadata=data.get("metadata"),
        )
        return Response(episode_body(episode), status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="v1_episodes_list",
        parameters=[EpisodeListQuerySerializer],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        query = self.validated(EpisodeListQuerySerializer, request.query_params)
        names = ("user_id", "agent_id", "run_id", "open")
        page = episode_list(
            project=self.project,
            filters=EpisodeFilters(**{name: query.get(name) for name in names}),
            limit=query.get("limit") or settings.MEMORY_DEFAULT_PAGE_SIZE,
            offset=query["offset"],
        )
        return Response(_page(page))


def _page(page: Any) -> dict[str, Any]:
    return {
        "results": [episode_body(episode) for episode in page.results],
        "count": page.count,
        "limit": page.limit,
        "offset": page.offset,
    }


@path_ids(id="uuid")
class EpisodeDetailView(ProjectScopedMixin, APIView):
    @extend_schema(responses={200: dict}, description="The episode and its memories in order.")
    def get(self, request: Request, pk: str) -> Response:
        episode = episode_get(project=self.project, episode_id=pk)
        memories = episode_memories(project=self.project, episode=episode)
        return Response(episode_body(episode, memories))


@path_ids(id="uuid")
class EpisodeCloseView(ProjectScopedMixin, APIView):
    @extend_schema(request=EpisodeCloseSerializer, responses={200: dict})
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(EpisodeCloseSerializer, request.data)
        episode_close(
            project=self.project,
            episode_id=pk,
            actor=self.actor,
            summary=data.get("summary"),
            summarize=data["summarize"],
        )
        return Response(episode_body(episode_get(project=self.project, episode_id=pk)))
