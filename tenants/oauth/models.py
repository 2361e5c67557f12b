"""How an API key appears in django-oauth-toolkit's tables, and how a token appears to us.

Neither table has a `project_id`: django-oauth-toolkit's tables and this one are looked up
before the caller's project is known (a token names the project), so they live outside
row-level security, as `tenants_apikey` is read by its lookup under an audited
`all_projects` scope.
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models

from tenants.models import ApiKey


class KeyHolder(models.Model):
    """The Django user that stands for one API key: django-oauth-toolkit records grants and
    tokens against a user, and tenants have no user accounts. The user has no password and
    no staff rights; it cannot log in anywhere."""

    api_key = models.OneToOneField(ApiKey, on_delete=models.CASCADE, related_name="oauth_holder")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_key_holder"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "OAuth key holder"

    def __str__(self) -> str:
        return f"{self.user} → {self.api_key_id}"


class DelegatedKey(ApiKey):
    """An API key as an OAuth access token presents it: the key's project and prefix (what
    history records as the actor), the token's scopes. Built per request, never saved."""

    class Meta:
        proxy = True

    def save(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a DelegatedKey is a view of an API key through a token; never saved")

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a DelegatedKey is a view of an API key through a token; never deleted")
