"""Layers that cannot rot: the import rules between `app/`'s packages, read from the source with `ast`, and the
size limits (module and function lengths) of `app/` and the client.

Every `import` and `from ... import` in `app/` counts, at module level and inside functions alike
(a deferred import is still a dependency); only the module-level ones, outside `if TYPE_CHECKING:`,
run when a module loads, so those alone make the graph that must have no circle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from app import ROOT

APP = ROOT / "app"

# (importer, imported, why): no module at or under `importer` imports one at or under `imported`.
FORBIDDEN = [
    ("app.settings", "app.web", "settings are read by every layer, so they depend on none"),
    ("app.exporters", "app.services", "exporters are record mappings and writers; services call them, not the reverse"),
    ("app.datasets", "app.worker", "producers get their model backend from the worker that runs them"),
]
# The services packages from the bottom up: each imports (at load or deferred) only the ones before it, so no
# circle between them can form. A new package takes the place its imports give it.
SERVICE_PACKAGES = ["users", "webhooks", "projects", "quality", "annotation", "review", "imports", "exports", "leaks", "drafting", "demo"]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
SIZED = [APP, ROOT / "client" / "vlcurate"]
# Modules still over the limits, each to be split by the work that owns it; the list only shrinks.
LONG_FOR_NOW: set[str] = set()
# Pairs that must not import each other both ways, by any import at all (a deferred or type-only one too).
NOT_BOTH_WAYS = [("app.services.imports.imports", "app.services.imports.import_batches")]


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    at_load: bool  # module level, outside `if TYPE_CHECKING:`: runs when the importer loads


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(APP.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of `app` that `name` names (`app.services.quality.gold.leaks` → `app.services.quality.gold`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(module: str, source: str, is_package: bool, modules: dict[str, Path]) -> list[Import]:
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def add(names: list[str], line: int, at_load: bool) -> None:
        for name in names:
            target = _resolve(name, modules)
            if target and target != module:
                found.append(Import(module, target, line, at_load))

    def visit(node: ast.AST, at_load: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                add([a.name for a in child.names], child.lineno, at_load)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                # `from app.services.quality import gold` imports the module app.services.quality.gold when there is one.
                add([f"{base}.{a.name}" for a in child.names], child.lineno, at_load)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), False)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), at_load)
            else:
                visit(child, at_load)

    visit(ast.parse(source, module), True)
    return found


def _all_imports() -> list[Import]:
    modules = _modules()
    return [
        i
        for name, path in modules.items()
        for i in _imports_of(name, path.read_text(), path.name == "__init__.py", modules)
    ]


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle in the graph, as the modules around it (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := walk(start)):
            return found
    return None


def test_the_walk_sees_every_kind_of_import():
    """The reader finds module-level, deferred, relative and type-only imports (else the rules below prove nothing)."""
    imports = _all_imports()
    assert len({i.importer for i in imports}) > 100
    assert any(not i.at_load for i in imports), "no import inside a function was found"
    assert any(i.importer == "app.main" and i.imported == "app.settings" and i.at_load for i in imports)
    parsed = _imports_of(
        "app.exporters.x",
        "from . import rows\nfrom ..services.quality import gold\nimport typing\n"
        "if typing.TYPE_CHECKING:\n    from app.worker import backends\n"
        "def f():\n    import app.web.addresses\n",
        False,
        _modules(),
    )
    assert [(i.imported, i.at_load) for i in parsed] == [
        ("app.exporters.rows", True),
        ("app.services.quality.gold", True),
        ("app.worker.backends", False),
        ("app.web.addresses", False),
    ]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def test_layering_rules_hold():
    broken = [
        f"{i.importer} (line {i.line}) imports {i.imported}: {why}"
        for i in _all_imports()
        for importer, imported, why in FORBIDDEN
        if _under(i.importer, importer) and _under(i.imported, imported)
    ]
    assert not broken, "\n".join(broken)


def test_no_pair_imports_each_other():
    imports = {(i.importer, i.imported) for i in _all_imports()}
    for a, b in NOT_BOTH_WAYS:
        assert not ((a, b) in imports and (b, a) in imports), f"{a} and {b} import each other"


def test_no_import_circle_at_module_level():
    edges: dict[str, set[str]] = {}
    for i in _all_imports():
        if i.at_load:
            edges.setdefault(i.importer, set()).add(i.imported)
    found = _cycle(edges)
    assert found is None, "module-level import circle: " + " -> ".join(found)


def _service_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["app", "services"] else None


def _package_order_broken(imports: list[Import]) -> list[str]:
    rank = {name: n for n, name in enumerate(SERVICE_PACKAGES)}
    broken = []
    for i in imports:
        importer, imported = _service_package(i.importer), _service_package(i.imported)
        if importer is None or imported is None or importer == imported:
            continue
        if importer not in rank or imported not in rank:
            broken.append(f"{i.importer}: services package {importer or imported!r} is not in SERVICE_PACKAGES")
        elif rank[imported] > rank[importer]:
            broken.append(f"{i.importer} (line {i.line}) imports {i.imported}: {importer} comes before {imported}")
    return broken


def test_services_packages_import_only_the_ones_below():
    on_disk = {p.parent.name for p in (APP / "services").glob("*/__init__.py")}
    assert on_disk == set(SERVICE_PACKAGES), "SERVICE_PACKAGES and app/services/*/ differ"
    loose = [p.name for p in (APP / "services").glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"{loose}: a module directly in app/services/ belongs in a package"
    broken = _package_order_broken(_all_imports())
    assert not broken, "\n".join(broken)
    planted = Import("app.services.users.users", "app.services.demo.demo", 1, False)
    assert _package_order_broken([planted]), "an upward import was not caught"


def _too_long(source: str, where: str) -> list[str]:
    found = []
    if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{where}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
    return found


def test_no_module_or_function_is_too_long():
    found = [
        line
        for folder in SIZED
        for path in sorted(folder.rglob("*.py"))
        if (where := str(path.relative_to(ROOT))) not in LONG_FOR_NOW
        for line in _too_long(path.read_text(), where)
    ]
    assert not found, "\n".join(found)
    planted = "def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "\n" * (MAX_MODULE_LINES - MAX_FUNCTION_LINES)
    assert [line.split(": ")[0] for line in _too_long(planted, "planted.py")] == ["planted.py", "planted.py:1 long"]
