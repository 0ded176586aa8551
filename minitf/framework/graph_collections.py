"""Collections: the named lists a graph keeps (``tf.add_to_collection``, ``tf.get_collection``).

TF1 code finds what it built through them: ``tf.GraphKeys.GLOBAL_VARIABLES``
lists the variables a ``tf.train.Saver`` saves, ``QUEUE_RUNNERS`` the queue
runners ``tf.train.start_queue_runners`` starts, ``TRAIN_OP`` the train op.
A key is usually a `GraphKeys` name; a value is anything.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any


class GraphCollections:
    """The collections of one graph; `Graph` inherits these methods.

    A class that inherits them provides ``_check_not_finalized()``, which
    raises if the graph may not change (a finalized graph).
    """

    def __init__(self):
        self._collections: dict[str, list] = {}
        self._collections_lock = threading.Lock()

    def add_to_collection(self, name: str, value: Any) -> None:
        """Appends ``value`` to the collection ``name``.

        Args:
            name: The collection's key.
            value: The value to add.
        """
        self._check_not_finalized()
        with self._collections_lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: str | Iterable[str], value: Any) -> None:
        """Appends ``value`` to each collection in ``names`` (a name or an iterable).

        Args:
            names: A collection key, or an iterable of them (each used once).
            value: The value to add.
        """
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        """Returns the collection list itself (mutations change the collection).

        Args:
            name: The collection's key; an empty collection is created if needed.
        """
        with self._collections_lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        """Returns a copy of collection ``name``, filtered by ``scope`` (a regex on names).

        Args:
            name: The collection's key.
            scope: If given, keep only the items with a ``name`` that
                ``re.match`` matches (items without a name are dropped).
        """
        with self._collections_lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [
            item
            for item in items
            if getattr(item, "name", None) is not None and pattern.match(item.name)
        ]

    def get_all_collection_keys(self) -> list[str]:
        """The names of the non-empty collections."""
        with self._collections_lock:
            return [k for k in self._collections if isinstance(k, str)]

    def clear_collection(self, name: str) -> None:
        """Removes collection ``name``.

        Args:
            name: The collection's key.
        """
        self._check_not_finalized()
        with self._collections_lock:
            self._collections.pop(name, None)
