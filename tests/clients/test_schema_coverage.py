"""The SDK covers the whole REST API: the OpenAPI schema, generated in-process, lists each
operation under /api/v1/, and the SDK's operation table must reach every one through a
method of both clients, each method sending the operation it declares. The generated sync
client must match its async source."""

from __future__ import annotations

import functools
import importlib.util
import inspect
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator
from memory_platform_client import AsyncClient, Client
from memory_platform_client.operations import API, NOT_IN_SCHEMA, OPERATIONS

SCRIPTS = Path(__file__).resolve().parents[2] / "clients" / "python" / "scripts"
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def schema_operations() -> dict[tuple[str, str], str]:
    """(METHOD, path) -> operationId for every operation of the REST API."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), path): operation["operationId"]
        for path, item in schema["paths"].items()
        if path.startswith(API + "/")
        for method, operation in item.items()
        if method in METHODS
    }


def _sdk_operations() -> set[tuple[str, str]]:
    return {(op.method, op.path) for op in OPERATIONS.values()}


def test_every_api_operation_is_reachable_through_an_sdk_method(schema_operations) -> None:
    missing = {
        f"{schema_operations[key]} ({key[0]} {key[1]})"
        for key in set(schema_operations) - _sdk_operations()
    }
    assert not missing, f"operations without an SDK method: {sorted(missing)}"


def test_every_sdk_operation_exists_in_the_api(schema_operations) -> None:
    unknown = _sdk_operations() - set(schema_operations) - NOT_IN_SCHEMA
    assert not unknown, f"SDK methods calling no API operation: {sorted(unknown)}"


@pytest.mark.parametrize("client_class", [Client, AsyncClient])
def test_each_entry_of_the_table_is_a_method_that_sends_its_operation(client_class) -> None:
    client = client_class("mp_unused", url="http://platform.test")
    for name in OPERATIONS:
        method = functools.reduce(getattr, name.split("."), client)
        assert callable(method), name
        assert f'"{name}"' in inspect.getsource(method), f"{name} does not send its operation"


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    spec = importlib.util.spec_from_file_location("unasync", SCRIPTS / "unasync.py")
    assert spec and spec.loader
    unasync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(unasync)
    stale = [str(p) for p, text in unasync.generated().items() if p.read_text() != text]
    assert not stale, f"run clients/python/scripts/unasync.py: {stale}"


def test_the_sdk_imports_without_django() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memory_platform_client, memory_platform_client.cli;"
        "assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")
