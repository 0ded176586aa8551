"""The layers of DESIGN.md point down: minitf's modules import each other without cycles.

The module graph is read from the source with `ast`: every ``import`` and
``from ... import`` in a file counts, wherever it stands (at module level,
inside a function, under ``if TYPE_CHECKING:``), because each is a
dependency a reader has to hold in mind. ``import a.b`` is an edge to
``a.b`` (its ``__init__`` if it is a package); ``from a.b import c`` is an
edge to the submodule ``a.b.c`` when there is one, else to ``a.b``. Relative
imports are resolved against the importing module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "minitf"

# What the runtime and the framework must not import (DESIGN.md, "Layers").
ABOVE_THE_RUNTIME = [
    "minitf.cli",
    "minitf.viz",
    "minitf.stepper",
    "minitf.cluster",
    "minitf.demo",
    "minitf.examples",
]
ABOVE_THE_FRAMEWORK = ["minitf.train", "minitf.runtime", "minitf.stepper", "minitf.viz"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of minitf by its dotted name (a package by its own name)."""
    return {_module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute_source(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The module a ``from ... import`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _deepest_known(name: str, known) -> str | None:
    """``name``, or its longest prefix that is a module of minitf (None: not minitf's)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in known:
            return prefix
    return None


def imported_modules(node: ast.AST, module: str, path: Path, known) -> set[str]:
    """The modules of minitf that one statement of ``module`` imports.

    Args:
        node: Any statement; only ``import`` and ``from ... import`` give modules.
        module: The dotted name of the module the statement is in.
        path: That module's file.
        known: The dotted names of minitf's modules.
    """
    found = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            found.add(_deepest_known(alias.name, known))
    elif isinstance(node, ast.ImportFrom):
        source = _absolute_source(node, module, path)
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            found.add(submodule if submodule in known else _deepest_known(source, known))
    found.discard(None)
    found.discard(module)
    return found


def module_graph() -> nx.DiGraph:
    """minitf's modules and their import edges, read from the source."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for target in imported_modules(node, module, path, modules):
                graph.add_edge(module, target)
    return graph


def _one_cycle(graph: nx.DiGraph) -> str | None:
    """One cycle of ``graph`` as ``"a -> b -> ... -> a"``, or None."""
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return None
    return " -> ".join([source for source, _ in cycle] + [cycle[0][0]])


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imports_from(graph: nx.DiGraph, importers: str, forbidden: list[str]) -> list[str]:
    """``"a imports b"`` for each edge from package ``importers`` into one of ``forbidden``."""
    return sorted(
        f"{source} imports {target}"
        for source, target in graph.edges
        if _in_package(source, importers) and any(_in_package(target, f) for f in forbidden)
    )


def _edges_of(source: str, module: str, path: Path, known: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        found |= imported_modules(node, module, path, known)
    return found


def test_lazy_relative_and_type_checking_imports_are_edges_too():
    known = {"minitf.pkg", "minitf.pkg.mod", "minitf.pkg.sibling", "minitf.other", "minitf.typed"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import minitf.typed\n"
        "def f():\n"
        "    from . import sibling\n"
        "    from ..other import name\n"
    )
    path = PACKAGE_ROOT / "pkg" / "mod.py"
    edges = _edges_of(source, "minitf.pkg.mod", path, known)
    assert edges == {"minitf.typed", "minitf.pkg.sibling", "minitf.other"}


def test_an_import_of_a_package_or_a_name_in_it_is_an_edge_to_its_init():
    known = {"minitf.pkg", "minitf.pkg.sub", "minitf.user"}
    path = PACKAGE_ROOT / "user.py"
    assert _edges_of("import minitf.pkg\n", "minitf.user", path, known) == {"minitf.pkg"}
    assert _edges_of("from minitf.pkg import f\n", "minitf.user", path, known) == {"minitf.pkg"}
    assert _edges_of("from minitf.pkg import sub\n", "minitf.user", path, known) == {
        "minitf.pkg.sub"
    }


def test_minitf_modules_import_each_other_without_a_cycle():
    cycle = _one_cycle(module_graph())
    assert cycle is None, f"import cycle: {cycle}"


def test_the_runtime_imports_no_layer_above_it():
    found = _imports_from(module_graph(), "minitf.runtime", ABOVE_THE_RUNTIME)
    assert not found, "the runtime reaches up:\n" + "\n".join(found)


def test_the_framework_imports_neither_train_runtime_stepper_nor_viz():
    found = _imports_from(module_graph(), "minitf.framework", ABOVE_THE_FRAMEWORK)
    assert not found, "the framework reaches up:\n" + "\n".join(found)
