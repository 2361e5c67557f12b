"""How client secrets are stored."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class ClientSecretHasher(PBKDF2PasswordHasher):
    """A salted HMAC-SHA256 of an OAuth client secret. Secrets are 128 random characters, not
    passwords a person chose: stretching them buys nothing, and at the default 1,000,000
    PBKDF2 iterations every anonymous registration (which makes a secret even for a public
    client) and every confidential client's token request cost ~0.5 s of CPU."""

    algorithm = "oauth_client_secret"
    iterations = 1
