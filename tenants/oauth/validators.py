"""django-oauth-toolkit's validator held to OAuth 2.1 and to the API key behind each grant."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from tenants.oauth.services import holder_key

GRANT_TYPES = ("authorization_code", "refresh_token")


class KeyBoundValidator(OAuth2Validator):
    """Only the authorization-code grant (with PKCE S256) and refresh tokens; a code or a
    refresh token is honoured only while the API key that authorized it is usable."""

    def validate_response_type(
        self, client_id: str, response_type: str, client: Any, request: Any, *args: Any, **kw: Any
    ) -> bool:
        if response_type != "code":  # no implicit grant, no hybrid
            return False
        return bool(super().validate_response_type(client_id, response_type, client, request))

    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if grant_type not in GRANT_TYPES:  # no password, no client credentials
            return False
        return bool(super().validate_grant_type(client_id, grant_type, client, request))

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        valid = super().validate_code(client_id, code, client, request)
        return bool(valid) and holder_key(request.user) is not None

    def validate_refresh_token(
        self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        valid = super().validate_refresh_token(refresh_token, client, request)
        return bool(valid) and holder_key(request.user) is not None

    def _create_authorization_code(
        self, request: Any, code: dict[str, str], expires: datetime | None = None
    ) -> Any:
        if request.code_challenge_method != "S256":  # missing or "plain"
            raise errors.InvalidRequestError(
                description='PKCE with code_challenge_method "S256" is required.', request=request
            )
        return super()._create_authorization_code(request, code, expires)
