"""The MCP document tools (document_add, document_list, document_search) and memory_search
with include_documents, through the SDK's client in-process."""

from __future__ import annotations

import base64

import pytest

from tests.documents.conftest import RUNBOOK, pdf_bytes
from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_a_runbook_and_a_pdf_added_over_mcp_are_found_by_page_with_a_snippet(alice):
    pdf = pdf_bytes(["Contents.", "To rotate TLS certificates run certbot renew."])
    async with in_process(alice) as client:
        runbook = structured(
            await client.call_tool(
                "document_add",
                {
                    "text": RUNBOOK,
                    "mime_type": "text/markdown",
                    "title": "DB runbook",
                    "user_id": "u1",
                },
            )
        )
        manual = structured(
            await client.call_tool(
                "document_add",
                {"content_base64": base64.b64encode(pdf).decode(), "user_id": "u1"},
            )
        )
        again = structured(
            await client.call_tool(
                "document_add", {"text": RUNBOOK, "mime_type": "text/markdown", "user_id": "u1"}
            )
        )
        listed = structured(await client.call_tool("document_list", {"user_id": "u1"}))
        found = structured(
            await client.call_tool(
                "document_search", {"query": "rotate certificates", "user_id": "u1"}
            )
        )
        mixed = structured(
            await client.call_tool(
                "memory_search",
                {"query": "promote the standby", "user_id": "u1", "include_documents": True},
            )
        )
    assert (runbook["created"], again["created"], again["id"]) == (True, False, runbook["id"])
    assert manual["mime_type"] == "application/pdf" and manual["page_count"] == 2
    assert {doc["id"] for doc in listed["results"]} == {runbook["id"], manual["id"]}
    assert all(doc["status"] == "ready" for doc in listed["results"])  # the job ran on commit
    top = found["results"][0]
    assert (top["kind"], top["document_id"], top["page"]) == ("document", manual["id"], 2)
    assert "**certificates**" in top["snippet"]
    assert mixed["sources"] == ["memories", "documents"]
    assert mixed["results"][0]["document_title"] == "DB runbook"
    assert mixed["results"][0]["heading_path"][-1] == "Failover"


async def test_document_tool_errors_name_the_field(alice):
    async with in_process(alice) as client:
        unsupported = await client.call_tool(
            "document_add", {"text": "a,b", "mime_type": "text/csv", "user_id": "u1"}
        )
        neither = await client.call_tool("document_add", {"user_id": "u1"})
        bad_source = await client.call_tool(
            "memory_search", {"query": "x", "sources": ["memories", "emails"]}
        )
    assert unsupported.is_error and "unsupported_media_type" in unsupported.content[0].text
    assert neither.is_error and "text" in neither.content[0].text
    assert bad_source.is_error and "sources" in bad_source.content[0].text


async def test_charlie_finds_and_lists_none_of_alices_documents(alice, charlie):
    async with in_process(alice) as client:
        await client.call_tool("document_add", {"text": RUNBOOK, "user_id": "u1"})
    async with in_process(charlie) as client:
        listed = structured(await client.call_tool("document_list", {}))
        found = structured(await client.call_tool("document_search", {"query": "failover standby"}))
    assert (listed["count"], found["results"]) == (0, [])
