"""memoryctl: the platform from a shell.

    memoryctl add "User prefers dark mode" --user-id alice --tag ui
    memoryctl search "what theme?" --user-id alice
    memoryctl list --user-id alice --all --json | jq ...

The key and URL come from --api-key / --url or MEMORY_API_KEY / MEMORY_URL. Output is a table
for people, or JSON with --json. Exit status: 0 done, 1 the platform refused or failed the
request, 2 bad usage or configuration, 3 the key was refused (401/403), 4 not found,
5 the platform could not be reached.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from memory_platform_client import __version__
from memory_platform_client._sync import Client
from memory_platform_client.errors import (
    APIConnectionError,
    AuthenticationError,
    ConfigurationError,
    MemoryPlatformError,
    NotFound,
    PermissionDenied,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_NOT_FOUND, EXIT_UNREACHABLE = range(6)
MEMORY_TYPES = [
    "fact",
    "decision",
    "preference",
    "error",
    "procedure",
    "observation",
    "learning",
    "pattern",
    "relation",
    "episode",
]
# what `export` writes and `import` reads: one `POST /api/v1/memories/` body per line
# (the format of `manage.py import_memories` too)
EXPORT_FIELDS = (
    "content",
    "memory_type",
    "tags",
    "confidence",
    "importance",
    "source",
    "context",
    "metadata",
    "user_id",
    "agent_id",
    "run_id",
    "pinned",
    "expires_at",
    "occurred_at",
)
BULK_LIMIT = 1000


class UsageError(Exception):
    """Bad arguments or input found before anything was sent."""


# --- arguments ---------------------------------------------------------------------------


def _common() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name (`memoryctl --json list`
    and `memoryctl list --json`)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="platform URL (MEMORY_URL)")
    common.add_argument("--api-key", default=argparse.SUPPRESS, help="API key (MEMORY_API_KEY)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    common.add_argument(
        "--timeout", type=float, default=argparse.SUPPRESS, help="seconds per request (30)"
    )
    return common


def _scope(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user-id")
    parser.add_argument("--agent-id")
    parser.add_argument("--run-id")


def _filters(parser: argparse.ArgumentParser) -> None:
    _scope(parser)
    parser.add_argument("--type", action="append", choices=MEMORY_TYPES, dest="memory_type")
    parser.add_argument("--tag", action="append", dest="tags", help="all given tags must match")
    parser.add_argument("--source")
    parser.add_argument("--state", action="append", help="active, dormant, archived")
    parser.add_argument("--filters", help="a JSON filter expression (AND/OR/NOT)")


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="memoryctl",
        description="Store, search and manage memories on a Memory Platform.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help, description=help, parents=[common])

    add = command("add", "store a memory (or, with --infer, extract facts from a text)")
    add.add_argument("content", help="the text; - reads it from stdin")
    _scope(add)
    add.add_argument("--type", choices=MEMORY_TYPES, dest="memory_type")
    add.add_argument("--tag", action="append", dest="tags")
    add.add_argument("--importance", type=float)
    add.add_argument("--source")
    add.add_argument("--metadata", help="a JSON object")
    add.add_argument("--pinned", action="store_true", default=None)
    add.add_argument(
        "--infer", action="store_true", help="run the add pipeline: facts, merges, updates"
    )

    search = command("search", "search memories by meaning and keywords")
    search.add_argument("query")
    search.add_argument("--mode", choices=["hybrid", "keyword", "semantic", "graph"])
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--min-similarity", type=float)
    _filters(search)

    listing = command("list", "list memories, newest first")
    _filters(listing)
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--offset", type=int, default=0)
    listing.add_argument("--all", action="store_true", help="every page")

    get = command("get", "show one memory")
    get.add_argument("id")

    delete = command("delete", "delete memories by id, or every memory of one scope")
    delete.add_argument("ids", nargs="*", metavar="ID")
    _scope(delete)

    history = command("history", "a memory's changes, oldest first")
    history.add_argument("id")

    export = command("export", "write memories as JSON Lines (what import reads)")
    _filters(export)
    export.add_argument("-o", "--output", default="-", help="file (default: stdout)")

    imports = command("import", "store memories from JSON Lines (one memory per line)")
    imports.add_argument("file", help="a .jsonl file; - reads stdin")
    imports.add_argument("--batch-size", type=int, default=500, help=f"at most {BULK_LIMIT}")
    imports.add_argument("--near-duplicates", choices=["inline", "consolidation"])
    imports.add_argument("--vector-index", choices=["inline", "deferred"])

    command("stats", "counts and averages for the project")
    return parser


# --- commands ------------------------------------------------------------------------------


def _json_object(text: str | None, name: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise UsageError(f"{name} must be a JSON object")
    return value


def _scope_of(args: argparse.Namespace) -> dict[str, Any]:
    names = ("user_id", "agent_id", "run_id")
    return {name: getattr(args, name) for name in names if getattr(args, name, None)}


def _filters_of(args: argparse.Namespace) -> dict[str, Any]:
    filters = _scope_of(args)
    for name in ("memory_type", "tags", "source", "state"):
        if getattr(args, name, None):
            filters[name] = getattr(args, name)
    expression = _json_object(getattr(args, "filters", None), "--filters")
    if expression is not None:
        filters["filters"] = expression
    return filters


def cmd_add(client: Client, args: argparse.Namespace) -> Any:
    content = sys.stdin.read() if args.content == "-" else args.content
    if not content.strip():
        raise UsageError("the content is empty")
    metadata = _json_object(args.metadata, "--metadata")
    if args.infer:
        return client.memories.add(content, metadata=metadata, **_scope_of(args))
    fields = {
        "memory_type": args.memory_type,
        "tags": args.tags,
        "importance": args.importance,
        "source": args.source,
        "metadata": metadata,
        "pinned": args.pinned,
        **_scope_of(args),
    }
    return client.memories.create(content, **{k: v for k, v in fields.items() if v is not None})


def cmd_search(client: Client, args: argparse.Namespace) -> Any:
    return client.memories.search(
        args.query,
        mode=args.mode,
        limit=args.limit,
        min_similarity=args.min_similarity,
        **_filters_of(args),
    )


def cmd_list(client: Client, args: argparse.Namespace) -> Any:
    filters = _filters_of(args)
    if args.all:
        results = list(client.memories.iter(**filters))
        return {"results": results, "count": len(results), "limit": len(results), "offset": 0}
    return client.memories.list(limit=args.limit, offset=args.offset, **filters)


def cmd_get(client: Client, args: argparse.Namespace) -> Any:
    return client.memories.get(args.id)


def cmd_delete(client: Client, args: argparse.Namespace) -> Any:
    scope = _scope_of(args)
    if args.ids and scope:
        raise UsageError("give memory ids or a scope (--user-id/--agent-id/--run-id), not both")
    if not args.ids and not scope:
        raise UsageError("give memory ids, or a scope to delete all of (--user-id ...)")
    if scope:
        return client.memories.delete_scope(**scope)
    for memory_id in args.ids:
        client.memories.delete(memory_id)
    return {"deleted": len(args.ids), "ids": args.ids}


def cmd_history(client: Client, args: argparse.Namespace) -> Any:
    return client.memories.history(args.id)


def cmd_export(client: Client, args: argparse.Namespace) -> Any:
    count = 0
    with _output(args.output) as out:
        for memory in client.memories.iter(**_filters_of(args)):
            record: dict[str, Any] = dict(memory)
            line = {k: record[k] for k in EXPORT_FIELDS if record.get(k) not in (None, "", [], {})}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
    return {"exported": count, "output": args.output}


def read_jsonl(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Every memory of a JSON Lines text, all checked before any is sent."""
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"line {number}: not valid JSON ({exc})") from exc
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise UsageError(f'line {number}: expected a JSON object with a "content" string')
        item["_line"] = number
        items.append(item)
    return items


