"""The layers of DESIGN.md point down: minitf's modules import each other without cycles.

The module graph is read from the source with `ast`: every ``import`` and
``from ... import`` in a file counts, wherever it stands (module level, inside a
function, under ``if TYPE_CHECKING:``), because each one is a dependency a reader
has to hold in mind. ``import a.b`` is an edge to ``a.b`` (its ``__init__`` if it
is a package); ``from a.b import c`` is an edge to the submodule ``a.b.c`` when
there is one, else to ``a.b``. Relative imports are resolved against the
importing module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "minitf"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported(node: ast.AST, module: str, path: Path, known) -> set[str]:
    """The modules of minitf that one import statement depends on."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if not isinstance(node, ast.ImportFrom):
        return set()
    source = _absolute(node, module, path)
    found = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in known:
            found.add(submodule)
        elif source in known:
            found.add(source)
    return found


def module_graph() -> nx.DiGraph:
    """minitf's modules and their import edges, read from the source."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for target in _imported(node, module, path, modules):
                if target != module:
                    graph.add_edge(module, target)
    return graph


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _forbidden_imports(importers: str, forbidden: list[str]) -> list[str]:
    graph = module_graph()
    return sorted(
        f"{source} imports {target}"
        for source, target in graph.edges
        if _in_package(source, importers) and any(_in_package(target, f) for f in forbidden)
    )


def test_the_reader_sees_relative_and_lazy_imports(tmp_path):
    source = "def f():\n    from . import sibling\n    from ..other import name\n"
    tree = ast.parse(source)
    path = PACKAGE_ROOT / "pkg" / "mod.py"
    known = {"minitf.pkg.sibling", "minitf.other"}
    found = set()
    for node in ast.walk(tree):
        found |= _imported(node, "minitf.pkg.mod", path, known)
    assert found == {"minitf.pkg.sibling", "minitf.other"}


def _one_cycle(graph: nx.DiGraph) -> str | None:
    """One cycle of ``graph`` as ``"a -> b -> ... -> a"``, or None."""
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return None
    return " -> ".join([source for source, _ in cycle] + [cycle[0][0]])


def test_minitf_modules_import_each_other_without_a_cycle():
    cycle = _one_cycle(module_graph())
    assert cycle is None, f"import cycle: {cycle}"


def test_the_runtime_imports_no_layer_above_it():
    found = _forbidden_imports(
        "minitf.runtime",
        [
            "minitf.cli",
            "minitf.viz",
            "minitf.stepper",
            "minitf.cluster",
            "minitf.demo",
            "minitf.examples",
        ],
    )
    assert found == []


def test_the_framework_imports_neither_train_runtime_stepper_nor_viz():
    found = _forbidden_imports(
        "minitf.framework",
        ["minitf.train", "minitf.runtime", "minitf.stepper", "minitf.viz"],
    )
    assert found == []
