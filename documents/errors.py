"""The refusals peculiar to uploads; every entry point maps them as any ServiceError."""

from __future__ import annotations

from platformcore.lib.errors import ServiceError


class TooLarge(ServiceError):
    """An upload over a size cap (bytes, pages, chunks)."""

    code = "too_large"
    status = 413


class UnsupportedType(ServiceError):
    """An upload of a type the platform cannot read."""

    code = "unsupported_media_type"
    status = 415