def cmd_import(client: Client, args: argparse.Namespace) -> Any:
    if not 1 <= args.batch_size <= BULK_LIMIT:
        raise UsageError(f"--batch-size must be between 1 and {BULK_LIMIT}")
    if args.file == "-":
        items = read_jsonl(sys.stdin)
    else:
        try:
            with open(args.file, encoding="utf-8") as handle:
                items = read_jsonl(handle)
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror}") from exc
    created = existing = 0
    for start in range(0, len(items), args.batch_size):
        batch = items[start : start + args.batch_size]
        lines = [item.pop("_line") for item in batch]
        try:
            result = client.memories.create_many(
                batch, near_duplicates=args.near_duplicates, vector_index=args.vector_index
            )
        except MemoryPlatformError as exc:
            exc.fields = _fields_by_line(exc.fields, lines)
            raise
        created += result["created"]
        existing += result["existing"]
    return {"imported": created + existing, "created": created, "existing": existing}


def _fields_by_line(fields: dict[str, list[str]], lines: list[int]) -> dict[str, list[str]]:
    """`memories.3.content` -> `line 12: content` (the batch's item 3 is the file's line 12)."""
    out = {}
    for name, messages in fields.items():
        parts = name.split(".", 2)
        if len(parts) == 3 and parts[0] == "memories" and parts[1].isdigit():
            index = int(parts[1])
            name = f"line {lines[index]}: {parts[2]}" if index < len(lines) else name
        out[name] = messages
    return out


