"""Input validation for the documents endpoints (the shapes are in representations.py)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from rest_framework import serializers

from documents.models import DocumentStatus
from documents.services import check_size
from platformcore.lib import json_input
from platformcore.lib.fields import MAX_PAGE_OFFSET, StrictCharField


class DocumentUploadSerializer(serializers.Serializer):
    """Multipart (`file` plus the other fields as form fields, `metadata` as a JSON string)
    or JSON (`text`, or `content_base64` for a binary such as a PDF)."""

    file = serializers.FileField(required=False, allow_empty_file=True)
    text = StrictCharField(required=False, trim_whitespace=False, allow_blank=True)
    content_base64 = StrictCharField(required=False)
    mime_type = StrictCharField(required=False, max_length=100, help_text="default: by file name")
    title = StrictCharField(required=False, max_length=500, allow_blank=True)
    source = StrictCharField(required=False, max_length=2000, allow_blank=True)
    user_id = StrictCharField(required=False, max_length=255)
    agent_id = StrictCharField(required=False, max_length=255)
    run_id = StrictCharField(required=False, max_length=255)
    metadata = serializers.JSONField(required=False)
    chunk_size = serializers.IntegerField(required=False, min_value=100, max_value=100_000)
    chunk_overlap = serializers.IntegerField(required=False, min_value=0, max_value=100_000)
    episode_id = serializers.UUIDField(
        required=False, help_text="the episode it belongs to; default: its run's open episode"
    )

    def validate_metadata(self, value: Any) -> Any:
        if isinstance(value, str):  # a multipart form field
            try:
                value = json_input.loads(value)
            except json_input.JsonInputError as exc:
                raise serializers.ValidationError(str(exc)) from exc
            except ValueError as exc:
                raise serializers.ValidationError("must be a JSON object") from exc
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in ("file", "text", "content_base64") if name in attrs]
        if len(given) != 1:
            message = "give exactly one of file (multipart), text or content_base64"
            raise serializers.ValidationError({"file": [message]})
        if "content_base64" in attrs:
            attrs["data"] = _decoded(attrs.pop("content_base64"))
        elif "text" in attrs:
            attrs["data"] = attrs.pop("text").encode()
            attrs.setdefault("mime_type", "text/plain")
        else:
            upload = attrs.pop("file")
            check_size(upload.size)  # 413 before reading a file over the cap
            attrs["data"] = upload.read()
            attrs["filename"] = upload.name or ""
            attrs.setdefault("mime_type", upload.content_type or "")
        return attrs


def _decoded(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise serializers.ValidationError({"content_base64": ["not valid base64"]}) from exc


class DocumentRechunkSerializer(serializers.Serializer):
    chunk_size = serializers.IntegerField(
        required=False, min_value=100, max_value=100_000, help_text="default: as it was cut"
    )
    chunk_overlap = serializers.IntegerField(required=False, min_value=0, max_value=100_000)


class DocumentListSerializer(serializers.Serializer):
    user_id = StrictCharField(required=False)
    agent_id = StrictCharField(required=False)
    run_id = StrictCharField(required=False)
    status = serializers.ChoiceField(choices=DocumentStatus.values, required=False)
    limit = serializers.IntegerField(min_value=1, required=False)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_PAGE_OFFSET, default=0)

    def validate_limit(self, value: int) -> int:
        if value > settings.MEMORY_MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"at most {settings.MEMORY_MAX_PAGE_SIZE}")
        return value


class DocumentProgressSerializer(serializers.Serializer):
    chunks_embedded = serializers.IntegerField()
    chunks_total = serializers.IntegerField()


class DocumentOriginalSerializer(serializers.Serializer):
    filename = serializers.CharField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()
    download_url = serializers.CharField()


class DocumentSerializer(serializers.Serializer):
    """The documented shape of `representations.document_body` (the API's output)."""

    id = serializers.UUIDField()
    title = serializers.CharField()
    source = serializers.CharField()
    mime_type = serializers.CharField()
    size_bytes = serializers.IntegerField()
    page_count = serializers.IntegerField(allow_null=True)
    user_id = serializers.CharField(allow_null=True)
    agent_id = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    content_hash = serializers.CharField()
    status = serializers.ChoiceField(choices=DocumentStatus.values)
    status_reason = serializers.CharField()
    progress = DocumentProgressSerializer()
    created_at = serializers.DateTimeField()
    indexed_at = serializers.DateTimeField(allow_null=True)
    chunk_size = serializers.IntegerField(allow_null=True)
    chunk_overlap = serializers.IntegerField(allow_null=True)
    original = DocumentOriginalSerializer(
        allow_null=True, required=False, help_text="on a single read: the uploaded bytes"
    )


class DocumentCreatedSerializer(DocumentSerializer):
    created = serializers.BooleanField()


class DocumentChunkSerializer(serializers.Serializer):
    """The documented shape of `representations.chunk_body`."""

    id = serializers.IntegerField()
    document_id = serializers.UUIDField()
    ordinal = serializers.IntegerField()
    char_start = serializers.IntegerField()
    char_end = serializers.IntegerField()
    page = serializers.IntegerField(allow_null=True)
    heading_path = serializers.ListField(child=serializers.CharField())
    content = serializers.CharField()
    token_count = serializers.IntegerField()
    summary = serializers.CharField()


class DocumentDeletedSerializer(serializers.Serializer):
    documents = serializers.IntegerField()
    chunks = serializers.IntegerField()
