"""`manage.py check --deploy` is clean for a production deployment (a public host name behind
a TLS proxy, a real secret) and warns for the embedded default on localhost, where secure
cookies would stop the admin's login over plain HTTP."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest
from django.conf import settings

from tests.mcpserver.conftest import child_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

PRODUCTION = {
    "MEMORY_ALLOWED_HOSTS": "memory.example.com",
    "MEMORY_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "MEMORY_HSTS_PRELOAD": "true",
}


def _check_deploy(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=child_env(MEMORY_TESTING="false", MEMORY_SECRET_KEY=secrets.token_urlsafe(50), **env),
        cwd=str(settings.BASE_DIR),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_production_deployment_passes_every_deploy_check() -> None:
    result = _check_deploy(**PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_the_local_default_is_told_what_a_public_deployment_needs() -> None:
    result = _check_deploy()
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W010", "security.W016"):
        assert warning in result.stderr
