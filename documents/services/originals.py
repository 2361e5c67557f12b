"""Original bytes of documents: kept on upload, read to download or re-chunk, deleted with
their document, carried by exports and backups (documents.storage says where they live).

A file is written before the upload's transaction commits (its name is the new document's
id, so a failed upload leaves at most one file nobody points at) and deleted after a delete
commits (a rolled-back delete loses nothing)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any
from uuid import UUID

from django.core.files.base import ContentFile
from django.db import transaction

from documents.models import Document, DocumentOriginal
from documents.storage import kept_inline, original_storage, storage_name
from platformcore.lib.errors import Conflict, NotFound
from tenants.models import Project

MAX_FILENAME = 500


def original_keep(
    *, project: Project, document: Document, data: bytes, filename: str = ""
) -> DocumentOriginal:
    """Keep the bytes `document` was uploaded as."""
    original = DocumentOriginal(
        document=document,
        project=project,
        filename=(filename or "")[:MAX_FILENAME],
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    if kept_inline(len(data)):
        original.data = data
    else:
        original.storage_name = _written(storage_name(project.pk, document.pk), data)
    original.save(force_insert=True)
    return original


def _written(name: str, data: bytes) -> str:
    storage = original_storage()
    assert storage is not None
    return str(storage.save(name, ContentFile(data)))


def original_get(*, project: Project, document: Document) -> DocumentOriginal:
    """The document's original; NotFound for a document stored before originals were kept."""
    original = DocumentOriginal.objects.filter(project=project, document=document).first()
    if original is None:
        message = "this document was stored before originals were kept: upload it again"
        raise NotFound(message, fields={"original": [message]})
    return original


def original_chunks(original: DocumentOriginal, block: int = 1 << 20) -> Iterator[bytes]:
    """The original's bytes, a block at a time (a file is streamed, not read whole)."""
    if original.data is not None:
        yield bytes(original.data)
        return
    storage = original_storage()
    if storage is None:
        raise Conflict("the original is in a file storage that is not configured")
    with storage.open(original.storage_name, "rb") as handle:
        while data := handle.read(block):
            yield data


def original_bytes(*, project: Project, document: Document) -> bytes:
    """All of the original, checked against the hash it was stored with (409 if it differs
    or is missing: re-chunking it would cut other text than the document's)."""
    try:
        original = original_get(project=project, document=document)
    except NotFound as exc:
        raise Conflict(exc.message, fields={"original": [exc.message]}) from exc
    data = b"".join(original_chunks(original))
    if hashlib.sha256(data).hexdigest() != original.sha256:
        message = "the stored original does not match what was uploaded"
        raise Conflict(message, fields={"original": [message]})
    return data


def originals_delete(*, project: Project, documents: Iterable[UUID] | None) -> int:
    """Delete the originals of these documents (all of the project's: None), their files
    once the transaction commits."""
    rows = DocumentOriginal.objects.filter(project=project)
    if documents is not None:
        rows = rows.filter(document_id__in=list(documents))
    names = list(rows.exclude(storage_name="").values_list("storage_name", flat=True))
    if names:
        transaction.on_commit(partial(_delete_files, names))
    return int(rows.delete()[0])


def _delete_files(names: list[str]) -> None:
    storage = original_storage()
    for name in names if storage is not None else []:
        storage.delete(name)


def originals_settle(*, project: Project) -> int:
    """Move originals the database holds but should not (an import carries every original
    inline) into the configured storage; how many moved."""
    if original_storage() is None:
        return 0
    moved = 0
    rows = DocumentOriginal.objects.filter(project=project, data__isnull=False)
    for original in rows.iterator(chunk_size=20):
        data = bytes(original.data)
        if kept_inline(len(data)):
            continue
        name = _written(storage_name(project.pk, original.document_id), data)
        DocumentOriginal.objects.filter(project=project, pk=original.pk).update(
            data=None, storage_name=name
        )
        moved += 1
    return moved


# --- exports and backups ----------------------------------------------------------------


def inline_for_export(values: dict[str, Any]) -> None:
    """An exported original carries its bytes, wherever they are kept here."""
    if values.get("data") is None and values.get("storage_name"):
        storage = original_storage()
        if storage is None:
            raise Conflict(f"original {values['storage_name']}: no file storage configured")
        with storage.open(values["storage_name"], "rb") as handle:
            values["data"] = handle.read()
        values["storage_name"] = ""


def original_file_read(name: str) -> bytes:
    storage = original_storage()
    if storage is None:
        raise Conflict(f"original {name}: no file storage configured")
    with storage.open(name, "rb") as handle:
        return bytes(handle.read())


def original_file_put(name: str, data: bytes, *, using: str = "default") -> None:
    """A backed-up file back under its name; with the database as storage, into the rows
    that name it."""
    storage = original_storage()
    rows = DocumentOriginal.objects.using(using).filter(storage_name=name)
    if storage is None:
        rows.update(data=data, storage_name="")
        return
    written = storage.save(name, ContentFile(data))
    if written != name:
        rows.update(storage_name=written)
