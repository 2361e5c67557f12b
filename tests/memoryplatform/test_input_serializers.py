"""Input serializers share one set of bound fields per class (FieldsBuiltOnce): validations
stay independent of each other, in sequence and across threads, and errors still name the
field."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from memories.api.search import SearchRequestSerializer
from memories.api.serializers import MemoryListQuerySerializer


def validate(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid()
    return serializer


def test_fields_are_built_once_per_class() -> None:
    first = SearchRequestSerializer(data={"query": "a"})
    second = SearchRequestSerializer(data={"query": "b"})
    assert first.fields is second.fields
    listing = MemoryListQuerySerializer(data={})
    assert listing.fields is not first.fields  # a subclass keeps its own set
    assert set(listing.fields) < set(first.fields) | {"limit", "offset", "include_deleted"}


def test_defaults_are_fresh_for_every_validation() -> None:
    first = validate(SearchRequestSerializer, {"query": "dark mode"})
    first.validated_data["tags"].append("leaked")
    first.validated_data["state"].append("archived")
    second = validate(SearchRequestSerializer, {"query": "dark mode"})
    assert second.validated_data["tags"] == []
    assert second.validated_data["state"] == []  # every lifecycle state


def test_an_invalid_request_does_not_affect_the_next() -> None:
    bad = validate(
        SearchRequestSerializer,
        {"query": "x", "limit": 0, "memory_types": ["nonsense"], "min_confidence": "high"},
    )
    assert set(bad.errors) >= {"limit", "min_confidence"}
    good = validate(SearchRequestSerializer, {"query": "x", "limit": 5, "memory_types": ["fact"]})
    assert good.errors == {}
    assert good.validated_data["limit"] == 5
    assert good.validated_data["memory_type"] == ["fact"]
    unknown_type = validate(SearchRequestSerializer, {"query": "x", "memory_types": ["nonsense"]})
    assert "memory_types" in unknown_type.errors


def test_concurrent_validations_keep_their_own_data() -> None:
    def run(number: int):
        data = {"query": f"question {number}", "limit": 1 + number % 50, "user_id": f"u{number}"}
        if number % 3 == 0:
            data["limit"] = 1000  # invalid: over the page size
        serializer = validate(SearchRequestSerializer, data)
        return number, serializer.errors, dict(serializer.validated_data or {})

    with ThreadPoolExecutor(max_workers=8) as pool:
        for number, errors, validated in pool.map(run, range(400)):
            if number % 3 == 0:
                assert "limit" in errors
            else:
                assert errors == {}
                assert validated["query"] == f"question {number}"
                assert validated["user_id"] == f"u{number}"
                assert validated["limit"] == 1 + number % 50
