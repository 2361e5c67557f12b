"""Import a project from a file `project_export` wrote: checked whole before anything is
written, then written in one transaction, idempotently.

- **Checked first**: every line is parsed and each row's fields checked against its model
  (unknown or missing field, a value the field refuses, a vector of the wrong size, a
  reference to a row the file lacks); the header and the footer's counts must match. Any
  problem: nothing is written, and `ImportRefused` lists each problem's line and field.
- **Ids**: kept as they are, or remapped (`remap`) to ids of the target project's own:
  UUIDs derived from the target project and the old id (the same file imported twice maps to
  the same ids), integer ids found again by the section's natural key or drawn from the
  table's sequence. Keeping ids is for a project moved to another deployment; within one
  deployment the ids are taken by the original, so an import there needs `remap`.
- **Idempotent**: a row whose (mapped) id the project already holds is left as it is.
- **Ids of another project**: the database's primary keys are `(id, project_id)`, so it
  would not refuse an id another project holds; each batch's ids are looked up across every
  project before the batch is written, and any found refuses the import (nothing written).
- **Vectors**: a file without them (`--no-embeddings` on export), or whose vectors come from
  another model than the configured one, gets them computed after the import
  (maintenance/embeddings.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.db import IntegrityError, connection, transaction

from maintenance.embeddings import embeddings_refresh
from memories.services.embedding_space import Space, configured_space, recorded_space
from memories.services.vector_index import index_pending_vectors
from platformcore.lib.bulk import insert_rows
from platformcore.lib.errors import InvalidInput
from platformcore.lib.project_scope import all_projects, project_scope
from portability.exporting import FORMAT, VERSION, open_text
from portability.rows import RowError, key_of, load
from portability.sections import BY_NAME, SECTIONS, Section
from tenants.models import Project
from tenants.services import project_create

BATCH = 1000
MAX_PROBLEMS = 20
NAMESPACE = uuid.UUID("5b0f4a52-4f0c-4d53-9a55-6d656d6f7279")

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Problem:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class ImportRefused(InvalidInput):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(str(problem) for problem in problems)
        super().__init__(
            f"the file was not imported ({len(problems)} problem(s)):\n{lines}",
            fields={
                problem.field: [f"line {problem.line}: {problem.message}"] for problem in problems
            },
        )


@dataclass
class Checked:
    header: dict[str, Any]
    counts: dict[str, int]


@dataclass
class ImportReport:
    project: str
    created_project: bool
    inserted: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    embedded: dict[str, int] = field(default_factory=dict)
    indexed: int = 0  # memories put into the vector index after the write

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- reading and checking ------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or a Problem) for each non-empty line."""
    with open_text(path, "r") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, Problem(number, "line", f"not JSON ({exc.msg})")


def import_check(path: Path) -> Checked:
    """Read the whole file and check it; `ImportRefused` with every problem found (up to
    MAX_PROBLEMS) if any."""
    problems: list[Problem] = []
    seen: dict[str, set[Any]] = {section.name: set() for section in SECTIONS}
    counts = {section.name: 0 for section in SECTIONS}
    header: dict[str, Any] | None = None
    footer: dict[str, Any] | None = None
    order, last = -1, 1
    try:
        for number, body in _lines(path):
            last = number
            if len(problems) >= MAX_PROBLEMS:
                break
            if isinstance(body, Problem):
                problems.append(body)
            elif header is None:
                header = _header(number, body, problems)
            elif not isinstance(body, dict):
                problems.append(Problem(number, "line", "a JSON object expected"))
            elif "footer" in body:
                footer = body["footer"] if isinstance(body["footer"], dict) else {}
                footer["line"] = number
            elif footer is not None:
                problems.append(Problem(number, "line", "a row after the footer"))
            else:
                order = _row(number, body, order, seen, counts, problems, _dimensions(header))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        problems.append(Problem(last, "file", f"cannot be read ({exc})"))
    if header is None:
        problems.append(Problem(1, "header", "missing: not an export of this platform"))
    elif footer is None and len(problems) < MAX_PROBLEMS:
        problems.append(Problem(last, "footer", "missing: the file is truncated"))
    elif footer is not None and footer.get("counts") != counts:
        problems.append(
            Problem(
                footer["line"], "footer.counts", f"{footer.get('counts')} listed, {counts} read"
            )
        )
    if problems:
        raise ImportRefused(problems[:MAX_PROBLEMS])
    assert header is not None
    return Checked(header=header, counts=counts)


def _header(number: int, body: Any, problems: list[Problem]) -> dict[str, Any] | None:
    header = body.get("header") if isinstance(body, dict) else None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        problems.append(
            Problem(number, "header", f"the first line must be the header of a {FORMAT} file")
        )
        return {}
    if not isinstance(header.get("version"), int) or header["version"] > VERSION:
        problems.append(
            Problem(
                number,
                "header.version",
                f"version {header.get('version')!r}; this platform reads up to {VERSION}",
            )
        )
    return header


