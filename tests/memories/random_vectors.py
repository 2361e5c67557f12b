"""Memories with random unit vectors, stored directly: for tests of the vector index itself,
where what the vectors mean does not matter and the encoder would only cost time."""

from __future__ import annotations

import numpy as np

from memories.models import Memory
from memories.services.content import content_hash
from tenants.models import Project


def random_vector_memories(
    project: Project, count: int, *, seed: int = 3, vector_pending: bool = False
) -> list[Memory]:
    vectors = np.random.default_rng(seed).normal(size=(count, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Memory.objects.bulk_create(
        Memory(
            project=project,
            content=f"memory {i}",
            content_hash=content_hash(f"memory {i}"),
            embedding=vector.tolist(),
            user_id="u1",
            vector_pending=vector_pending,
        )
        for i, vector in enumerate(vectors)
    )
