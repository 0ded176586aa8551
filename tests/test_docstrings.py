"""Every public name has a Google-style docstring (mkdocs.yml's ``docstring_style: google``).

Public means importable by a user without a leading underscore: every
function and class of the ``tf.*`` namespaces of ``import minitf as tf``
(`TF_NAMESPACES`) and of the modules users import by their own name
(`PUBLIC_MODULES`), and the public methods and properties of those classes.
Names that come from numpy or the standard library are not minitf's to
document, and dunder methods are documented by Python.

Each docstring must start with a one-line summary ending with a period; a
function with parameters (other than ``self``/``cls``) must have an ``Args:``
section naming each of them and nothing else (``*args``/``**kwargs`` may be
left out); a function with a ``raise`` statement of its own must have a
``Raises:`` section. A class documents its constructor's parameters and
errors in its own docstring (or in ``__init__``'s).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap

import pytest

import minitf

# The namespaces of ``import minitf as tf``, as attribute paths from ``tf``.
TF_NAMESPACES = (
    "tf",
    "tf.app",
    "tf.compat",
    "tf.contrib",
    "tf.contrib.framework",
    "tf.contrib.opt",
    "tf.contrib.rnn",
    "tf.contrib.training",
    "tf.dtypes",
    "tf.errors",
    "tf.flags",
    "tf.initializers",
    "tf.io",
    "tf.logging",
    "tf.nn",
    "tf.nn.rnn_cell",
    "tf.python_io",
    "tf.queue",
    "tf.random",
    "tf.sparse",
    "tf.test",
    "tf.train",
    "tf.train.queue_runner",
)

# Modules users import by their own name; ``.*`` adds every public submodule.
PUBLIC_MODULES = (
    "minitf.cluster.*",
    "minitf.examples.*",
    "minitf.notebook",
    "minitf.runtime.*",
    "minitf.stepper.*",
    "minitf.viz.*",
)

# Public packages not checked yet (none now). A package being reworked may sit
# here for a while; move it to `PUBLIC_MODULES` as ``"<package>.*"`` when done.
NOT_YET_CHECKED: tuple[str, ...] = ()

# Google-style section headers that hold a constructor's or function's parameters.
_ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:")
_SECTION_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:$")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)(\s+\([^)]*\))?:(\s|$)")


def _is_minitf(obj) -> bool:
    """Whether ``obj`` is defined in minitf (outside the packages not checked yet)."""
    module = getattr(obj, "__module__", None) or ""
    if not (module == "minitf" or module.startswith("minitf.")):
        return False
    return not any(module == p or module.startswith(p + ".") for p in NOT_YET_CHECKED)


def _namespaces():
    """Yields ``(display name, module, is_namespace)`` for every module to walk."""
    for path in TF_NAMESPACES:
        obj = minitf
        for part in path.split(".")[1:]:
            obj = getattr(obj, part)
        yield path, obj, True
    for spec in PUBLIC_MODULES:
        name = spec.removesuffix(".*")
        module = importlib.import_module(name)
        yield name, module, hasattr(module, "__path__")
        if spec.endswith(".*"):
            for info in pkgutil.iter_modules(module.__path__, name + "."):
                if info.name.rsplit(".", 1)[1].startswith("_"):
                    continue
                sub = importlib.import_module(info.name)
                yield info.name, sub, info.ispkg


def _module_names(module, is_namespace: bool) -> list[str]:
    """The public names of ``module``: its ``__all__``, or what it defines (or re-exports)."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = [n for n in vars(module) if not n.startswith("_")]
    if is_namespace:
        return names
    return [n for n in names if getattr(vars(module)[n], "__module__", None) == module.__name__]


def _members(cls):
    """Yields ``(name, function or property)`` for the public methods of ``cls``."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not _is_minitf(owner):
            continue
        attr = vars(owner)[name]
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, property) or inspect.isfunction(attr):
            yield f"{owner.__module__}.{owner.__qualname__}.{name}", attr


def _public_names() -> dict[str, object]:
    """Every public function, class, method and property, by one of its public names."""
    found: dict[str, object] = {}
    seen: set[int] = set()

    def add(name, obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            found[name] = obj

    for display, module, is_namespace in _namespaces():
        for name in _module_names(module, is_namespace):
            obj = getattr(module, name, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not _is_minitf(obj):
                continue
            add(f"{display}.{name}", obj)
            if inspect.isclass(obj):
                for member_name, member in _members(obj):
                    add(member_name, member)
    return found


PUBLIC = _public_names()


def _sections(doc: str) -> dict[str, list[str]]:
    """The Google-style sections of a cleaned docstring: header -> its indented lines."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        if _SECTION_HEADER.match(line):
            current = sections.setdefault(line, [])
        elif current is not None and (not line or line.startswith((" ", "\t"))):
            current.append(line)
        else:
            current = None
    return sections


