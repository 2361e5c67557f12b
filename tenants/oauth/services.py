"""Grants and tokens tied to API keys: who stands for a key, what a consent may grant, and
which key (narrowed to which scopes) a bearer token stands for."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from oauth2_provider.models import get_access_token_model

from platformcore.lib.project_scope import all_projects
from tenants.models import SCOPES, ApiKey
from tenants.oauth.models import DelegatedKey, KeyHolder
from tenants.services import KEY_PREFIX, api_key_verify

HOLDER_USERNAME = "oauth-key-{prefix}"


def key_holder(api_key: ApiKey) -> AbstractBaseUser:
    """The user that stands for `api_key` in django-oauth-toolkit's grants and tokens (made
    on the key's first consent; two consents at once: the second finds the first's)."""
    holder = KeyHolder.objects.select_related("user").filter(api_key=api_key).first()
    if holder is not None:
        return holder.user
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(
                username=HOLDER_USERNAME.format(prefix=api_key.prefix), password=None
            )
            KeyHolder.objects.create(api_key=api_key, user=user)
    except IntegrityError:
        return KeyHolder.objects.select_related("user").get(api_key=api_key).user
    return user


def holder_key(user: AbstractBaseUser | None) -> ApiKey | None:
    """The usable API key `user` stands for, or None (no holder, key revoked or expired)."""
    if user is None or user.pk is None:
        return None
    with all_projects("oauth key holder lookup", routine=True):  # the key names the project
        holder = (
            KeyHolder.objects.select_related("api_key__project").filter(user_id=user.pk).first()
        )
    if holder is None or not holder.api_key.is_usable:
        return None
    return holder.api_key


def grantable_scopes(requested: Iterable[str], api_key: ApiKey) -> list[str]:
    """The requested scopes that `api_key` holds (admin implies write implies read), in the
    platform's order: a token never gets more than the key that authorized it."""
    wanted = set(requested)
    return [scope for scope in SCOPES if scope in wanted and api_key.has_scope(scope)]


def access_token_verify(raw_token: str, *, resource: str) -> DelegatedKey | None:
    """The key an OAuth access token stands for, narrowed to the token's scopes, or None:
    unknown, expired or revoked token, token not meant for `resource` (RFC 8707), key revoked
    or expired, or no scope left."""
    checksum = hashlib.sha256(raw_token.encode()).hexdigest()
    with all_projects("oauth token lookup", routine=True):  # the token names the project
        token = (
            get_access_token_model()
            .objects.select_related("user__api_key_holder__api_key__project")
            .filter(token_checksum=checksum)
            .first()
        )
    if token is None or token.is_expired() or not token.allows_audience(resource):
        return None
    holder = getattr(token.user, "api_key_holder", None) if token.user else None
    if holder is None or not holder.api_key.is_usable:
        return None
    scopes = grantable_scopes(token.scope.split(), holder.api_key)
    return _delegated(holder.api_key, scopes) if scopes else None


def bearer_verify(raw: str, resource: str) -> ApiKey | None:
    """What a bearer credential stands for: an API key (`mp_…`) or an OAuth access token."""
    if raw.startswith(KEY_PREFIX):
        return api_key_verify(raw)
    return access_token_verify(raw, resource=resource)


def _delegated(api_key: ApiKey, scopes: list[str]) -> DelegatedKey:
    fields = ApiKey._meta.concrete_fields
    values = {field.attname: getattr(api_key, field.attname) for field in fields}
    delegated = DelegatedKey(**{**values, "scopes": scopes})
    delegated._state.adding = False
    DelegatedKey.project.field.set_cached_value(delegated, api_key.project)
    return delegated
