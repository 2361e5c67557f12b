"""Which embedding model the stored vectors come from, and whether it is still configured.

Vectors of two models are not comparable: searching 384-d MiniLM vectors with another model's
query vector returns confident nonsense. The model that produced the stored vectors is kept
in one `EmbeddingSpace` row (recorded on the first migrate, and again after a complete
`backfill_embeddings --reembed-all`); a system check compares it with the configured provider
whenever checks run against the database (`migrate`, hence `serve` and the container start,
and `check --database default`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from memories.embeddings import get_embedder
from memories.models import EmbeddingSpace

WAY_OUT = (
    "Either set MEMORY_EMBEDDING_PROVIDER/MEMORY_EMBEDDING_MODEL back to the recorded model, "
    "or re-embed every memory with the new one: python manage.py backfill_embeddings "
    "--reembed-all (it records the new model when it finishes)."
)


@dataclass(frozen=True)
class Space:
    provider: str
    model_name: str
    dimensions: int

    def __str__(self) -> str:
        return f"{self.provider}:{self.model_name} ({self.dimensions} dimensions)"


def configured_space() -> Space:
    embedder = get_embedder()
    return Space(settings.MEMORY_EMBEDDING_PROVIDER, embedder.model_name, embedder.dimensions)


def recorded_space(*, using: str = "default") -> Space | None:
    row = EmbeddingSpace.objects.using(using).filter(key="default").first()
    return Space(row.provider, row.model_name, row.dimensions) if row else None


def embedding_space_record(*, space: Space | None = None, using: str = "default") -> Space:
    space = space or configured_space()
    EmbeddingSpace.objects.using(using).update_or_create(
        key="default",
        defaults={
            "provider": space.provider,
            "model_name": space.model_name,
            "dimensions": space.dimensions,
        },
    )
    return space


def same_space(a: Space, b: Space) -> bool:
    """The provider may change (say, the same model served by vLLM); the model may not."""
    return (a.model_name, a.dimensions) == (b.model_name, b.dimensions)


def record_if_missing(using: str = "default", **kwargs: Any) -> None:
    """post_migrate: the first migrate records the configured model."""
    if recorded_space(using=using) is None:
        embedding_space_record(using=using)


@checks.register(checks.Tags.database)
def check_embedding_space(
    app_configs: Any = None, databases: list[str] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for alias in databases or []:
        try:
            recorded = recorded_space(using=alias)
        except DatabaseError:  # not migrated yet: nothing recorded, nothing to compare
            continue
        configured = configured_space()
        if recorded is not None and not same_space(recorded, configured):
            errors.append(
                checks.Error(
                    f"the stored embeddings come from {recorded}, but the configured "
                    f"embedding model is {configured}",
                    hint=WAY_OUT,
                    id="memories.E001",
                )
            )
    return errors
