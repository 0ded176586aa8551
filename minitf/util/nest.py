"""Nested structures of values: flatten them, rebuild them, map over them (TF's ``nest``).

A *structure* is a value, or a list, tuple (named or not) or dict of
structures; anything else (a tensor, a number, a string, None) is a leaf.
RNN states are such structures: a cell's state may be one tensor, an
``LSTMStateTuple`` ``(c, h)``, or a tuple of those for a stack of cells, and
the code that runs a cell over time handles all of them by flattening the
state to a list of tensors and packing the results back into the same shape.
Dicts are flattened in the order of their sorted keys, as TF does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "is_sequence",
    "is_nested",
    "flatten",
    "pack_sequence_as",
    "assert_same_structure",
    "map_structure",
    "map_structure_up_to",
    "get_traverse_shallow_structure",
]


def is_sequence(value: Any) -> bool:
    """Whether ``value`` is a list, tuple or dict (something `flatten` opens).

    Args:
        value: Any Python value.
    """
    return isinstance(value, (list, tuple, dict))


is_nested = is_sequence


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _children(value: Any) -> list:
    if isinstance(value, dict):
        return [value[key] for key in sorted(value)]
    return list(value)


def flatten(structure: Any) -> list:
    """The leaves of ``structure``, depth first (a leaf alone gives ``[leaf]``).

    Args:
        structure: A value, or a list, tuple or dict of structures.
    """
    if not is_sequence(structure):
        return [structure]
    flat = []
    for child in _children(structure):
        flat.extend(flatten(child))
    return flat


def _rebuild(like: Any, children: list) -> Any:
    """A sequence of ``like``'s type holding ``children`` (namedtuples and dicts too)."""
    if isinstance(like, dict):
        return type(like)(zip(sorted(like), children))
    if _is_namedtuple(like):
        return type(like)(*children)
    return type(like)(children)


def _packed(structure: Any, flat: list, start: int) -> tuple[int, Any]:
    if not is_sequence(structure):
        return start + 1, flat[start]
    children = []
    for child in _children(structure):
        start, packed = _packed(child, flat, start)
        children.append(packed)
    return start, _rebuild(structure, children)


def pack_sequence_as(structure: Any, flat_sequence: list) -> Any:
    """``flat_sequence`` shaped like ``structure`` (the inverse of `flatten`).

    Args:
        structure: The nested structure to copy.
        flat_sequence: As many leaves as ``structure`` has, in `flatten` order.

    Raises:
        TypeError: if ``flat_sequence`` is not a list or tuple.
        ValueError: if the number of leaves differs.
    """
    if not is_sequence(flat_sequence):
        raise TypeError(f"flat_sequence must be a sequence, got {flat_sequence!r}")
    expected = len(flatten(structure))
    if expected != len(flat_sequence):
        raise ValueError(
            f"Could not pack sequence. Structure had {expected} elements, but "
            f"flat_sequence had {len(flat_sequence)} elements.  Structure: {structure}, "
            f"flat_sequence: {flat_sequence}."
        )
    return _packed(structure, list(flat_sequence), 0)[1]


def assert_same_structure(first: Any, second: Any, check_types: bool = True) -> None:
    """Checks that two structures nest the same way.

    Args:
        first: A structure.
        second: Another structure.
        check_types: Also require sequences at the same place to be of the same type.

    Raises:
        ValueError: if they nest differently or have different numbers of leaves.
        TypeError: if ``check_types`` and two sequences differ in type.
    """
    if is_sequence(first) != is_sequence(second) or (
        is_sequence(first) and len(first) != len(second)
    ):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {first}\n\nSecond structure: {second}"
        )
    if not is_sequence(first):
        return
    if check_types and type(first) is not type(second):
        # TF's message leads with the same words as the ValueError above.
        raise TypeError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {first}\n\nSecond structure: {second}\n\n"
            "More specifically: The two structures don't have the same sequence type. "
            f"First structure has type {type(first)}, while second structure has type "
            f"{type(second)}."
        )
    for a, b in zip(_children(first), _children(second)):
        assert_same_structure(a, b, check_types)


def map_structure(func: Callable, *structures: Any) -> Any:
    """``func`` applied leaf by leaf to structures of the same shape, packed like the first.

    Args:
        func: A function of as many arguments as there are structures.
        *structures: Structures that nest the same way.

    Raises:
        ValueError: if no structure is given or they nest differently.
    """
    if not structures:
        raise ValueError("Must provide at least one structure")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


def get_traverse_shallow_structure(traverse_fn: Callable, structure: Any) -> Any:
    """The part of ``structure`` that ``traverse_fn`` says to go into, with bools as leaves.

    ``traverse_fn`` is called on ``structure`` and, where it says so, on its
    parts: it returns True (go in: a leaf becomes True, a sequence is
    traversed further), False (stop: the part becomes one False), or, for a
    sequence, a sequence of bools of the same shape one level deep, one for
    each child. (TF's ``nest.get_traverse_shallow_structure``.)

    Args:
        traverse_fn: A function of a structure returning a bool or a
            one-level sequence of bools.
        structure: A structure.

    Raises:
        TypeError: if ``traverse_fn`` returns something else.
    """
    to_traverse = traverse_fn(structure)
    if not is_sequence(structure):
        if not isinstance(to_traverse, bool):
            raise TypeError(
                f"traverse_fn returned structure: {to_traverse} for non-structure: {structure}"
            )
        return to_traverse
    if isinstance(to_traverse, bool):
        if not to_traverse:
            return False
        flags = [True] * len(_children(structure))
    else:
        assert_same_structure(to_traverse, structure, check_types=False)
        flags = _children(to_traverse)
    level = []
    for flag, branch in zip(flags, _children(structure)):
        if not isinstance(flag, bool):
            raise TypeError(
                f"traverse_fn didn't return a depth=1 structure of bools.  saw: {to_traverse}"
            )
        level.append(get_traverse_shallow_structure(traverse_fn, branch) if flag else False)
    return _rebuild(structure, level)


def map_structure_up_to(shallow_tree: Any, func: Callable, *structures: Any) -> Any:
    """``func`` applied to the parts of ``structures`` at the leaves of ``shallow_tree``.

    Where ``shallow_tree`` has a leaf, ``func`` gets the whole part of each
    structure found there (a tensor, or a structure it does not go into).

    Args:
        shallow_tree: A structure that each of ``structures`` extends.
        func: A function of as many arguments as there are structures.
        *structures: Structures that nest like ``shallow_tree`` down to its leaves.

    Raises:
        ValueError: if a structure is shallower than ``shallow_tree`` or
            differs from it in length.
    """
    if not is_sequence(shallow_tree):
        return func(*structures)
    for structure in structures:
        if not is_sequence(structure) or len(structure) != len(shallow_tree):
            raise ValueError(
                f"The two structures don't have the same nested structure.\n\n"
                f"First structure: {shallow_tree}\n\nSecond structure: {structure}"
            )
    children = [
        map_structure_up_to(child, func, *parts)
        for child, *parts in zip(_children(shallow_tree), *(_children(s) for s in structures))
    ]
    return _rebuild(structures[0], children)
