"""The curator admin: queues, dashboards and details, scoped to the curator's projects, each
change made by the service the API uses (so it writes history)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from analytics.admin import PRESERVE_DAYS
from memories.models import ContradictionReview, Memory, MemoryHistory
from tests.analytics.conftest import age, staff_client
from tests.entities.conftest import build_graph

pytestmark = pytest.mark.django_db
PRUNING = "/admin/analytics/prunecandidate/"
FADED = "/admin/analytics/fadedmemory/"
MEMORIES = "/admin/memories/memory/"
REVIEWS = "/admin/memories/contradictionreview/"


def _act(client: Client, url: str, action: str, *ids: str):
    response = client.post(url, {"action": action, "_selected_action": list(ids)}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def faded(alice, remember) -> dict:
    """An old note (archived, a prune candidate) and an old preference (dormant, exempt)."""
    note = remember("An old note about the staging server")
    preference = remember("Prefers tabs over spaces", memory_type="preference")
    age(note["id"], 400, state="archived", decay_score=0.02)
    age(preference["id"], 400, state="dormant", decay_score=0.3)
    return {"note": note, "preference": preference}


def test_the_pruning_queue_lists_what_the_next_prune_would_remove(curator, faded):
    page = curator.get(PRUNING).content.decode()
    assert "An old note about the staging server" in page
    assert "Prefers tabs over spaces" not in page  # a preference is never pruned


def test_pin_from_the_pruning_queue_takes_the_memory_out_with_history(curator, faded):
    note_id = faded["note"]["id"]
    page = _act(curator, PRUNING, "pin", note_id)
    assert "1 pinned" in page
    assert Memory.objects.get(pk=note_id).pinned
    entry = MemoryHistory.objects.filter(memory_id=note_id, event="UPDATE").get()
    assert (entry.actor, entry.new_values) == ("user:curator", {"pinned": True})
    assert "An old note" not in curator.get(PRUNING).content.decode()


def test_extend_preserves_the_memory_for_a_while(curator, faded):
    note_id = faded["note"]["id"]
    _act(curator, PRUNING, "extend", note_id)
    memory = Memory.objects.get(pk=note_id)
    assert "preserved_until" in memory.metadata
    assert memory.state == "active"
    assert MemoryHistory.objects.filter(memory_id=note_id, event="UPDATE").exists()
    assert PRESERVE_DAYS == 30


def test_delete_now_soft_deletes_with_a_history_entry(curator, faded):
    note_id = faded["note"]["id"]
    assert "1 deleted" in _act(curator, PRUNING, "delete_now", note_id)
    assert Memory.objects.get(pk=note_id).deleted_at is not None
    entry = MemoryHistory.objects.get(memory_id=note_id, event="DELETE")
    assert (entry.actor, entry.new_values) == ("user:curator", {"reason": "pruned"})


def test_dormant_and_archived_memories_are_restored_to_active(curator, faded):
    page = curator.get(FADED).content.decode()
    assert "An old note" in page and "Prefers tabs" in page
    ids = [faded["note"]["id"], faded["preference"]["id"]]
    assert "2 restored to active" in _act(curator, FADED, "restore_to_active", *ids)
    assert set(Memory.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"active"}
    assert MemoryHistory.objects.filter(memory_id__in=ids, actor="user:curator").count() == 2
    assert "An old note" not in curator.get(FADED).content.decode()


def test_the_memory_page_shows_its_versions_as_a_diff_and_its_statistics(alice, curator, remember):
    memory = remember("Deploys run from the main branch", entity_names=["Deploy Bot"])
    alice.patch(f"/api/v1/memories/{memory['id']}/", {"content": "Deploys run from release"})
    page = curator.get(f"{MEMORIES}{memory['id']}/change/").content.decode()
    assert re.search(r'<del class="diff">[^<]*main branch</del>', page)
    assert '<ins class="diff">release</ins>' in page
    assert "Deploy Bot" in page  # entities, through the admin_memory_entities hook
    assert "days since last read" in page


def test_saving_a_memory_in_the_admin_goes_through_the_update_service(curator, remember):
    memory = remember("Deploys run from the main branch", tags=["ops"])
    page = curator.get(f"{MEMORIES}{memory['id']}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data.update(content="Deploys run from the release branch", tags="ops", metadata="{}")
    data = {k: ("" if v is None else v) for k, v in data.items()}
    response = curator.post(f"{MEMORIES}{memory['id']}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    stored = Memory.objects.get(pk=memory["id"])
    assert (stored.content, stored.version) == ("Deploys run from the release branch", 2)
    entry = MemoryHistory.objects.get(memory_id=memory["id"], event="UPDATE")
    assert entry.actor == "user:curator"


def test_the_dashboard_draws_every_chart_from_the_projects_data(alice, curator, remember):
    remember("Prefers dark mode", memory_type="preference", tags=["ui"])
    remember("Chose React", memory_type="decision", tags=["ui"])
    alice.post("/api/v1/memories/search/", {"query": "dark mode"})
    build_graph(alice.project, [("Ada", "works_at", "Acme")])

    page = curator.get(f"/admin/analytics/projectdashboard/{alice.project.pk}/dashboard/")

    html = page.content.decode()
    assert page.status_code == 200
    for chart in ("growth", "types", "states", "confidence", "tags", "searches", "latency"):
        assert f'id="chart-{chart}"' in html
    assert 'data-points="2" role="img" aria-label="memories by type"' in html
    assert "<title>ui: 2</title>" in html
    assert 'aria-label="searches per day"' in html
    # drawn here, nothing loaded from elsewhere (a CSRF token may spell "cdn" by chance)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


def test_an_entitys_neighbourhood_is_drawn_as_a_graph(alice, curator):
    names = build_graph(alice.project, [("Ada", "works_at", "Acme"), ("Acme", "uses", "Python")])
    url = f"/admin/analytics/projectdashboard/{alice.project.pk}/entities/{names['Ada'].pk}/graph/"
    html = curator.get(url).content.decode()
    assert 'class="chart graph" data-points="3"' in html
    assert html.count('class="edge"') == 2
    entity_page = curator.get(f"/admin/entities/entity/{names['Ada'].pk}/change/")
    assert 'class="chart graph"' in entity_page.content.decode()


def test_the_consolidation_preview_changes_nothing_and_apply_merges(alice, curator):
    alice.project.settings = {"dedup_threshold": 1.0}
    alice.project.save()
    for text in (
        "React hooks let you use state in function components",
        "React hooks let function components use state",
    ):
        alice.post("/api/v1/memories/", {"content": text, "user_id": "u1"})
    url = f"/admin/analytics/projectdashboard/{alice.project.pk}/consolidation/"

    preview = curator.get(url).content.decode()

    assert "1 clusters would merge 1 memories" in preview
    assert Memory.objects.filter(deleted_at__isnull=True).count() == 2
    done = curator.post(url, {"apply": "1"}, follow=True).content.decode()
    assert "Consolidated: 1 clusters, 1 memories merged" in done
    assert Memory.objects.filter(deleted_at__isnull=True).count() == 1
    assert MemoryHistory.objects.filter(event="MERGE", actor="user:curator").exists()


def test_the_contradiction_page_diffs_both_memories_and_resolves_with_a_button(
    curator, add, settings
):
    settings.MEMORY_DELETE_DECISIONS = "review"
    add("I am vegetarian")
    add("I started eating meat again")
    review = ContradictionReview.objects.get()
    detail = curator.get(f"{REVIEWS}{review.pk}/change/").content.decode()
    assert 'class="content-diff"' in detail and "<del" in detail
    assert 'name="_resolve" value="keep_b"' in detail

    response = curator.post(f"{REVIEWS}{review.pk}/change/", {"_resolve": "keep_b"}, follow=True)

    assert response.redirect_chain[-1][0] == REVIEWS
    review.refresh_from_db()
    assert (review.status, review.resolved_by) == ("resolved", "user:curator")
    assert "User is vegetarian" not in response.content.decode()  # left the queue
    resolved = curator.get(f"{REVIEWS}{review.pk}/change/").content.decode()
    assert "superseded by" in resolved  # the DELETE the resolution wrote, in its record


# --- scoping: staff limited to projects --------------------------------------------------


def test_a_curator_limited_to_alice_sees_only_alices_rows(alice, bob, alice_curator):
    mine = alice.post("/api/v1/memories/", {"content": "alice note", "user_id": "u"}).json()
    theirs = bob.post("/api/v1/memories/", {"content": "bob note", "user_id": "u"}).json()
    age(mine["id"], 400)
    age(theirs["id"], 400)
    for url in (MEMORIES, PRUNING, "/admin/analytics/projectdashboard/"):
        page = alice_curator.get(url).content.decode()
        assert "bob note" not in page and ">bob<" not in page, url
    assert "alice note" in alice_curator.get(PRUNING).content.decode()
    assert alice_curator.get(f"{MEMORIES}{theirs['id']}/change/").status_code == 302  # gone
    dashboard = f"/admin/analytics/projectdashboard/{bob.project.pk}/dashboard/"
    assert alice_curator.get(dashboard).status_code == 404
    consolidation = f"/admin/analytics/projectdashboard/{bob.project.pk}/consolidation/"
    assert alice_curator.post(consolidation, {"apply": "1"}).status_code == 404


def test_an_action_on_another_projects_rows_changes_nothing(alice, bob, alice_curator):
    theirs = bob.post("/api/v1/memories/", {"content": "bob note", "user_id": "u"}).json()
    age(theirs["id"], 400)
    _act(alice_curator, PRUNING, "delete_now", theirs["id"])
    assert Memory.objects.get(pk=theirs["id"]).deleted_at is None


def test_staff_in_no_project_group_sees_no_rows(alice, remember):
    remember("alice note")
    nobody = staff_client("nobody", projects=[])
    assert nobody.get(MEMORIES).status_code == 403  # no model permission either


def test_a_curator_pauses_and_resumes_a_projects_scheduled_decay(curator, alice):
    from memories.services.decay_control import decay_paused

    dashboards = "/admin/analytics/projectdashboard/"
    project = alice.project
    assert "1 project(s)" in _act(curator, dashboards, "pause_decay", str(project.pk))
    assert decay_paused(project=project)
    assert "paused" in curator.get(dashboards).content.decode()
    _act(curator, dashboards, "resume_decay", str(project.pk))
    assert not decay_paused(project=project)
