"""Where the original bytes of uploaded documents are kept (MEMORY_DOCUMENT_STORAGE).

- `filesystem` (the default): files under MEMORY_DATA_DIR/documents; `filesystem:/path` (or
  an absolute path) elsewhere;
- `database`: every original in the database, beside its document;
- `s3://bucket/prefix`: an S3-compatible object store through django-storages (the `s3`
  extra), with MEMORY_DOCUMENT_S3_ENDPOINT_URL, _REGION, _ACCESS_KEY_ID and
  _SECRET_ACCESS_KEY (the last two may come from *_FILE).

Whatever the backend, an original of at most MEMORY_DOCUMENT_INLINE_BYTES stays in the
database: one row read, no file to keep in step. Files are named `<project id>/<document
id>`, written before the upload commits and deleted after a delete commits.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import FileSystemStorage, Storage


def storage_kind(value: str) -> tuple[str, str]:
    """("database" | "filesystem" | "s3", where) of a MEMORY_DOCUMENT_STORAGE value."""
    value = value.strip()
    match value.split(":", 1):
        case ["database"]:
            return "database", ""
        case ["filesystem"]:
            return "filesystem", str(Path(settings.DATA_DIR) / "documents")
        case ["filesystem", path] if path:
            return "filesystem", path
        case ["s3", location] if location.startswith("//") and location[2:].strip("/"):
            return "s3", location[2:].strip("/")
        case [path] if path.startswith("/"):
            return "filesystem", path
        case _:
            raise ImproperlyConfigured(
                "MEMORY_DOCUMENT_STORAGE must be database, filesystem[:path], an absolute path "
                f"or s3://bucket[/prefix], got {value!r}"
            )


def original_storage() -> Storage | None:
    """The backend of originals not kept in the database; None for `database`."""
    return _storage(settings.MEMORY_DOCUMENT_STORAGE)


@functools.cache
def _storage(value: str) -> Storage | None:
    kind, where = storage_kind(value)
    match kind:
        case "database":
            return None
        case "filesystem":
            return FileSystemStorage(location=where, allow_overwrite=True)
        case "s3":
            return _s3(where)
        case _:
            raise ImproperlyConfigured(f"unknown document storage {kind!r}")


def _s3(location: str) -> Any:
    try:
        # imported here: django-storages is optional (the s3 extra) and slow to import
        from storages.backends.s3 import S3Storage
    except ImportError as exc:
        raise ImproperlyConfigured(
            "MEMORY_DOCUMENT_STORAGE=s3://… needs django-storages and boto3: "
            "pip install 'memory-platform[s3]'"
        ) from exc
    bucket, _, prefix = location.partition("/")
    return S3Storage(
        bucket_name=bucket,
        location=prefix,
        endpoint_url=settings.MEMORY_DOCUMENT_S3_ENDPOINT_URL or None,
        region_name=settings.MEMORY_DOCUMENT_S3_REGION or None,
        access_key=settings.MEMORY_DOCUMENT_S3_ACCESS_KEY_ID or None,
        secret_key=settings.MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY or None,
        file_overwrite=True,
        default_acl=None,
        querystring_auth=False,
    )


def kept_inline(size: int) -> bool:
    """Whether an original of `size` bytes stays in the database."""
    return original_storage() is None or size <= settings.MEMORY_DOCUMENT_INLINE_BYTES


def storage_name(project_id: int, document_id: Any) -> str:
    return f"{project_id}/{document_id}"
