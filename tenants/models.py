"""Tenants (projects) and the API keys that reach them."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from platformcore.lib.rates import parse_rate

SCOPES = ("read", "write", "admin")
# Kinds of request with a rate limit each (tenants/throttling.py), and what `Project.limits`
# may set: one of them -> a rate ("600/min", "none"), or "streams" -> open streams per key.
RATE_SCOPES = ("read", "search", "write", "admin")


def validate_limits(value: object) -> None:
    """A project's `limits`: {"search": "100/min", "streams": 5, ...}; null: the default."""
    if not isinstance(value, dict):
        raise ValidationError("limits must be a JSON object")
    errors = []
    for name, given in value.items():
        if name == "streams":
            if given is not None and (type(given) is not int or given < 0):
                errors.append(f"streams: a whole number >= 0 (0 = no cap), got {given!r}")
        elif name in RATE_SCOPES:
            if given is not None and not isinstance(given, str):
                errors.append(f'{name}: a rate as text ("100/min", "none"), got {given!r}')
                continue
            try:
                parse_rate(given)
            except ValueError as exc:
                errors.append(f"{name}: {exc}")
        else:
            errors.append(f"{name}: unknown, expected one of {', '.join(RATE_SCOPES)}, streams")
    if errors:
        raise ValidationError(errors)


class Project(models.Model):
    """A tenant: every memory, entity and key belongs to exactly one project."""

    slug = models.SlugField(
        max_length=64,
        unique=True,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "lowercase letters, digits, hyphens")],
    )
    name = models.CharField(max_length=200, blank=True)
    settings = models.JSONField(
        default=dict, blank=True, help_text="Per-project overrides (PII masking, thresholds...)."
    )
    limits = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_limits],
        help_text="Rate limits and stream cap for this project's keys, over the defaults: "
        '{"read": "600/min", "search": "100/min", "write": "300/min", "admin": "10/min", '
        '"streams": 5}; "none" lifts a limit (docs/security.md).',
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self) -> ApiKeyQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiKey(models.Model):
    """An API key, stored only as a SHA-256 hash; `prefix` is the visible part."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=16), default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["project", "created_at"]
        verbose_name = "API key"
        verbose_name_plural = "API keys"
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=list(SCOPES)), name="apikey_scopes_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.project.slug})"

    @property
    def is_usable(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def has_scope(self, scope: str) -> bool:
        # admin implies write implies read
        rank = {name: index for index, name in enumerate(SCOPES)}
        return any(rank[held] >= rank[scope] for held in self.scopes if held in rank)
