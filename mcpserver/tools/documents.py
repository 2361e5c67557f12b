"""Document tools: add a document (text, or a PDF as base64), list them, search their
passages. The same services and representations as the REST endpoints."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import Field

from documents.models import DocumentStatus
from documents.refs import RELATIONS, RefInput, document_learn, memory_details, memory_ref_create
from documents.representations import document_body
from documents.selectors.documents import DocumentFilters, document_list
from documents.services import Upload, document_create
from mcpserver.auth import actor_for
from mcpserver.tools import call, page_body
from mcpserver.tools.memory import DEFAULT_AGENT_ID, AgentId, RunId, UserId
from mcpserver.tools.search import SearchMode, search_sources_tool
from memories.selectors.filters import MemoryFilters
from memories.selectors.memories import memory_get
from memories.selectors.search.sources import DOCUMENTS
from memories.selectors.search_types import SearchQuery
from platformcore.lib.errors import InvalidInput
from tenants.models import ApiKey

Status = Literal[tuple(DocumentStatus.values)]  # type: ignore[valid-type]


async def document_add(
    text: Annotated[
        str | None, Field(description="The document's text (plain text, Markdown or HTML)")
    ] = None,
    content_base64: Annotated[
        str | None, Field(description="A binary document (a PDF), base64-encoded")
    ] = None,
    mime_type: Annotated[
        str | None,
        Field(
            description="text/plain (default for text), text/markdown, text/html, application/pdf"
        ),
    ] = None,
    title: str = "",
    source: Annotated[str, Field(description="Where it came from: a URL or a path")] = "",
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Store a document (a runbook, a PDF, a web page) so its passages can be searched:
    it is cut into chunks by headings, paragraphs and pages and embedded in the background
    (`progress`). The same content in the same scope returns the stored document with
    created=false. Without user_id/agent_id/run_id it is stored for agent_id "default"."""
    if not (user_id or agent_id or run_id):
        agent_id = DEFAULT_AGENT_ID
    scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}

    def run(key: ApiKey) -> dict[str, Any]:
        upload = Upload(
            data=_bytes(text, content_base64),
            mime_type=mime_type or ("text/plain" if text is not None else None),
            title=title,
            source=source,
            metadata=metadata or {},
            scope=scope,
        )
        added = document_create(project=key.project, upload=upload)
        return {**document_body(added.document), "created": added.created}

    return await call("write", run)


def _bytes(text: str | None, content_base64: str | None) -> bytes:
    if (text is None) == (content_base64 is None):
        message = "give exactly one of text or content_base64"
        raise InvalidInput(message, fields={"text": [message]})
    if text is not None:
        return text.encode()
    try:
        return base64.b64decode(content_base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(
            "not valid base64", fields={"content_base64": ["not valid base64"]}
        ) from exc


async def document_list_tool(
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    status: Status | None = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    """List stored documents, newest first, with their status and embedding progress."""
    filters = DocumentFilters(user_id=user_id, agent_id=agent_id, run_id=run_id, status=status)

    def run(key: ApiKey) -> dict[str, Any]:
        page = document_list(project=key.project, filters=filters, limit=limit, offset=offset)
        return page_body(page, document_body)

    return await call("read", run)


async def document_search(
    query: Annotated[str, Field(min_length=1, description="What to look for, in plain words")],
    mode: Annotated[
        SearchMode, Field(description="hybrid (default): keywords + meaning")
    ] = "hybrid",
    user_id: UserId = None,
    agent_id: AgentId = None,
    run_id: RunId = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    token_budget: Annotated[
        int | None, Field(ge=1, description="Stop adding passages past this many tokens")
    ] = None,
) -> dict[str, Any]:
    """Find passages of stored documents, best first: each with its document's id and
    title, page, position and heading path, and a snippet with the query's words in bold.
    (memory_search with include_documents searches memories and passages together.)"""
    search = SearchQuery(
        text=query,
        mode=mode,
        filters=MemoryFilters(user_id=user_id, agent_id=agent_id, run_id=run_id),
        limit=limit,
        token_budget=token_budget or settings.MEMORY_MCP_MAX_RESULT_TOKENS,
    )
    return await search_sources_tool(search, [DOCUMENTS])


Relation = Literal[tuple(RELATIONS)]  # type: ignore[valid-type]


async def memory_cite(
    memory_id: Annotated[str, Field(description="The memory (UUID)")],
    chunk_id: Annotated[int, Field(ge=1, description="The document chunk it rests on")],
    quote: Annotated[str, Field(description="The words it quotes from the chunk")] = "",
    relation: Relation = "cites",
) -> dict[str, Any]:
    """Record that a memory cites a passage (a chunk from document_search): the memory's
    reads then list the chunk with its document and page, and the document lists the
    memory."""

    def run(key: ApiKey) -> dict[str, Any]:
        ref = RefInput(chunk_id=chunk_id, quote=quote, relation=relation)
        memory_ref_create(project=key.project, memory_id=memory_id, ref=ref)
        memory = memory_get(project=key.project, memory_id=memory_id)
        return memory_details(project=key.project, memory=memory)

    return await call("write", run)


async def document_learn_tool(
    document_id: Annotated[str, Field(description="The document (UUID)")],
    chunk_ids: Annotated[
        list[int] | None, Field(description="Only these chunks (default: all)", max_length=1000)
    ] = None,
) -> dict[str, Any]:
    """Learn a document's facts: extract them from its chunks into memories (the
    documentary layer), each citing the chunk it came from; facts already known are matched,
    not repeated."""

    def run(key: ApiKey) -> dict[str, Any]:
        return document_learn(
            project=key.project, document_id=document_id, actor=actor_for(key), chunk_ids=chunk_ids
        )

    return await call("write", run)