def _entries(lines: list[str]) -> tuple[list[str], list[str]]:
    """The names an ``Args:`` section documents, and its lines that are not ``name: text``."""
    body = textwrap.dedent("\n".join(lines)).splitlines()
    names, malformed = [], []
    for line in body:
        if not line or line.startswith((" ", "\t")):
            continue
        match = _ENTRY.match(line)
        if match:
            names.append(match.group(1))
        else:
            malformed.append(line)
    return names, malformed


def _exception_name(node) -> str:
    """``ValueError`` for ``ValueError``, ``ValueError(...)`` or ``errors.ValueError``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _caught(handlers: list[ast.ExceptHandler]) -> set[str]:
    """The exception names a ``try``'s handlers catch (``*`` for a bare ``except``)."""
    names = set()
    for handler in handlers:
        if handler.type is None:
            names.add("*")
        elif isinstance(handler.type, ast.Tuple):
            names.update(_exception_name(e) for e in handler.type.elts)
        else:
            names.add(_exception_name(handler.type))
    return names


def _own_raises(func) -> bool:
    """Whether ``func``'s own body raises to its caller.

    Not counted: a bare re-raise, ``NotImplementedError``, a raise in a nested
    function, and a raise inside a ``try`` whose handlers catch it by name.
    """
    func = inspect.unwrap(func)
    if func.__name__ == "<lambda>":
        return False
    try:
        top = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
    except (OSError, TypeError):
        return False

    def raises(node, caught: frozenset) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(node, ast.Raise) and node.exc is not None:
            name = _exception_name(node.exc)
            return name != "NotImplementedError" and not caught & {name, "*", "Exception"}
        if isinstance(node, ast.Try):
            inner = caught | _caught(node.handlers)
            rest = node.handlers + node.orelse + node.finalbody
            return any(raises(n, inner) for n in node.body) or any(raises(n, caught) for n in rest)
        return any(raises(n, caught) for n in ast.iter_child_nodes(node))

    return any(raises(n, frozenset()) for n in ast.iter_child_nodes(top))


def _parameters(func) -> list[str]:
    """The parameter names of ``func`` to document.

    Left out: ``self`` and ``cls``, ``*args`` and ``**kwargs``, and the
    underscore-prefixed ones (a NamedTuple's ``_cls``, an ignored ``_``).
    """
    return [
        p.name
        for p in _signature(func)
        if p.name not in ("self", "cls")
        and not p.name.startswith("_")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _signature(func) -> list[inspect.Parameter]:
    """The parameters of ``func``, or none if Python cannot tell them."""
    try:
        return list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return []


def _constructor(cls):
    """The ``__init__`` (or ``__new__``) ``cls`` defines itself, or None if it inherits one."""
    for name in ("__init__", "__new__"):
        if name in vars(cls):
            attr = vars(cls)[name]
            return attr.__func__ if isinstance(attr, staticmethod) else attr
    return None


def _problems(obj) -> list[str]:
    """What is missing or malformed in ``obj``'s docstring."""
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        func = _constructor(obj)
        extra = inspect.getdoc(func) if func is not None else None
    elif isinstance(obj, property):
        doc, func, extra = obj.__doc__, obj.fget, None
    else:
        doc, func, extra = inspect.getdoc(obj), obj, None
    if not doc or not doc.strip():
        return ["no docstring"]
    doc = inspect.cleandoc(doc)
    lines = doc.splitlines()
    problems = []
    if not lines[0].strip().endswith(".") or (len(lines) > 1 and lines[1].strip()):
        problems.append(f"first line is not a one-line summary ending with a period: {lines[0]!r}")
    sections = _sections(doc)
    if extra:
        for header, body in _sections(inspect.cleandoc(extra)).items():
            sections.setdefault(header, []).extend(body)
    if func is None:
        return problems
    documented, malformed = [], []
    for header in _ARGS_HEADERS:
        names, bad = _entries(sections.get(header, []))
        documented += names
        malformed += bad
    if malformed:
        problems.append(f"Args lines that are not 'name: description': {malformed}")
    if not isinstance(obj, property):
        params = _parameters(func)
        signature = {p.name for p in _signature(func)}
        unknown = [n for n in documented if n.lstrip("*") not in signature]
        if unknown and not any(p.kind == p.VAR_KEYWORD for p in _signature(func)):
            problems.append(f"Args names parameters the signature does not have: {unknown}")
        if inspect.isclass(obj):
            documented += _entries(sections.get("Attributes:", []))[0]
        missing = [p for p in params if p not in documented]
        if missing:
            problems.append(f"Args does not document {missing}")
    if _own_raises(func) and "Raises:" not in sections:
        problems.append("raises, but has no Raises: section")
    return problems


def test_the_walk_finds_the_public_api():
    assert "tf.Session" in PUBLIC
    assert "tf.train.SyncReplicasOptimizer" in PUBLIC
    assert len(PUBLIC) > 500


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_name_has_a_docstring(name):
    problems = _problems(PUBLIC[name])
    assert not problems, f"{name}: " + "; ".join(problems)
