"""Shared plumbing of the maintenance commands: which projects, a progress bar, a summary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from tenants.models import Project


def add_project_argument(parser: CommandParser) -> None:
    parser.add_argument("--project", help="project slug (default: every project)")


def projects(slug: str | None) -> list[Project]:
    if slug is None:
        return list(Project.objects.all())
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"no project {slug!r}")
    return [project]


@contextmanager
def progress_bar(total: int | None, description: str, quiet: bool) -> Iterator[Any]:
    bar = tqdm(total=total, desc=description, unit="mem", disable=quiet, leave=False)
    try:
        yield bar
    finally:
        bar.close()
