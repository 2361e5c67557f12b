"""REST endpoints of a project's own LLM instructions (admin scope): list the versions, set
a new one, roll back to an old one. Validation of kind, text and version is the services'."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.models import PromptKind
from memories.representations import project_prompt_body, project_prompts_body
from memories.selectors.prompts import project_prompt_versions
from memories.services.prompts import MAX_PROMPT_CHARS, project_prompt_rollback, project_prompt_set
from platformcore.lib.fields import StrictCharField
from platformcore.lib.schema import error_response
from tenants.views import ProjectScopedMixin


class PromptQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=PromptKind.choices, required=False)


class PromptSetSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=PromptKind.choices)
    text = StrictCharField(
        max_length=MAX_PROMPT_CHARS,
        allow_blank=True,
        trim_whitespace=False,
        help_text="appended to our prompt for this step; empty switches the instructions off",
    )


class PromptRollbackSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=PromptKind.choices)
    version = serializers.IntegerField(min_value=1, help_text="the version to re-activate")


class ProjectPromptsView(ProjectScopedMixin, APIView):
    """The project's instructions for fact extraction and the update decision."""

    required_scopes = {None: "admin"}

    @extend_schema(parameters=[PromptQuerySerializer], responses={200: dict})
    def get(self, request: Request) -> Response:
        """Every version, newest first, and the active version of each kind."""
        query = self.validated(PromptQuerySerializer, request.query_params)
        versions = list(project_prompt_versions(project=self.project, kind=query.get("kind")))
        return Response(project_prompts_body(versions))

    @extend_schema(request=PromptSetSerializer, responses={201: dict})
    def put(self, request: Request) -> Response:
        """A new version, active at once."""
        data = self.validated(PromptSetSerializer, request.data)
        prompt = project_prompt_set(project=self.project, actor=self.actor, **data)
        body = project_prompt_body(prompt, active=bool(prompt.text))
        return Response(body, status=status.HTTP_201_CREATED)


class ProjectPromptRollbackView(ProjectScopedMixin, APIView):
    required_scopes = {None: "admin"}

    @extend_schema(
        request=PromptRollbackSerializer,
        responses={201: dict, 404: error_response("No such version of that prompt.")},
    )
    def post(self, request: Request) -> Response:
        """Re-activate an old version: its text becomes a new version."""
        data = self.validated(PromptRollbackSerializer, request.data)
        prompt = project_prompt_rollback(project=self.project, actor=self.actor, **data)
        body = project_prompt_body(prompt, active=bool(prompt.text))
        return Response(body, status=status.HTTP_201_CREATED)
