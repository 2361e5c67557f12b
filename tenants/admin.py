"""The Django admin of tenants, and the project scoping every curator admin shares.

Who curates what: a superuser curates every project. A staff user curates the projects
whose group they belong to: the Django group named `project:<slug>` (create it in the admin,
put the curators in it, and give the group or the user the usual model permissions). A staff
user in no such group sees no project's rows. Every admin list, detail page, action and custom
view of the curator admin goes through `ProjectScopedAdmin`, so a curator limited to some
projects sees and changes only their rows; another project's row is a 404, as in the API.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest

from tenants.models import ApiKey, Project

CURATOR_GROUP_PREFIX = "project:"


def curated_projects(user: Any) -> QuerySet[Project]:
    """The projects `user` may curate in the admin (see the module docstring)."""
    if not (user.is_active and user.is_staff):
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    slugs = [
        name.removeprefix(CURATOR_GROUP_PREFIX)
        for name in user.groups.values_list("name", flat=True)
        if name.startswith(CURATOR_GROUP_PREFIX)
    ]
    return Project.objects.filter(slug__in=slugs)


def curated_project(request: HttpRequest, project_id: Any) -> Project:
    """One project the request's user curates, or 404."""
    project = curated_projects(request.user).filter(pk=_int_or_none(project_id)).first()
    if project is None:
        raise Http404("no such project")
    return project


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class ProjectScopedAdmin(admin.ModelAdmin):
    """A model admin whose rows belong to a project (`project_field`): lists, detail pages,
    actions and foreign-key choices show only the curator's projects."""

    project_field = "project"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        lookup = f"{self.project_field}__in"
        return queryset.filter(**{lookup: curated_projects(request.user)})

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.related_model is Project:
            kwargs["queryset"] = curated_projects(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request: HttpRequest) -> Any:
        """The project filter offers only the curator's projects."""
        return [
            (name, admin.RelatedOnlyFieldListFilter) if name == self.project_field else name
            for name in super().get_list_filter(request)
        ]

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return super().has_view_permission(request, obj) and self._curates(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._curates(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return super().has_delete_permission(request, obj) and self._curates(request, obj)

    def _curates(self, request: HttpRequest, obj: Model | None) -> bool:
        if obj is None or request.user.is_superuser:
            return True
        attribute = "pk" if self.project_field == "pk" else f"{self.project_field}_id"
        project_id = getattr(obj, attribute)
        return curated_projects(request.user).filter(pk=project_id).exists()


@admin.register(Project)
class ProjectAdmin(ProjectScopedAdmin):
    project_field = "pk"
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser  # a new tenant is not one curator's to make


@admin.register(ApiKey)
class ApiKeyAdmin(ProjectScopedAdmin):
    list_display = [
        "prefix",
        "project",
        "name",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["project", "revoked_at"]
    search_fields = ["prefix", "name", "project__slug"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
