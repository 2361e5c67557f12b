"""The OpenAPI schema's error responses, documented once for every operation.

Every REST error has one shape, `{"error": {"code", "message", "fields"}}` (lib/api.py), and
which statuses an operation can answer follows from what it is, not from each view: a key
that is missing or unknown is a 401, a key without the scope a 403, too many requests a 429,
a database that is busy or a server that is overloaded a 503; an operation that takes input
(a body, a query or a path parameter) can refuse it with a 400 naming the field, one with a
body can be refused a 413 when the body is over the size cap, one on an object by id answers
404 for an object that does not exist or belongs to another project. `PlatformAutoSchema`
adds these to each operation's documented responses, so that clients (and the schema fuzz
tests in tests/fuzz/) know every status the API can answer. A view's own `extend_schema`
declaration of one of these statuses wins.

Also for views: `error_response` (a status particular to one operation, such as 409 or 415),
`page_of` (the `{results, count, limit, offset}` envelope of a list) and `path_ids` (the type
of a route's ids: a memory's is a UUID, an entity's an integer).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema_serializer
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="machine-readable, e.g. `invalid`, `not_found`")
    message = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="the invalid fields by path (`filters.AND[1].user_id`), with their messages",
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


_DESCRIPTIONS = {
    "400": "Invalid input; `error.fields` names the fields.",
    "401": "No API key, or an unknown, revoked or expired one.",
    "403": "The API key lacks the scope this operation needs.",
    "404": "No such object in the key's project.",
    "413": "The request body is over the size cap.",
    "429": "Over the key's rate limit; retry after `Retry-After` seconds.",
    "503": "The database is busy or the server overloaded; retry after `Retry-After` seconds.",
}


class PlatformAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if not self._is_documented_api():
            return responses
        error = self.resolve_serializer(ErrorSerializer, direction).ref
        for code in self._error_statuses():
            responses.setdefault(
                code,
                {
                    "content": {"application/json": {"schema": error}},
                    "description": _DESCRIPTIONS[code],
                },
            )
        return responses

    def _resolve_path_parameters(self, variables: list[str]) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super()._resolve_path_parameters(variables)
        types = getattr(self.view, "path_id_types", {})
        for parameter in parameters:
            if parameter["name"] in types:
                parameter["schema"] = build_basic_type(types[parameter["name"]])
        return parameters

    def _is_documented_api(self) -> bool:
        return self.path.startswith("/api/")

    def _error_statuses(self) -> list[str]:
        has_body = self.method in ("POST", "PUT", "PATCH")
        has_path_parameter = "{" in self.path
        codes = ["503"]
        if self.view.authentication_classes:
            codes += ["401", "403", "429"]
        if has_body or self._get_parameters():  # path and query parameters
            codes.append("400")
        if has_body:
            codes.append("413")
        if has_path_parameter:
            codes.append("404")
        return sorted(codes)


def error_response(description: str) -> OpenApiResponse:
    """A status particular to one operation (409 on a name conflict, 415 on a file type), for
    its `extend_schema(responses={...})`; the standard ones above need no declaration."""
    return OpenApiResponse(ErrorSerializer, description=description)


def page_of(item: type[serializers.Serializer], name: str = "") -> type[serializers.Serializer]:
    """The list envelope of paged endpoints, `{results, count, limit, offset}`, as documented
    response: `page_of(EntitySerializer)` is the `EntityPage` schema (`name` another one)."""
    name = name or item.__name__.removesuffix("Serializer")
    page = type(
        f"{name}PageSerializer",
        (serializers.Serializer,),
        {
            "__module__": item.__module__,
            "__doc__": f"One page of {name} objects.",
            "results": item(many=True),
            "count": serializers.IntegerField(),
            "limit": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
        },
    )
    return extend_schema_serializer(many=False)(page)  # one page object, not a list of them


def path_ids(**kinds: str) -> Any:
    """Type a view class's path ids in the schema (its routes take any string, so that a
    malformed id is the API's JSON 404, not the URL resolver's): `@path_ids(id="uuid")`,
    `@path_ids(memory_pk="uuid", id="int")`."""

    def decorate(view: Any) -> Any:
        view.path_id_types = {name: _ID_TYPES[kind] for name, kind in kinds.items()}
        return view

    return decorate


_ID_TYPES = {"uuid": OpenApiTypes.UUID, "int": OpenApiTypes.INT}
