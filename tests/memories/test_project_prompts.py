"""A project's own instructions for fact extraction and the update decision: set by admin
keys (REST and MCP), versioned, rolled back as a new version, and appended (quoted) to our
prompts in what the model receives, never replacing them.

The real `openai` client talks to a local fake server (tests/fakes/openai_server.py)."""

from __future__ import annotations

import json

import pytest

from memories.services.fact_extraction.llm import FACT_EXTRACTION_PROMPT, UPDATE_MEMORY_PROMPT
from platformcore.llm import DATA_RULE
from tests.conftest import make_tenant
from tests.mcpserver.conftest import in_process, structured

URL = "/api/v1/project/prompts/"


@pytest.fixture(autouse=True)
def _only_the_calls_under_test(settings):
    settings.MEMORY_UTILITY_SCORING = False


def _system(request: dict) -> str:
    return request["body"]["messages"][0]["content"]


def _put(tenant, kind: str, text: str):
    return tenant.client.put(URL, {"kind": kind, "text": text}, format="json")


def test_the_model_receives_the_projects_instructions_after_ours_for_both_steps(alice, fake_openai):
    assert _put(alice, "extraction", "Also extract the user's favourite editor.").status_code == 201
    assert _put(alice, "update_decision", "Prefer UPDATE over ADD.").status_code == 201
    fake_openai.reply({"facts": ["User likes Vim"]}, {"memory": [{"event": "ADD"}]})

    response = alice.post("/api/v1/memories/add/", {"messages": "I use vim", "user_id": "u1"})

    assert response.status_code == 200, response.json()
    extraction, decision = (_system(r) for r in fake_openai.chat_requests())
    assert extraction.startswith(FACT_EXTRACTION_PROMPT) and DATA_RULE in extraction
    quoted = json.dumps("Also extract the user's favourite editor.")
    assert extraction.index(DATA_RULE) < extraction.index(quoted)
    assert "Instructions of this project (version 1" in extraction
    assert decision.startswith(UPDATE_MEMORY_PROMPT) and DATA_RULE in decision
    assert decision.endswith(json.dumps("Prefer UPDATE over ADD."))
    assert "favourite editor" not in decision


def test_each_change_is_a_new_version_and_only_the_newest_is_active(alice):
    for text in ("first", "second"):
        assert _put(alice, "extraction", text).status_code == 201

    body = alice.client.get(URL).json()

    assert [(p["version"], p["text"], p["active"]) for p in body["results"]] == [
        (2, "second", True),
        (1, "first", False),
    ]
    assert body["active"] == {"extraction": 2}
    assert body["results"][0]["created_by"] in alice.key  # the key's prefix, never the key


def test_a_rollback_reactivates_an_old_text_as_a_new_version(alice, fake_openai):
    _put(alice, "extraction", "old rule")
    _put(alice, "extraction", "newer text")

    response = alice.client.post(
        URL + "rollback/", {"kind": "extraction", "version": 1}, format="json"
    )

    assert response.status_code == 201, response.json()
    assert (response.json()["version"], response.json()["text"]) == (3, "old rule")
    assert response.json()["rolled_back_from"] == 1
    fake_openai.reply({"facts": []})
    alice.post("/api/v1/memories/add/", {"messages": "hello", "user_id": "u1"})
    system = _system(fake_openai.chat_requests()[0])
    assert json.dumps("old rule") in system and "newer text" not in system


def test_an_empty_text_switches_the_instructions_off(alice, fake_openai):
    _put(alice, "extraction", "some rule")
    _put(alice, "extraction", "")
    fake_openai.reply({"facts": []})

    alice.post("/api/v1/memories/add/", {"messages": "hello", "user_id": "u1"})

    assert "Instructions of this project" not in _system(fake_openai.chat_requests()[0])
    assert alice.client.get(URL).json()["active"] == {}


def test_a_key_without_the_admin_scope_gets_403_on_every_route(alice):
    writer = make_tenant(alice.project.slug, scopes=["read", "write"])
    _put(alice, "extraction", "rule")

    assert writer.client.get(URL).status_code == 403
    assert _put(writer, "extraction", "mine").status_code == 403
    rollback = writer.post(URL + "rollback/", {"kind": "extraction", "version": 1})
    assert rollback.status_code == 403
    assert [p["text"] for p in alice.client.get(URL).json()["results"]] == ["rule"]


def test_bad_input_is_a_400_naming_the_field(alice):
    assert "kind" in _put(alice, "summary", "x").json()["error"]["fields"]
    too_long = _put(alice, "extraction", "x" * 4001)
    assert too_long.status_code == 400 and "text" in too_long.json()["error"]["fields"]
    missing = alice.client.post(
        URL + "rollback/", {"kind": "extraction", "version": 7}, format="json"
    )
    assert missing.status_code == 404


def test_one_projects_prompts_are_invisible_and_inert_in_another(alice, charlie, fake_openai):
    _put(alice, "extraction", "alice's rule")
    fake_openai.reply({"facts": []})

    charlie.post("/api/v1/memories/add/", {"messages": "hello", "user_id": "u1"})

    assert charlie.client.get(URL).json() == {"results": [], "active": {}}
    assert "alice's rule" not in _system(fake_openai.chat_requests()[0])
    rollback = charlie.post(URL + "rollback/", {"kind": "extraction", "version": 1})
    assert rollback.status_code == 404


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_tools_set_list_and_roll_back_for_admin_keys_only(alice):
    async with in_process(alice) as client:
        set_ = structured(
            await client.call_tool("project_prompt_set", {"kind": "extraction", "text": "v1"})
        )
        await client.call_tool("project_prompt_set", {"kind": "extraction", "text": "v2"})
        back = structured(
            await client.call_tool("project_prompt_rollback", {"kind": "extraction", "version": 1})
        )
        listed = structured(await client.call_tool("project_prompts", {}))
    assert (set_["version"], back["version"], back["text"]) == (1, 3, "v1")
    assert listed["active"] == {"extraction": 3}

    from asgiref.sync import sync_to_async

    writer = await sync_to_async(make_tenant)(alice.project.slug, ["read", "write"])
    async with in_process(writer) as client:
        refused = await client.call_tool("project_prompts", {})
    assert refused.is_error and "admin" in refused.content[0].text