def _row(
    number: int,
    body: dict[str, Any],
    order: int,
    seen: dict[str, set[Any]],
    counts: dict[str, int],
    problems: list[Problem],
    dimensions: int,
) -> int:
    name = body.get("section")
    section = BY_NAME.get(name) if isinstance(name, str) else None
    if section is None:
        problems.append(Problem(number, "section", f"unknown section {name!r}"))
        return order
    position = SECTIONS.index(section)
    if position < order:
        problems.append(
            Problem(
                number,
                "section",
                f"{name} after {SECTIONS[order].name}: sections must come in export order",
            )
        )
    try:
        values = load(section, body.get("data"), dimensions=dimensions)
    except RowError as exc:
        problems.append(Problem(number, f"{name}.{exc.field}", exc.message))
        return max(order, position)
    for attname, target in section.references.items():
        value = values.get(attname)
        if value is not None and key_of(section.by_attname[attname], value) not in seen[target]:
            problems.append(
                Problem(
                    number,
                    f"{name}.{attname}",
                    f"refers to {target} {value}, which the file lacks before this line",
                )
            )
    seen[name].add(key_of(section.pk, values[section.pk.attname]))
    counts[name] += 1
    return max(order, position)


# --- writing ----------------------------------------------------------------------------


def project_import(
    *,
    path: Path,
    slug: str,
    remap: bool = False,
    embed: bool = True,
    progress: Progress | None = None,
) -> ImportReport:
    """Check the file, then write its rows into project `slug` (made if it does not exist,
    with the name and settings the file carries), one transaction for all of it; then
    compute the vectors the file lacked (unless `embed` is off: the hourly jobs will)."""
    checked = import_check(path)
    recompute = _vectors_unusable(checked.header)
    project, created = _target(slug, checked.header)
    report = ImportReport(project=project.slug, created_project=created)
    with project_scope(project.pk):
        writer = _Writer(
            project,
            remap=remap,
            drop_vectors=recompute,
            dimensions=_dimensions(checked.header),
        )
        writer.progress = (
            (lambda name, done: progress(name, done, checked.counts[name])) if progress else None
        )
        try:
            with transaction.atomic():
                for _number, body in _lines(path):
                    if isinstance(body, dict) and "section" in body:
                        writer.add(BY_NAME[body["section"]], body["data"])
                writer.flush()
        except IntegrityError as exc:
            raise ImportRefused([Problem(0, "rows", _conflict(exc))]) from exc
        report.inserted, report.present = writer.inserted, writer.present
        for section in SECTIONS:
            if section.after_import is not None and report.inserted.get(section.name):
                section.after_import(project=project)
        report.indexed = index_pending_vectors(project=project).indexed
        if embed:
            report.embedded = _embed_missing(project)
    return report


def _dimensions(header: dict[str, Any] | None) -> int:
    """The size of the file's vectors: its header's, else the store's."""
    space = (header or {}).get("embedding_space") or {}
    if isinstance(space.get("dimensions"), int):
        return space["dimensions"]
    return _store_space().dimensions


def _store_space() -> Space:
    return recorded_space() or configured_space()


def _vectors_unusable(header: dict[str, Any]) -> bool:
    """The file's vectors come from another model than the store's."""
    space = header.get("embedding_space") or {}
    configured = _store_space()
    return bool(space) and (space.get("model_name"), space.get("dimensions")) != (
        configured.model_name,
        configured.dimensions,
    )


def _target(slug: str, header: dict[str, Any]) -> tuple[Project, bool]:
    with all_projects(f"import_project: find or create project {slug}"):
        project = Project.objects.filter(slug=slug).first()
        if project is not None:
            return project, False
        described = header.get("project") or {}
        project = project_create(slug=slug, name=described.get("name") or "")
        Project.objects.filter(pk=project.pk).update(
            settings=described.get("settings") or {}, limits=described.get("limits") or {}
        )
        project.refresh_from_db()
        return project, True


def _conflict(exc: IntegrityError) -> str:
    """A constraint the rows broke (ids of another project are refused before, by
    `_Writer._refuse_ids_of_other_projects`)."""
    return str(exc).splitlines()[0]


def _embed_missing(project: Project) -> dict[str, int]:
    return embeddings_refresh(projects=[project], everything=False).embedded


