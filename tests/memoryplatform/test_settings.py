"""Settings a deployment relies on without setting them."""

from __future__ import annotations

import stat

from memoryplatform.settings.env import persistent_secret


def test_without_a_configured_key_a_random_one_is_made_once_and_kept_private(tmp_path):
    path = tmp_path / "data" / "secret_key"
    first = persistent_secret(path)
    assert len(first) >= 50
    assert persistent_secret(path) == first  # the next start signs with the same key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    other = persistent_secret(tmp_path / "elsewhere" / "secret_key")
    assert other != first  # never a constant, nor derived from where it is installed
