"""Documents to upload: a Markdown runbook, an HTML page and a PDF built in the test."""

from __future__ import annotations

import io
from typing import Any

import pytest

RUNBOOK = """# Database runbook

Operational notes for the primary PostgreSQL cluster.

## Failover

When the primary stops answering, promote the standby with `pg_ctl promote` and point
the pgbouncer pool at it. Check replication lag first: never promote a standby that is
more than 30 seconds behind.

## Backups

Nightly base backups go to the cold storage bucket; WAL archiving runs continuously.
"""

PAGE = """<html><head><title>Deploy guide</title><style>body { color: red }</style>
<script>var tracking = "nope";</script></head>
<body><h1>Deploying the web tier</h1>
<p>Roll out with the <b>blue-green</b> switch: start the green fleet, run smoke tests,
then flip the load balancer.</p>
<h2>Rollback</h2><p>Flip the load balancer back to blue within five minutes.</p>
</body></html>"""


def pdf_bytes(pages: list[str]) -> bytes:
    """A small PDF whose pages hold `pages`' text (one line each), written by pypdf."""
    from pypdf import PdfWriter
    from pypdf.generic import (
        DecodedStreamObject,
        DictionaryObject,
        NameObject,
    )

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=612, height=792)
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 11 Tf 40 740 Td ({escaped}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def originals_dir(settings: Any, tmp_path: Any) -> Any:
    """Originals over the inline size go to a folder of the test's own."""
    folder = tmp_path / "originals"
    settings.MEMORY_DOCUMENT_STORAGE = f"filesystem:{folder}"
    return folder


@pytest.fixture
def upload(alice: Any, django_capture_on_commit_callbacks: Any):
    """POST a document for alice (JSON `text`, or a multipart `file`), its embedding job run
    as the request commits; returns the response."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    def _upload(
        content: str | bytes,
        *,
        filename: str | None = None,
        mime_type: str | None = None,
        tenant: Any = None,
        **fields: Any,
    ) -> Any:
        tenant = tenant or alice
        fields.setdefault("user_id", "u1")
        with django_capture_on_commit_callbacks(execute=True):
            if filename is None:
                body = {"text": content, **fields}
                if mime_type:
                    body["mime_type"] = mime_type
                return tenant.post("/api/v1/documents/", body)
            data = content.encode() if isinstance(content, str) else content
            file = SimpleUploadedFile(
                filename, data, content_type=mime_type or "application/octet-stream"
            )
            return tenant.client.post(
                "/api/v1/documents/", {"file": file, **fields}, format="multipart"
            )

    return _upload
