"""minitf.util.nest: flatten and pack nested structures, as TF's nest does."""

import collections

import pytest

from minitf.util import nest

Pair = collections.namedtuple("Pair", ["c", "h"])


def test_flatten_is_depth_first_and_dicts_go_by_sorted_key():
    structure = (1, [Pair(2, 3), {"b": 5, "a": 4}], 6)
    assert nest.flatten(structure) == [1, 2, 3, 4, 5, 6]
    assert nest.flatten(7) == [7]


def test_pack_sequence_as_rebuilds_the_same_types():
    structure = (0, [Pair(0, 0), {"b": 0, "a": 0}])
    packed = nest.pack_sequence_as(structure, ["x", "y", "z", "a", "b"])
    assert packed == ("x", [Pair("y", "z"), {"a": "a", "b": "b"}])
    assert isinstance(packed[1][0], Pair)


def test_map_structure_applies_leaf_by_leaf():
    assert nest.map_structure(lambda a, b: a + b, (1, Pair(2, 3)), (10, Pair(20, 30))) == (
        11,
        Pair(22, 33),
    )


def test_structures_that_differ_are_refused():
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        nest.assert_same_structure((1, 2), (1, (2, 3)))
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        nest.assert_same_structure((1, 2), [1, 2])
    with pytest.raises(ValueError, match="Structure had 2 elements, but flat_sequence had 3"):
        nest.pack_sequence_as((1, 2), [1, 2, 3])
