"""Dependencies point one way: `memoryplatform.lib` (with the events, LLM and database
infrastructure beside it) imports no app, and each app imports only the layers below it:
lib ← tenants ← memories ← entities ← analytics / mcpserver. A lower app
that must tell a higher one something does it through a hook named in settings, never an
import back. Read from the source (every import, function-local ones included), so a cycle
cannot hide in a function body."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
# what each layer may import (besides itself and the lib); the composition root
# (memoryplatform outside its lib: settings, urls, asgi) may import everything
ALLOWED = {
    "lib": set(),
    "tenants": set(),
    "memories": {"tenants"},
    "entities": {"tenants", "memories"},
    "documents": {"tenants", "memories", "entities"},
    "analytics": {"tenants", "memories", "entities", "documents"},
    "mcpserver": {"tenants", "memories", "entities", "analytics", "documents"},
    "compat": {"tenants", "memories", "entities", "analytics", "documents"},
    # the in-process library: an entry point over the compatibility layer, as REST is
    "memory_platform": {"tenants", "memories", "entities", "analytics", "documents", "compat"},
}
APPS = {
    "tenants",
    "memories",
    "entities",
    "documents",
    "analytics",
    "mcpserver",
    "compat",
    "memory_platform",
}


# memoryplatform's infrastructure (helpers, events, the LLM client, the database backend,
# metrics) is the lowest layer with its lib; the rest of it (settings, urls, asgi...)
# composes the apps
INFRASTRUCTURE = {"lib", "events", "event_log", "models", "migrations", "llm", "db", "metrics"}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "memoryplatform":
        return "lib" if parts[1:2] and parts[1] in INFRASTRUCTURE else "root"
    return parts[0] if parts[0] in APPS else None


def _imports() -> dict[tuple[str, str], list[str]]:
    """(importing layer, imported layer) -> 'module:line imported' for every import."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for package in ["memoryplatform", *sorted(APPS)]:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            source = _layer(module)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    target = _layer(name)
                    if source and target and target != source:
                        found[(source, target)].append(f"{module}:{node.lineno} {name}")
    return found


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = {
        f"{source} -> {target}": sites
        for (source, target), sites in _imports().items()
        if source in ALLOWED and target not in ALLOWED[source] | {"lib"}
    }
    assert wrong == {}


def test_no_app_looks_models_up_by_name_to_dodge_an_import() -> None:
    dodges = []
    for package in sorted(APPS):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts and "apps.get_model(" in path.read_text():
                dodges.append(str(path.relative_to(ROOT)))
    assert dodges == []


def test_mcp_tools_share_the_apps_representations_not_the_rest_layer() -> None:
    # REST views and MCP tools give one representation of each resource (the apps'
    # `representations` modules); the MCP layer maps arguments and never imports `api`
    rest = [
        site
        for (source, _), sites in _imports().items()
        if source == "mcpserver"
        for site in sites
        if site.split()[-1].split(".")[1:2] == ["api"]
    ]
    assert rest == []
