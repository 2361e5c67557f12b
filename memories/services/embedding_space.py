"""Which embedding model the stored vectors come from, and whether it is still configured.

Vectors of two models are not comparable: searching 384-d MiniLM vectors with another model's
query vector returns confident nonsense. The model that produced the stored vectors is kept
in one `EmbeddingSpace` row (recorded on the first migrate, and again when `manage.py
reembed` finishes); a system check compares it with the configured provider whenever checks
run against the database (`migrate`, hence `serve` and the container start, and `check
--database default`).

A running process embeds with the configured model until `manage.py reembed --model` switches
the store under it (the row's `generation` counts live switches); from then on it embeds with
the store's model (`store_embedder`), read again every MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import DatabaseError, connection

from memories.embeddings import Embedder, EmbedderSpec, build_embedder, get_embedder
from memories.models import EmbeddingSpace
from platformcore.lib.errors import ProviderError

WAY_OUT = (
    "Either set MEMORY_EMBEDDING_PROVIDER/MEMORY_EMBEDDING_MODEL back to the recorded model, "
    "or move the stored vectors to the configured one: python manage.py reembed --model "
    "<the configured model> (searches keep answering while it runs; it records the model "
    "when it finishes)."
)


@dataclass(frozen=True)
class Space:
    provider: str
    model_name: str
    dimensions: int
    query_prompt: str | None = None  # None: the model's own
    passage_prompt: str | None = None
    requested_dimensions: int = 0  # asked of a remote server; 0: its model's own

    def __str__(self) -> str:
        return f"{self.provider}:{self.model_name} ({self.dimensions} dimensions)"

    @property
    def options(self) -> dict[str, Any]:
        options = {"query_prompt": self.query_prompt, "passage_prompt": self.passage_prompt}
        if self.requested_dimensions:
            options["requested_dimensions"] = self.requested_dimensions
        return {key: value for key, value in options.items() if value is not None}

    @property
    def spec(self) -> EmbedderSpec:
        return EmbedderSpec(
            provider=self.provider,
            model_name=self.model_name,
            dimensions=self.requested_dimensions,
            query_prompt=self.query_prompt,
            passage_prompt=self.passage_prompt,
        )

    @classmethod
    def of(cls, row: EmbeddingSpace) -> Space:
        options = row.options or {}
        return cls(
            row.provider,
            row.model_name,
            row.dimensions,
            options.get("query_prompt"),
            options.get("passage_prompt"),
            int(options.get("requested_dimensions") or 0),
        )


def space_of(spec: EmbedderSpec, embedder: Embedder | None = None) -> Space:
    """The space an embedder's vectors live in (its dimension learnt from the model)."""
    embedder = embedder or build_embedder(spec)
    return Space(
        spec.provider,
        spec.model_name,
        embedder.dimensions,
        spec.query_prompt,
        spec.passage_prompt,
        spec.dimensions if spec.provider == "openai" else 0,
    )


def configured_space() -> Space:
    embedder = get_embedder()
    spec = EmbedderSpec(
        settings.MEMORY_EMBEDDING_PROVIDER,
        embedder.model_name,
        settings.MEMORY_EMBEDDING_DIMENSIONS,
        settings.MEMORY_EMBEDDING_QUERY_PROMPT,
        settings.MEMORY_EMBEDDING_PASSAGE_PROMPT,
    )
    try:
        return space_of(spec, embedder)
    except ProviderError:
        # a remote model's size is learnt from the server; while it is down, the recorded
        # size of the same model stands (a start does not wait for the embedding server)
        recorded = _recorded_or_none()
        if spec.provider != "openai" or recorded is None or recorded.model_name != spec.model_name:
            raise
        return replace(recorded, provider=spec.provider)


def _recorded_or_none() -> Space | None:
    try:
        return recorded_space()
    except DatabaseError:
        return None


def recorded_space(*, using: str = "default", key: str = "default") -> Space | None:
    row = EmbeddingSpace.objects.using(using).filter(key=key).first()
    return Space.of(row) if row else None


def embedding_space_record(*, space: Space | None = None, using: str = "default") -> Space:
    space = space or configured_space()
    EmbeddingSpace.objects.using(using).update_or_create(
        key="default",
        defaults={
            "provider": space.provider,
            "model_name": space.model_name,
            "dimensions": space.dimensions,
            "options": space.options,
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


# --- a process following the store -----------------------------------------------------------


class _Followed:
    """What this process last read of the store's model: the model a live switch moved it
    to, and the one an announced switch is about to move it to."""

    def __init__(self) -> None:
        self.checked = float("-inf")
        self.space: Space | None = None
        self.next: Space | None = None

    def refresh(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.checked < settings.MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS:
            return
        try:
            rows = {row.key: row for row in EmbeddingSpace.objects.filter(key__in=KEYS)}
        except DatabaseError:  # no table yet, or a transaction in error: keep what we know
            return
        self.checked = now
        current, upcoming = rows.get("default"), rows.get("next")
        self.space = Space.of(current) if current is not None and current.generation else None
        announced = upcoming is not None and upcoming.stage == "switching"
        self.next = Space.of(upcoming) if announced else None


KEYS = ("default", "next")
followed = _Followed()


def store_embedder(*, recheck: bool = False) -> Embedder:
    """The embedder whose vectors the store holds: the configured one, unless a live switch
    (`manage.py reembed --model`) has moved the store to another model; then that model's
    (a restart then asks for the setting: the start-up check)."""
    followed.refresh(force=recheck)
    space = followed.space
    configured = get_embedder()
    if space is None or space.model_name == configured.model_name:
        return configured
    return build_embedder(space.spec)


SWITCH_LOCK = 4_518_423_045  # advisory lock: a write's embedding and the switch's columns


def store_embedder_for_write() -> Embedder:
    """`store_embedder` for vectors about to be written. While a switch is announced, a write
    inside a transaction first takes the switch's lock shared (the switch takes it alone, so
    it waits for such writes and they for it), then reads the store's model afresh: its
    vectors always have the type of the column they go to."""
    followed.refresh()
    if followed.next is None:
        return store_embedder()
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [SWITCH_LOCK])
    return store_embedder(recheck=True)


def switch_announced() -> bool:
    return followed.next is not None


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
        try:
            configured = configured_space()
        except ProviderError as exc:
            errors.append(
                checks.Error(
                    f"the configured embedding model cannot be used: {exc}",
                    hint="Set MEMORY_EMBEDDING_MODEL to a sentence-transformers model name "
                    "in the local cache, a model directory, or a model the server serves.",
                    id="memories.E002",
                )
            )
            continue
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
