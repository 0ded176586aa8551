"""Names: each op's unique name, and the name scope ``with tf.name_scope("layer1"):`` opens.

A graph hands out names like TF's: ``"layer1/MatMul"``, then
``"layer1/MatMul_1"``; names are compared without case, so ``"A"`` and
``"a"`` do not collide on a file system that ignores case. The current scope
is per thread, as in TF1 (the device, colocation and control-dependency
stacks belong to the graph and all its threads see them).
"""

from __future__ import annotations

import re
import threading

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


def is_valid_op_name(name: str) -> bool:
    """Whether ``name`` is a valid op name (TF's ``_VALID_OP_NAME_REGEX``).

    Args:
        name: A full op name, scope included.
    """
    return bool(_VALID_OP_NAME.match(name))


class GraphNames:
    """The names in use in one graph, and each thread's current name scope."""

    def __init__(self):
        self._in_use: dict[str, int] = {}
        self._thread_local = threading.local()

    @property
    def current_scope(self) -> str:
        """This thread's name scope, without a trailing slash ("" at the root)."""
        return getattr(self._thread_local, "name_stack", "")

    def reserve(self, name: str) -> None:
        """Marks ``name`` as used, so that `unique_name` does not hand it out.

        Args:
            name: A full name.
        """
        self._in_use.setdefault(name.lower(), 1)

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """Returns ``name`` under the current scope, made unique by a ``_<n>`` suffix.

        Args:
            name: The name to prefix with the current scope.
            mark_as_used: Whether to reserve the returned name.
        """
        scope = self.current_scope
        if scope:
            name = scope + "/" + name
        # Case-insensitive, like TF: "A" and "a" must not collide on some file systems.
        name_key = name.lower()
        i = self._in_use.get(name_key, 0)
        if mark_as_used:
            self._in_use[name_key] = i + 1
        if i > 0:
            base_key = name_key
            while name_key in self._in_use:
                name_key = f"{base_key}_{i}"
                i += 1
            if mark_as_used:
                self._in_use[name_key] = 1
            name = f"{name}_{i - 1}"
        return name

    def scope(self, name: str | None) -> _NameScope:
        """Opens a name scope on this thread for a ``with`` block; it yields the scope with a ``/``.

        Args:
            name: The scope name: None or "" for the root, a name ending in
                ``/`` to re-enter a scope verbatim, any other to make unique.

        Raises:
            ValueError: (on entering) if ``name`` is not a valid scope name.
        """
        return _NameScope(self, name)


class _NameScope:
    """The block `GraphNames.scope` opens (a class: every op constructor opens one)."""

    __slots__ = ("_names", "_name", "_old_scope")

    def __init__(self, names: GraphNames, name: str | None):
        self._names = names
        self._name = name
        self._old_scope = ""

    def __enter__(self) -> str:
        names, name = self._names, self._name
        old_scope = self._old_scope = names.current_scope
        if name:
            pattern = _VALID_SCOPE_NAME if old_scope else _VALID_OP_NAME
            if not pattern.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        if not name:
            new_scope, returned = "", ""
        elif name.endswith("/"):
            new_scope, returned = name[:-1], name
        else:
            new_scope = names.unique_name(name)
            returned = new_scope + "/"
        names._thread_local.name_stack = new_scope
        return returned

    def __exit__(self, *exc_info) -> None:
        self._names._thread_local.name_stack = self._old_scope