def cmd_stats(client: Client, args: argparse.Namespace) -> Any:
    return client.analytics.overview()


COMMANDS: dict[str, Callable[[Client, argparse.Namespace], Any]] = {
    "add": cmd_add,
    "search": cmd_search,
    "list": cmd_list,
    "get": cmd_get,
    "delete": cmd_delete,
    "history": cmd_history,
    "export": cmd_export,
    "import": cmd_import,
    "stats": cmd_stats,
}


@contextmanager
def _output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        return
    try:
        handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from exc
    with handle:
        yield handle


# --- output --------------------------------------------------------------------------------


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], flex: int = -1) -> str:
    """Columns sized to their content; column `flex` (the text) takes what the terminal has
    left and is cut with an ellipsis."""
    if not rows:
        return "(none)"
    cells = [[_cell(v, 10_000) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    flex = flex % len(headers)
    room = shutil.get_terminal_size((120, 24)).columns
    widths[flex] = max(20, min(widths[flex], room - sum(widths) + widths[flex] - 2 * len(widths)))
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in cells:
        lines.append(
            "  ".join(_cell(v, w).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        )
    return "\n".join(lines)


def _scope_text(memory: dict[str, Any]) -> str:
    parts = [memory.get(k) for k in ("user_id", "agent_id", "run_id")]
    return "/".join(p for p in parts if p) or "-"


def _memory_rows(memories: Iterable[dict[str, Any]], scored: bool = False) -> Iterator[list[Any]]:
    for m in memories:
        row = [m["id"], m["memory_type"], _scope_text(m), (m.get("created_at") or "")[:19]]
        if scored:
            row.insert(1, f"{m.get('score', 0):.3f}")
        yield [*row, m["content"]]


def _key_values(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        if isinstance(value, dict) and value:
            yield from _key_values(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", json.dumps(value) if isinstance(value, list) else value


def render(command: str, result: Any) -> str:
    """A command's result for people."""
    if command in ("list", "search"):
        headers = ["id", "type", "scope", "created", "content"]
        if command == "search":
            headers.insert(1, "score")
        rows = list(_memory_rows(result["results"], scored=command == "search"))
        footer = f"\n{len(rows)} of {result['count']}" if command == "list" else ""
        return table(rows, headers) + footer
    if command == "history":
        rows = [
            [h["created_at"][:19], h["event"], h["actor"], h.get("new_content") or ""]
            for h in result
        ]
        return table(rows, ["when", "event", "actor", "content"])
    if command == "add" and "results" in result:
        rows = [
            [e.get("event"), e.get("id") or "-", e.get("memory") or ""] for e in result["results"]
        ]
        return table(rows, ["event", "id", "memory"])
    if command == "add":
        verb = "stored" if result.get("created") else "already stored"
        return f"{verb} {result['id']}"
    if command in ("delete", "import", "export", "stats", "get"):
        pairs = list(_key_values(result))
        width = max((len(k) for k, _ in pairs), default=0)
        return "\n".join(f"{k.ljust(width)}  {v}" for k, v in pairs)
    return json.dumps(result, indent=2)


# --- entry point ---------------------------------------------------------------------------


def _exit_code(exc: MemoryPlatformError) -> int:
    match exc:
        case AuthenticationError() | PermissionDenied():
            return EXIT_REFUSED
        case NotFound():
            return EXIT_NOT_FOUND
        case APIConnectionError():
            return EXIT_UNREACHABLE
        case ConfigurationError():
            return EXIT_USAGE
        case _:
            return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    as_json = getattr(args, "json", False)
    try:
        with Client(
            getattr(args, "api_key", None),
            url=getattr(args, "url", None),
            timeout=getattr(args, "timeout", 30.0),
        ) as client:
            result = COMMANDS[args.command](client, args)
    except UsageError as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryPlatformError as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return _exit_code(exc)
    except KeyboardInterrupt:
        return 130
    if args.command == "export" and args.output == "-":
        return EXIT_OK  # the memories went to stdout; nothing else belongs there
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(render(args.command, result))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
