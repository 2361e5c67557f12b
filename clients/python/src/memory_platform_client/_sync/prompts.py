# Generated from _async/prompts.py by clients/python/scripts/unasync.py: do not edit.
"""The project's own instructions for the LLM's fact extraction and update decision
(admin keys; docs/intelligence.md, "A project's own prompts")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from memory_platform_client import _http
from memory_platform_client.types import JSON

if TYPE_CHECKING:
    from memory_platform_client._sync.client import Client

PromptKind = Literal["extraction", "update_decision"]


class Prompts:
    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self, *, kind: PromptKind | None = None) -> JSON:
        """Every version (newest first) and the active version of each kind."""
        return self._client._call("prompts.list", params=_http.query(kind=kind))

    def set(self, kind: PromptKind, text: str) -> JSON:
        """A new version, active at once (appended to our prompt; "" switches it off)."""
        return self._client._call("prompts.set", json={"kind": kind, "text": text})

    def rollback(self, kind: PromptKind, version: int) -> JSON:
        """Re-activate an old version (its text becomes a new version)."""
        json = {"kind": kind, "version": version}
        return self._client._call("prompts.rollback", json=json)
