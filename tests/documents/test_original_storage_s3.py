"""Originals in an S3-compatible object store (django-storages), against a local fake S3
(moto's server, on the loopback interface)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from documents.models import DocumentOriginal
from tests.documents.conftest import pdf_bytes

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
boto3 = pytest.importorskip("boto3")
pytest.importorskip("storages")
moto_server = pytest.importorskip("moto.server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fake_s3(settings: object) -> Iterator[object]:
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    client.create_bucket(Bucket="memory-originals")
    settings.MEMORY_DOCUMENT_STORAGE = "s3://memory-originals/docs"
    settings.MEMORY_DOCUMENT_S3_ENDPOINT_URL = endpoint
    settings.MEMORY_DOCUMENT_S3_REGION = "us-east-1"
    settings.MEMORY_DOCUMENT_S3_ACCESS_KEY_ID = "test"
    settings.MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY = "test"
    settings.MEMORY_DOCUMENT_INLINE_BYTES = 0
    try:
        yield client
    finally:
        server.stop()


def test_an_original_in_s3_downloads_byte_for_byte_and_leaves_with_its_document(
    alice, upload, fake_s3, django_capture_on_commit_callbacks
):
    pdf = pdf_bytes(["Failover starts with promoting the standby."])
    body = upload(pdf, filename="ops.pdf").json()
    kept = DocumentOriginal.objects.get(document_id=body["id"])
    key = f"docs/{kept.storage_name}"
    assert fake_s3.get_object(Bucket="memory-originals", Key=key)["Body"].read() == pdf
    assert alice.get(f"/api/v1/documents/{body['id']}/original/").content == pdf
    with django_capture_on_commit_callbacks(execute=True):
        alice.delete(f"/api/v1/documents/{body['id']}/")
    listed = fake_s3.list_objects_v2(Bucket="memory-originals", Prefix="docs/")
    assert listed.get("KeyCount", 0) == 0
