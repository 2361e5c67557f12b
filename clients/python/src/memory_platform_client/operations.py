"""Which REST operation each client method calls: one table, keyed by the method's dotted name
on a client (`"memories.search"` is `client.memories.search`).

Every method sends its request through this table, so the table is the client's map of the
API. A test compares it with the platform's OpenAPI schema: each operation under `/api/v1/`
must be reachable through a method, and each method must name a real operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

API = "/api/v1"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # an OpenAPI path template: /api/v1/memories/{id}/

    def url(self, **values: object) -> str:
        encoded = {name: quote(str(value), safe="") for name, value in values.items()}
        return self.path.format(**encoded)


def _op(method: str, path: str) -> Operation:
    return Operation(method, API + path)


OPERATIONS: dict[str, Operation] = {
    # memories
    "memories.list": _op("GET", "/memories/"),
    "memories.iter": _op("GET", "/memories/"),
    "memories.create": _op("POST", "/memories/"),
    "memories.delete_scope": _op("DELETE", "/memories/"),
    "memories.create_many": _op("POST", "/memories/bulk/"),
    "memories.get": _op("GET", "/memories/{id}/"),
    "memories.update": _op("PATCH", "/memories/{id}/"),
    "memories.replace": _op("PUT", "/memories/{id}/"),
    "memories.delete": _op("DELETE", "/memories/{id}/"),
    "memories.history": _op("GET", "/memories/{id}/history/"),
    "memories.restore": _op("POST", "/memories/{id}/restore/"),
    "memories.search": _op("POST", "/memories/search/"),
    "memories.iter_search": _op("POST", "/memories/search/"),
    "memories.search_get": _op("GET", "/memories/search/"),
    "memories.add": _op("POST", "/memories/add/"),
    "memories.traverse": _op("GET", "/memories/{memory_pk}/traverse/"),
    "memories.causal_chain": _op("GET", "/memories/{memory_pk}/causal-chain/"),
    "memories.entities": _op("GET", "/memories/{memory_pk}/entities/"),
    "memories.utility": _op("GET", "/memories/{id}/utility/"),
    "memories.feedback": _op("POST", "/memories/{id}/feedback/"),
    # links between memories
    "links.list": _op("GET", "/memories/{memory_pk}/links/"),
    "links.create": _op("POST", "/memories/{memory_pk}/links/"),
    "links.delete": _op("DELETE", "/memories/{memory_pk}/links/{id}/"),
    # lifecycle: consolidation, decay, pruning
    "lifecycle.consolidate": _op("POST", "/memories/consolidate/"),
    "lifecycle.run_decay": _op("POST", "/memories/decay/"),
    "lifecycle.decay_control": _op("GET", "/memories/decay/"),
    "lifecycle.pause_decay": _op("POST", "/memories/decay/pause/"),
    "lifecycle.resume_decay": _op("POST", "/memories/decay/resume/"),
    "lifecycle.decay_status": _op("GET", "/memories/{id}/decay/"),
    "lifecycle.set_decay_rate": _op("PATCH", "/memories/{id}/decay/"),
    "lifecycle.decompress": _op("POST", "/memories/{id}/decompress/"),
    "lifecycle.preserve": _op("POST", "/memories/{id}/preserve/"),
    "lifecycle.prune_candidates": _op("GET", "/memories/prune/"),
    "lifecycle.iter_prune_candidates": _op("GET", "/memories/prune/"),
    "lifecycle.prune": _op("POST", "/memories/prune/"),
    # contradiction reviews
    "contradictions.list": _op("GET", "/contradictions/"),
    "contradictions.get": _op("GET", "/contradictions/{id}/"),
    "contradictions.resolve": _op("POST", "/contradictions/{id}/resolve/"),
    # session start and end
    "session.reflect": _op("POST", "/session/reflect/"),
    "session.context": _op("POST", "/session/context/"),
    "session.close": _op("POST", "/session/close/"),
    # knowledge graph
    "entities.list": _op("GET", "/entities/"),
    "entities.iter": _op("GET", "/entities/"),
    "entities.create": _op("POST", "/entities/"),
    "entities.get": _op("GET", "/entities/{id}/"),
    "entities.update": _op("PATCH", "/entities/{id}/"),
    "entities.replace": _op("PUT", "/entities/{id}/"),
    "entities.delete": _op("DELETE", "/entities/{id}/"),
    "entities.graph": _op("GET", "/entities/{id}/graph/"),
    "entities.memories": _op("GET", "/entities/{id}/memories/"),
    "entities.iter_memories": _op("GET", "/entities/{id}/memories/"),
    "relations.list": _op("GET", "/relations/"),
    "relations.iter": _op("GET", "/relations/"),
    "relations.create": _op("POST", "/relations/"),
    "relations.get": _op("GET", "/relations/{id}/"),
    "relations.delete": _op("DELETE", "/relations/{id}/"),
    "relations.close": _op("POST", "/relations/{id}/close/"),
    "relations.delete_by_name": _op("POST", "/relations/delete-by-name/"),
    "graph.bulk": _op("POST", "/graph/bulk/"),
    "graph.analysis": _op("GET", "/graph/analysis/"),
    "graph.export": _op("GET", "/graph/export/"),
    "graph.export_graphml": _op("GET", "/graph/export/graphml/"),
    "graph.subgraph": _op("GET", "/graph/subgraph/"),
    "tags.list": _op("GET", "/tags/"),
    "tags.get": _op("GET", "/tags/{name}/"),
    "tags.describe": _op("PUT", "/tags/{name}/"),
    "tags.forget": _op("DELETE", "/tags/{name}/"),
    # the project's own LLM instructions (admin keys)
    "prompts.list": _op("GET", "/project/prompts/"),
    "prompts.set": _op("PUT", "/project/prompts/"),
    "prompts.rollback": _op("POST", "/project/prompts/rollback/"),
    # uploaded documents and their chunks
    "documents.upload": _op("POST", "/documents/"),
    "documents.list": _op("GET", "/documents/"),
    "documents.iter": _op("GET", "/documents/"),
    "documents.get": _op("GET", "/documents/{id}/"),
    "documents.delete": _op("DELETE", "/documents/{id}/"),
    "documents.chunks": _op("GET", "/documents/{id}/chunks/"),
    "documents.iter_chunks": _op("GET", "/documents/{id}/chunks/"),
    "documents.learn": _op("POST", "/documents/{id}/learn/"),
    "documents.original": _op("GET", "/documents/{id}/original/"),
    "documents.rechunk": _op("POST", "/documents/{id}/rechunk/"),
    "documents.refs": _op("GET", "/memories/{id}/document-refs/"),
    "documents.cite": _op("POST", "/memories/{id}/document-refs/"),
    "documents.uncite": _op("DELETE", "/memories/{id}/document-refs/{chunk_id}/"),
    # episodes: a conversation or task and the memories stored during it
    "episodes.start": _op("POST", "/episodes/"),
    "episodes.list": _op("GET", "/episodes/"),
    "episodes.get": _op("GET", "/episodes/{id}/"),
    "episodes.close": _op("POST", "/episodes/{id}/close/"),
    # the whole project as a file (admin keys)
    "exports.create": _op("POST", "/exports/"),
    "exports.get": _op("GET", "/exports/{id}/"),
    "exports.download": _op("GET", "/exports/{id}/download/"),
    # analytics
    "analytics.overview": _op("GET", "/analytics/overview/"),
    "analytics.growth": _op("GET", "/analytics/growth/"),
    "analytics.types": _op("GET", "/analytics/types/"),
    "analytics.tags": _op("GET", "/analytics/tags/"),
    "analytics.confidence": _op("GET", "/analytics/confidence/"),
    "analytics.search": _op("GET", "/analytics/search/"),
    "analytics.relations": _op("GET", "/analytics/relations/"),
    "analytics.feedback": _op("GET", "/analytics/feedback/"),
    # live feed (Server-Sent Events; a plain Django view, outside the OpenAPI schema)
    "events.stream": _op("GET", "/events/"),
    # the whole project
    "reset": _op("POST", "/reset/"),
}

# operations that exist but that the OpenAPI schema does not describe
NOT_IN_SCHEMA = frozenset({("GET", API + "/events/")})
