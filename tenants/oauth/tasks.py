"""OAuth's background job: expired and revoked tokens and grants are deleted daily
(django-oauth-toolkit's `cleartokens`), so the tables hold what can still be used."""

from __future__ import annotations

from oauth2_provider.models import clear_expired

from platformcore.lib.db_outage import survives_db_outage


@survives_db_outage
def clear_expired_tokens() -> None:
    clear_expired()
