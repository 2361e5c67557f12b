"""Dependencies point one way. The layers are the platform's top-level packages in the order
INSTALLED_APPS lists them: the foundation (`platformcore`: helpers, the database backend,
events, the LLM client, metrics) first, importing no app; then tenants ← memories ← entities ←
the apps above them; then the entry points that are no app (the in-process library); the
composition root (`memoryplatform`: settings, urls, asgi) last. Each package imports only the
packages before it. A lower app that must tell a higher one something does it through a
registry the higher app fills in its AppConfig.ready() (hooks, search modes and boosts, event
feeds), never an import back and never an import string naming it. Read from the source (every
import, function-local ones included), so a cycle cannot hide in a function body; no module
imports another's private names."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
# the composition root: the package of the URLs (and of the settings); it may import everything
COMPOSITION_ROOT = settings.ROOT_URLCONF.split(".")[0]
# packages of the repository that are not the platform
OUTSIDE = {"tests", "benchmarks"}


def _layers() -> list[str]:
    """The platform's top-level packages, lowest first."""
    ours = {path.parent.name for path in ROOT.glob("*/__init__.py")} - OUTSIDE
    installed = [config.name.split(".")[0] for config in apps.get_app_configs()]
    layers = [name for name in dict.fromkeys(installed) if name in ours - {COMPOSITION_ROOT}]
    entry_points = sorted(ours - set(layers) - {COMPOSITION_ROOT})
    return [*layers, *entry_points, COMPOSITION_ROOT]


LAYERS = _layers()
FOUNDATION = LAYERS[0]
APPS = LAYERS[1:-1]


def _layer(module: str) -> str | None:
    package = module.split(".")[0]
    return package if package in LAYERS else None


def test_the_layers_are_the_foundation_then_the_apps_then_the_composition_root() -> None:
    assert LAYERS[:4] == ["platformcore", "tenants", "memories", "entities"]
    assert LAYERS[-1] == "memoryplatform"


def _sources() -> Iterator[tuple[str, str]]:
    """(dotted module name, source) of every module of the platform, migrations aside."""
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                yield ".".join(path.relative_to(ROOT).with_suffix("").parts), path.read_text()


def _modules() -> Iterator[tuple[str, ast.AST]]:
    """(dotted module name, parsed source) of every module of the platform, migrations aside."""
    for module, source in _sources():
        yield module, ast.parse(source, module)


def _imports() -> dict[tuple[str, str], list[str]]:
    """(importing layer, imported layer) -> 'module:line imported' for every import."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, tree in _modules():
        source = _layer(module)
        for node in ast.walk(tree):
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


def _upward(source: str | None, target: str | None) -> bool:
    return bool(source and target and LAYERS.index(target) > LAYERS.index(source))


def test_the_foundation_imports_no_app() -> None:
    assert {
        target: sites for (source, target), sites in _imports().items() if source == FOUNDATION
    } == {}


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = {
        f"{source} -> {target}": sites
        for (source, target), sites in _imports().items()
        if _upward(source, target)
    }
    assert wrong == {}


DOTTED = re.compile(r"[a-z_]+(\.[A-Za-z_][A-Za-z0-9_]*)+")


# an entry point starts the platform by naming its settings, as manage.py does
ENTRY_SETTINGS = "memoryplatform.settings"


def _upward_string(module: str, named: str) -> bool:
    """`named` is the import path of a module of ours (or of a name in it) above `module`'s
    layer; logger names and file names that only look like paths are not."""
    parts = named.split(".")
    modules = (
        ROOT.joinpath(*parts[:end]) for end in range(len(parts), max(2, len(parts) - 1) - 1, -1)
    )
    importable = any(
        path.with_suffix(".py").exists() or (path / "__init__.py").exists() for path in modules
    )
    return importable and named != ENTRY_SETTINGS and _upward(_layer(module), _layer(named))


def test_no_layer_names_a_higher_one_in_an_import_string() -> None:
    # "entities.selectors.search.graph_search" in the memory store would be an import back,
    # made at run time where the import test cannot see it
    wrong = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            named = node.value if isinstance(node, ast.Constant) else None
            upward = (
                isinstance(named, str) and DOTTED.fullmatch(named) and _upward_string(module, named)
            )
            if upward:
                wrong.append(f"{module}:{node.lineno} {named!r}")
    assert wrong == []


def test_no_module_imports_the_private_names_of_another() -> None:
    # a name with a leading underscore is its module's own; another module that needs it
    # needs a public function
    private = set()
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                private.update(
                    f"{module} -> {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                )
    assert private == set()


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


def _local_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements inside a function body, those under `if TYPE_CHECKING:` aside."""
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            type_checking = {
                id(node)
                for block in ast.walk(function)
                if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
                for node in ast.walk(block)
            }
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in type_checking:
                    yield node


def _line_above(lines: list[str], number: int) -> int:
    """The number of the closest line above line `number` that is not blank (1-based)."""
    number -= 1
    while number > 1 and not lines[number - 1].strip():
        number -= 1
    return number


def test_a_function_local_import_says_why() -> None:
    # an import belongs at the top of its module; one inside a function closes an import
    # cycle, waits for Django's models, or keeps a slow or optional library out of the
    # processes that never use it, and a comment above it (or above the block of imports it
    # opens) or at the end of its line says which
    unexplained = []
    for module, source in _sources():
        lines = source.splitlines()
        local = {node.end_lineno: node for node in _local_imports(ast.parse(source))}
        for node in local.values():
            first = node.lineno
            while _line_above(lines, first) in local:
                first = local[_line_above(lines, first)].lineno
            above = lines[first - 2].lstrip()
            if not (above.startswith("#") or "#" in lines[node.lineno - 1]):
                unexplained.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert unexplained == []
