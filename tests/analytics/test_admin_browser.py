"""The curator admin driven in a real browser: Debian's headless Chromium through Playwright,
against a live server on the test database. Screenshots of each step are saved under
var/test-artifacts/ (git-ignored) for a human to look at after a CI run.

Chromium comes from the system (`apt-get install -y chromium`), never from a download of
Playwright's own browser build: the machines that run the tests have no internet beyond the
package registries. Without the binary the tests skip and say so."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from analytics.services.search_stats import search_stats_flush
from memories.models import ContradictionReview, Memory, MemoryHistory
from tests.analytics.conftest import age

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("MEMORY_TEST_CHROMIUM") or shutil.which("chromium") or ""
ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test-artifacts"
TIMEOUT_MS = 30_000


@pytest.fixture
def login(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], Any]]:
    """Opens a logged-in curator's tab on the live server. The browser starts on the first
    call: tests store their data first, since Playwright's sync API runs an event loop in
    this thread from its start, and writes made inside it could not send their live-feed
    events."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("Chromium not found: apt-get install -y chromium (or MEMORY_TEST_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    get_user_model().objects.create_superuser("curator", "curator@example.com", "pw")
    started: list[Any] = []

    def open_tab() -> Any:
        if not started:
            # the test's own ORM calls between browser steps stay plain synchronous ones
            monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
            playwright = sync_api.sync_playwright().start()
            started.append(playwright)
            started.append(
                playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
                )
            )
        tab = started[1].new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(TIMEOUT_MS)
        tab.goto(f"{live_server.url}/admin/login/")
        tab.fill("#id_username", "curator")
        tab.fill("#id_password", "pw")
        tab.click("input[type=submit]")
        tab.wait_for_selector("#user-tools")
        tab.base = live_server.url
        return tab

    yield open_tab
    if started:
        started[1].close()
        started[0].stop()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def messages(page: Any) -> str:
    return page.inner_text("ul.messagelist")


def test_a_curator_resolves_a_contradiction_and_it_leaves_the_queue(login, add, settings):
    settings.MEMORY_DELETE_DECISIONS = "review"
    add("I am vegetarian")
    add("I started eating meat again")
    review = ContradictionReview.objects.get()
    page = login()
    page.goto(f"{page.base}/admin/memories/contradictionreview/")
    assert "User is vegetarian" in page.inner_text("#result_list")
    shot(page, "contradiction-queue")

    page.click("#result_list tbody tr th a")
    page.wait_for_selector(".content-diff")
    assert page.locator(".content-diff del").count() > 0
    shot(page, "contradiction-detail")
    page.click("button[name=_resolve][value=keep_b]")
    page.wait_for_selector("ul.messagelist")

    assert "1 resolved (Keep B)" in messages(page)
    assert page.url.endswith("/admin/memories/contradictionreview/")
    assert "User is vegetarian" not in page.inner_text("#content")
    shot(page, "contradiction-resolved")
    review.refresh_from_db()
    assert (review.status, review.resolution, review.resolved_by) == (
        "resolved",
        "keep_b",
        "user:curator",
    )


def test_a_curator_pins_a_memory_from_the_pruning_queue(login, remember):
    note = remember("An old note about the staging server")
    kept = remember("Another old note about the build cache")
    for memory in (note, kept):
        age(memory["id"], 400)
    page = login()
    page.goto(f"{page.base}/admin/analytics/prunecandidate/")
    assert "An old note about the staging server" in page.inner_text("#result_list")
    shot(page, "pruning-queue")

    page.check(f"input[name=_selected_action][value='{note['id']}']")
    page.select_option("select[name=action]", "pin")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist")

    assert "1 pinned" in messages(page)
    rows = page.inner_text("#result_list")
    assert "staging server" not in rows and "build cache" in rows
    shot(page, "pruning-queue-pinned")
    assert Memory.objects.get(pk=note["id"]).pinned
    assert MemoryHistory.objects.filter(memory_id=note["id"], actor="user:curator").exists()


def test_the_dashboard_shows_charts_drawn_from_the_projects_data(login, alice, remember):
    remember("Prefers dark mode", memory_type="preference", tags=["ui"])
    remember("Chose React for the dashboard", memory_type="decision", tags=["ui", "frontend"])
    remember("The deploy failed on a missing key", memory_type="error", tags=["ops"])
    alice.post("/api/v1/memories/search/", {"query": "dark mode", "mode": "keyword"})
    search_stats_flush()  # written by a background thread within a second otherwise
    page = login()
    page.goto(f"{page.base}/admin/analytics/projectdashboard/")
    page.locator("#result_list").get_by_role("link", name="dashboard", exact=True).click()
    page.wait_for_selector("#chart-types svg.chart")

    types = page.locator("#chart-types svg.chart")
    assert types.get_attribute("data-points") == "3"
    assert page.locator("#chart-types rect.bar").count() == 3
    box = types.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 20
    assert page.locator("#chart-tags rect.bar").count() == 3
    assert page.inner_text("#total-memories") == "3"
    assert page.locator("#chart-searches svg.chart").get_attribute("data-points") == "1"
    shot(page, "dashboard")
