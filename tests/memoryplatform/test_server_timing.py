"""Where a request's time went: the `Server-Timing` header (platformcore/lib/stages.py), as a
client or a browser's developer tools read it."""

from __future__ import annotations

import re
import threading

from platformcore.lib import stages

_ENTRY = re.compile(r"^([a-z_]+);dur=(\d+\.\d)$")


def _timings(response) -> dict[str, float]:
    entries = [_ENTRY.match(part.strip()) for part in response["Server-Timing"].split(",")]
    assert all(entries), response["Server-Timing"]
    return {match.group(1): float(match.group(2)) for match in entries}  # type: ignore[union-attr]


def test_a_hybrid_search_tells_each_stage_and_the_total(alice) -> None:
    alice.post(
        "/api/v1/memories/",
        {"content": "Weekly planning happens on Monday mornings", "user_id": "u1"},
    )
    response = alice.post("/api/v1/memories/search/", {"query": "when do we plan the week"})
    assert response.status_code == 200 and response.json()["results"]
    timings = _timings(response)
    for name in ("auth", "keyword", "embed", "vector", "fusion", "neighbours", "rows"):
        assert name in timings, timings
    assert list(timings)[-1] == "total"
    # the sides that ran one after the other on the request's thread fit within the total
    assert timings["auth"] + timings["fusion"] + timings["rows"] <= timings["total"]


def test_a_store_tells_its_stages(alice) -> None:
    response = alice.post(
        "/api/v1/memories/", {"content": "The design team uses Figma", "user_id": "u1"}
    )
    assert response.status_code == 201
    assert {"auth", "duplicate", "embed", "near_duplicate", "insert"} <= set(_timings(response))


def test_a_request_that_went_through_no_stage_has_no_header(anonymous) -> None:
    assert "Server-Timing" not in anonymous.get("/health/live")


def test_work_handed_to_another_thread_adds_to_the_callers_record() -> None:
    with stages.recording() as record:
        with stages.stage("here"):
            pass
        worker = threading.Thread(target=stages.carrying(lambda: _timed("there")))
        worker.start()
        worker.join()
        _timed("here")
    assert list(record.seconds) == ["here", "there"]
    assert record.header(0.0123).endswith("total;dur=12.3")


def test_outside_a_record_a_stage_costs_nothing_and_keeps_nothing() -> None:
    _timed("anywhere")  # no error, nothing to keep it in


def _timed(name: str) -> None:
    with stages.stage(name):
        pass
