"""python manage.py reembed [--model NAME] [--project SLUG] [--all] [--abort]"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from maintenance.embedding_switch import (
    SwitchReport,
    embeddings_switch,
    switch_abort,
    switch_in_progress,
)
from maintenance.embeddings import embeddings_refresh, model_changed
from memories.embeddings import EmbedderSpec, configured_spec
from platformcore.lib.errors import ServiceError
from platformcore.lib.project_scope import across_projects
from portability.progress import SectionBars
from tenants.models import Project


class Command(BaseCommand):
    help = (
        "Move every stored vector (memories and their summaries, entities, document chunks) to "
        "another embedding model while searches go on (--model, or the configured model when "
        "it is not the stored one); without a model change, compute the vectors rows lack "
        "(--all: every row again). What the hourly job does for missing vectors."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model",
            help="the model to move to: a sentence-transformers name or directory, or the "
            "server's model name with --provider openai",
        )
        parser.add_argument("--provider", choices=["local", "openai"])
        parser.add_argument("--dimensions", type=int, default=0, help="asked of a remote server")
        parser.add_argument("--query-prompt", help="put before search queries")
        parser.add_argument("--passage-prompt", help="put before stored texts")
        parser.add_argument("--abort", action="store_true", help="drop an unfinished switch")
        parser.add_argument("--project", help="project slug (missing vectors only)")
        parser.add_argument("--all", action="store_true", help="re-embed every row in place")

    @across_projects("manage.py reembed")  # an operator's command: every project
    def handle(self, *args: Any, **options: Any) -> None:
        if options["abort"]:
            dropped = switch_abort()
            self.stdout.write("dropped the unfinished switch" if dropped else "no switch to drop")
            return
        spec = self._target(options)
        if spec is None:
            self._refresh(options)
            return
        bars = SectionBars(quiet=options["verbosity"] == 0, file=self.stderr._out)
        try:
            report = embeddings_switch(spec=spec, progress=bars)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bars.close()
        self._summary(report)

    def _target(self, options: dict[str, Any]) -> EmbedderSpec | None:
        """The model to switch to: the one given, else the configured one when the stored
        vectors come from another model or a switch to it is unfinished; None: no switch."""
        if options["model"]:
            return EmbedderSpec(
                provider=options["provider"] or settings.MEMORY_EMBEDDING_PROVIDER,
                model_name=options["model"],
                dimensions=options["dimensions"],
                query_prompt=options["query_prompt"],
                passage_prompt=options["passage_prompt"],
            )
        if options["all"] or options["project"]:
            return None
        pending = switch_in_progress()
        if pending is not None:
            return pending.spec
        try:
            changed = model_changed()
        except ServiceError as exc:
            raise CommandError(f"the configured embedding model cannot be used: {exc}") from exc
        return configured_spec() if changed else None

    def _refresh(self, options: dict[str, Any]) -> None:
        projects = None
        if options["project"]:
            projects = list(Project.objects.filter(slug=options["project"]))
            if not projects:
                raise CommandError(f"no project {options['project']!r}")
        bars = SectionBars(quiet=options["verbosity"] == 0, file=self.stderr._out)
        try:
            report = embeddings_refresh(
                projects=projects, everything=bool(options["all"]), progress=bars
            )
        finally:
            bars.close()
        done = ", ".join(f"{n} {table}" for table, n in report.embedded.items()) or "nothing"
        self.stdout.write(f"embedded: {done} in {report.seconds:.1f} s")
        if report.space_recorded:
            self.stdout.write("recorded the configured model as the stored vectors' model")
        failed = {table: n for table, n in report.failed.items() if n}
        if failed:
            raise CommandError(f"the provider failed for {failed}; run again later")

    def _summary(self, report: SwitchReport) -> None:
        if not report.switched:
            self.stdout.write(f"the stored vectors already come from {report.target}")
            return
        done = ", ".join(f"{n} {table}" for table, n in report.embedded.items()) or "nothing"
        self.stdout.write(
            f"switched from {report.source} to {report.target} in {report.seconds:.1f} s: "
            f"embedded {done}, indexes built in {report.index_seconds:.1f} s, "
            f"{report.stragglers} rows embedded at the switch, {report.touched} after it"
        )
        if report.model_name != configured_spec().model_name:
            self.stdout.write(
                "running processes now embed with the new model; set MEMORY_EMBEDDING_MODEL "
                "(and MEMORY_EMBEDDING_PROVIDER) to it before the next start"
            )