class _Writer:
    """Rows of one section at a time, written BATCH at a time with their ids mapped."""

    def __init__(
        self, project: Project, *, remap: bool, drop_vectors: bool, dimensions: int
    ) -> None:
        self.project = project
        self.dimensions = dimensions
        self.remap = remap
        self.drop_vectors = drop_vectors
        self.ids: dict[str, dict[Any, Any]] = {section.name: {} for section in SECTIONS}
        self.natural: dict[str, dict[tuple[Any, ...], Any]] = {}
        self.namespace = uuid.uuid5(NAMESPACE, f"project:{project.pk}")
        self.batch: list[dict[str, Any]] = []
        self.last_section = ""
        self.inserted = {section.name: 0 for section in SECTIONS}
        self.present = {section.name: 0 for section in SECTIONS}
        self.progress: Callable[[str, int], None] | None = None

    def add(self, section: Section, data: dict[str, Any]) -> None:
        if section.name != self.last_section:
            self.flush()
            self.last_section = section.name
        values = load(section, data, dimensions=self.dimensions)
        if self.drop_vectors:
            for name in section.vector_fields:
                values.pop(name, None)
        if section.prepare is not None:
            section.prepare(values)
        self.batch.append(values)
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        section, rows, self.batch = BY_NAME[self.last_section], self.batch, []
        for row in rows:
            for attname, target in section.references.items():
                if row.get(attname) is not None:
                    row[attname] = self._mapped(target, row[attname])
        old_ids = [row[section.pk.attname] for row in rows]
        new_ids = self._new_ids(section, rows)
        for row, old, new in zip(rows, old_ids, new_ids, strict=True):
            self.ids[section.name][key_of(section.pk, old)] = new
            row[section.pk.attname] = new
        self._refuse_ids_of_other_projects(section, new_ids)
        manager = section.model._default_manager
        existing = set(
            manager.filter(project=self.project, pk__in=new_ids).values_list("pk", flat=True)
        )
        fresh = [row for row in rows if row[section.pk.attname] not in existing]
        insert_rows([section.model(project=self.project, **row) for row in fresh])
        if section.integer_ids and not self.remap and fresh:
            _advance_sequence(section, [row[section.pk.attname] for row in fresh])
        self.inserted[section.name] += len(fresh)
        self.present[section.name] += len(rows) - len(fresh)
        if self.progress:
            self.progress(section.name, len(rows))

    def _refuse_ids_of_other_projects(self, section: Section, ids: list[Any]) -> None:
        """The primary keys are `(id, project_id)` (Citus-ready: docs/scaling.md), so the
        database would take an id another project already holds: a batch's ids are looked
        up here, across every project, before the batch is written."""
        with all_projects(f"import_project: are ids of {section.name} held by another project"):
            taken = list(
                section.model._default_manager.filter(pk__in=ids)
                .exclude(project=self.project)
                .values_list("pk", flat=True)[:3]
            )
        if taken:
            listed = ", ".join(str(pk) for pk in taken)
            message = f"{section.name} {listed}: these ids belong to another project here"
            hint = "" if self.remap else "; import with --remap"
            raise ImportRefused([Problem(0, "rows", message + hint)])

    def _mapped(self, section_name: str, value: Any) -> Any:
        section = BY_NAME[section_name]
        return self.ids[section_name][key_of(section.pk, value)]

    def _new_ids(self, section: Section, rows: list[dict[str, Any]]) -> list[Any]:
        pk = section.pk.attname
        if section.pk.is_relation:  # the id is a reference (an archive's memory), mapped above
            return [row[pk] for row in rows]
        if not self.remap:
            return [row[pk] for row in rows]
        if not section.integer_ids:
            return [uuid.uuid5(self.namespace, f"{section.name}:{row[pk]}") for row in rows]
        known = self._natural_keys(section)
        found = [known.get(tuple(row[name] for name in section.natural_key)) for row in rows]
        drawn = iter(_draw_ids(section, sum(1 for pk_value in found if pk_value is None)))
        ids = [pk_value if pk_value is not None else next(drawn) for pk_value in found]
        for row, new in zip(rows, ids, strict=True):
            known[tuple(row[name] for name in section.natural_key)] = new
        return ids

    def _natural_keys(self, section: Section) -> dict[tuple[Any, ...], Any]:
        if section.name not in self.natural:
            rows = section.model._default_manager.filter(project=self.project)
            self.natural[section.name] = {
                tuple(values[:-1]): values[-1]
                for values in rows.values_list(*section.natural_key, "pk")
            }
        return self.natural[section.name]


def _table(section: Section) -> str:
    return section.model._meta.db_table


def _draw_ids(section: Section, count: int) -> list[int]:
    """New ids as the table's own default draws them (a permuted sequence value for the
    tables whose ids tenants see, memoryplatform/migrations/0003_unguessable_ids.py)."""
    if not count:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a "
            "ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
            "WHERE d.adrelid = %s::regclass AND a.attname = %s",
            [_table(section), section.pk.column],
        )
        found = cursor.fetchone()
        default = found[0] if found else "nextval(pg_get_serial_sequence(%s, %s))"
        params = [] if found else [_table(section), section.pk.column]
        cursor.execute(f"SELECT {default} FROM generate_series(1, %s)", [*params, count])
        return [row[0] for row in cursor.fetchall()]


# A kept id's sequence position counts only below this: ids permuted with another
# installation's keys decode to random positions, which must not use up the sequence.
_PLAUSIBLE_POSITION = 2**40


def _advance_sequence(section: Section, ids: list[int]) -> None:
    """Ids kept from the file: the table's sequence moves past the positions they were drawn
    at (a gap is harmless), so a later id of this installation never repeats one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(seq, greatest(("
            "  SELECT max(position) FROM ("
            "    SELECT memory_permuted_id_position(id) AS position FROM unnest(%s::bigint[]) id"
            "  ) kept WHERE position < %s"
            "), nextval(seq))) FROM pg_get_serial_sequence(%s, %s) AS seq",
            [ids, _PLAUSIBLE_POSITION, _table(section), section.pk.column],
        )
