"""The compatibility layers sit on top of the layer order: they may import the platform's
infrastructure and every app (tenants, memories, entities, analytics), and nothing imports
them (the URL configuration mounts them by name)."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
BELOW = {"tenants", "memories", "entities", "analytics"}
INFRASTRUCTURE = {"lib", "events", "llm", "db"}  # memoryplatform's lowest layer
PLATFORM = ["memoryplatform", "tenants", "memories", "entities", "analytics", "mcpserver"]


def _imports(package: str) -> list[tuple[str, str]]:
    """(module:line, imported module) for every absolute import under `package`."""
    found = []
    for path in (ROOT / package).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [(f"{module}:{node.lineno}", name) for name in names]
    return found


def _ours(name: str) -> bool:
    return name.split(".")[0] in {*PLATFORM, "compat"}


def test_compat_imports_only_the_infrastructure_and_the_apps_below_it() -> None:
    def allowed(name: str) -> bool:
        parts = name.split(".")
        if parts[0] == "memoryplatform":
            return len(parts) > 1 and parts[1] in INFRASTRUCTURE
        return parts[0] in BELOW | {"compat"}

    wrong = [
        f"{site} {name}" for site, name in _imports("compat") if _ours(name) and not allowed(name)
    ]
    assert wrong == []


def test_no_part_of_the_platform_imports_compat() -> None:
    importers = [
        f"{site} {name}"
        for package in PLATFORM
        for site, name in _imports(package)
        if name.split(".")[0] == "compat"
    ]
    assert importers == []
