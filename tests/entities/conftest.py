"""Graph fixtures: build small graphs by name through the services."""

from __future__ import annotations

from typing import Any

import pytest

from entities.models import Entity
from entities.services.graph import graph_bulk_create
from entities.services.relations import NamedRelation, RelationSpec
from tenants.models import Project


def build_graph(project: Project, edges: list[tuple[str, str, str]], **spec: Any) -> dict:
    """Create `source -type-> target` relations (entities auto-created); {name: Entity}."""
    items = [
        NamedRelation(source=s, target=t, spec=RelationSpec(relation_type=kind, **spec))
        for s, kind, t in edges
    ]
    _, results = graph_bulk_create(project=project, entities=[], relations=items)
    names: dict[str, Entity] = {}
    for result in results:
        names[result.relation.source.name] = result.relation.source
        names[result.relation.target.name] = result.relation.target
    return names


@pytest.fixture
def abcd(alice):
    """The seed's graph: A→B, A→C, B→D."""
    return build_graph(
        alice.project,
        [("A", "related_to", "B"), ("A", "related_to", "C"), ("B", "related_to", "D")],
    )
