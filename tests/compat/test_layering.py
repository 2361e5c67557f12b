"""The compatibility layers sit on top of the layer order: they may import the foundation and
every app listed before them (tenants, memories, entities, documents, analytics...), and no
app imports them (the URL configuration mounts them by name; only the in-process library,
an entry point above every app, calls them)."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

from tests.test_architecture import LAYERS

ROOT = Path(settings.BASE_DIR)
BELOW = set(LAYERS[: LAYERS.index("compat")])
PLATFORM = [package for package in LAYERS if package not in {"compat", "memory_platform"}]


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


def test_compat_imports_only_the_foundation_and_the_apps_below_it() -> None:
    def allowed(name: str) -> bool:
        return name.split(".")[0] in BELOW | {"compat"}

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
