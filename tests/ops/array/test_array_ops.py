"""Array ops: values against numpy, static shapes, errors and gradients (TF 1.15 behaviour)."""

import logging

import numpy as np
import pytest

import minitf as tf
from minitf.ops.array import array_ops
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)

X34 = np.arange(12, dtype=np.float32).reshape(3, 4)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def grad_error(x_shape, build, x_value=None, delta=1e-6):
    """Finite-difference check of ``build(x)`` in float64."""
    x = tf.placeholder(tf.float64, x_shape, name="x")
    y = build(x)
    with tf.Session() as sess:
        y_shape = list(np.shape(sess.run(y, {x: x_value})))
        return compute_gradient_error(
            x, list(x_shape), y, y_shape, x_init_value=x_value, delta=delta
        )


def rand(*shape):
    return np.random.default_rng(1).standard_normal(shape)


# -- filled tensors and shape queries ------------------------------------------------------


def test_zeros_small_is_a_const_named_zeros():
    z = tf.zeros([2, 3], dtype=tf.int32)
    assert z.op.type == "Const" and z.op.name == "zeros"
    assert z.dtype == tf.int32 and z.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(z), np.zeros((2, 3), np.int32))


def test_zeros_large_is_a_fill():
    z = tf.zeros([50, 40])
    assert z.op.type == "Fill" and z.op.name == "zeros"
    assert z.shape.as_list() == [50, 40]
    value = run(z)
    assert value.dtype == np.float32 and value.shape == (50, 40) and not value.any()


def test_ones_with_tensor_shape_and_bool_dtype():
    n = tf.placeholder(tf.int32, [])
    o = tf.ones([n, 2], dtype=tf.bool)
    assert o.op.type == "Fill" and o.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(o, {n: 3}), np.ones((3, 2), bool))


def test_fill_value_and_static_shape():
    f = tf.fill([2, 3], 7.5)
    assert f.op.type == "Fill" and f.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(f), np.full((2, 3), 7.5, np.float32))


def test_fill_rejects_non_scalar_value():
    with pytest.raises(ValueError, match="rank 0 but is rank 1"):
        tf.fill([2], [1.0, 2.0])


def test_zeros_like_ones_like_keep_shape_and_dtype():
    x = tf.placeholder(tf.float32, [None, 3])
    z, o = tf.zeros_like(x), tf.ones_like(x)
    assert z.op.type == "ZerosLike" and z.shape.as_list() == [None, 3]
    assert o.op.type == "Fill" and o.shape.as_list() == [None, 3]
    zv, ov = run([z, o], {x: np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(zv, np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(ov, np.ones((2, 3), np.float32))
    assert zv.dtype == np.float32 and ov.dtype == np.float32


def test_zeros_like_known_shape_is_constant_and_dtype_override():
    x = tf.constant(X34)
    z = tf.zeros_like(x, dtype=tf.int64)
    assert z.op.type == "Const" and z.dtype == tf.int64
    assert run(z).dtype == np.int64


def test_size_and_rank_constant_when_known_else_ops():
    x = tf.placeholder(tf.float32, [None, 3])
    u = tf.placeholder(tf.float32)
    assert tf.size(tf.constant(X34)).op.type == "Const"
    assert tf.size(x).op.type == "Size" and tf.size(x).dtype == tf.int32
    assert tf.rank(x).op.type == "Const"
    assert tf.rank(u).op.type == "Rank"
    feed = np.zeros((5, 3), np.float32)
    size, r, rx = run([tf.size(x), tf.rank(u), tf.rank(x)], {x: feed, u: feed})
    assert (size, r, rx) == (15, 2, 2)
    assert run(tf.size(tf.constant(X34))) == 12


def test_shape_n():
    a = tf.placeholder(tf.float32, [None, 2])
    b = tf.constant(np.zeros((4,), np.float32))
    sa, sb = tf.shape_n([a, b])
    assert sa.op.type == "ShapeN" and sa.shape.as_list() == [2]
    va, vb = run([sa, sb], {a: np.zeros((3, 2), np.float32)})
    np.testing.assert_array_equal(va, [3, 2])
    np.testing.assert_array_equal(vb, [4])


# -- concat, stack, unstack, split ---------------------------------------------------------


def test_concat_values_and_static_shape():
    a = tf.placeholder(tf.float32, [None, 2])
    b = tf.placeholder(tf.float32, [3, None])
    c = tf.concat([a, b], 0)
    assert c.op.type == "ConcatV2" and c.op.name == "concat"
    assert c.shape.as_list() == [None, 2]
    av, bv = np.ones((1, 2), np.float32), np.full((3, 2), 2, np.float32)
    np.testing.assert_array_equal(run(c, {a: av, b: bv}), np.concatenate([av, bv], 0))
    c1 = tf.concat([tf.constant(X34), tf.constant(X34)], -1)
    assert c1.shape.as_list() == [3, 8]
    np.testing.assert_array_equal(run(c1), np.concatenate([X34, X34], 1))


def test_concat_single_value_is_identity():
    c = tf.concat([tf.constant(X34)], 0)
    assert c.op.type == "Identity"


def test_concat_dimension_mismatch_names_shapes():
    a, b = tf.zeros([2, 3]), tf.zeros([2, 4])
    with pytest.raises(
        ValueError, match=r"Dimension 1 in both shapes must be equal.*\[2,3\].*\[2,4\]"
    ):
        tf.concat([a, b], 0)


def test_concat_rank_mismatch_names_shapes():
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 3.*\[2,3\], \[1,2,3\]"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([1, 2, 3])], 0)


def test_concat_dtype_mismatch_is_type_error():
    with pytest.raises(TypeError, match="don't all match"):
        tf.concat([tf.zeros([2], tf.float32), tf.zeros([2], tf.int32)], 0)


def test_concat_runtime_mismatch():
    a = tf.placeholder(tf.float32, [None, None])
    c = tf.concat([a, tf.zeros([1, 2])], 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimensions of inputs should match"):
        run(c, {a: np.zeros((1, 3), np.float32)})


def test_stack_of_constants_is_const_of_tensors_is_pack():
    s = tf.stack([[1, 2], [3, 4]])
    assert s.op.type == "Const"
    x = tf.placeholder(tf.float32, [2])
    p = tf.stack([x, x * 2.0], axis=1)
    assert p.op.type == "Pack" and p.shape.as_list() == [2, 2]
    xv = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(run(p, {x: xv}), np.stack([xv, xv * 2], 1))


def test_stack_axis_out_of_range():
    x = tf.zeros([2])
    with pytest.raises(ValueError, match=r"axis = 2 not in \[-2, 2\)"):
        tf.stack([x, x], axis=2)


def test_autopacking_list_with_tensor_in_reshape():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    y = tf.reshape(x, [tf.shape(x)[0], -1])
    assert y.op.inputs[1].op.type == "Pack"
    assert run(y, {x: np.zeros((4, 2, 3), np.float32)}).shape == (4, 6)


def test_unstack_values_and_errors():
    parts = tf.unstack(tf.constant(X34), axis=1)
    assert len(parts) == 4 and parts[0].op.type == "Unpack" and parts[0].shape.as_list() == [3]
    for got, want in zip(run(parts), [X34[:, i] for i in range(4)]):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="Cannot infer num"):
        tf.unstack(tf.placeholder(tf.float32, [None, 2]))
    with pytest.raises(ValueError, match=r"axis = 2 not in \[-2, 2\)"):
        tf.unstack(tf.constant(X34), axis=2)


def test_split_even_and_sizes():
    a, b = tf.split(tf.constant(X34), 2, axis=1)
    assert a.op.type == "Split" and a.shape.as_list() == [3, 2]
    p, q = tf.split(tf.constant(X34), [1, -1], 0)
    assert p.op.type == "SplitV" and q.shape.as_list() == [2, 4]
    av, bv, pv, qv = run([a, b, p, q])
    np.testing.assert_array_equal(av, X34[:, :2])
    np.testing.assert_array_equal(bv, X34[:, 2:])
    np.testing.assert_array_equal(pv, X34[:1])
    np.testing.assert_array_equal(qv, X34[1:])


def test_split_errors():
    with pytest.raises(ValueError, match="evenly divisible by 3 but is 4"):
        tf.split(tf.constant(X34), 3, axis=1)
    with pytest.raises(ValueError, match="Determined shape must either match"):
        tf.split(tf.constant(X34), [1, 1], axis=0)
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="evenly divide"):
        run(tf.split(x, 2), {x: np.zeros(5, np.float32)})


# -- transpose, expand_dims, squeeze, tile, pad --------------------------------------------


def test_transpose_default_and_perm():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.transpose(tf.constant(x))
    tp = tf.transpose(tf.constant(x), [1, 0, 2])
    assert t.op.type == "Transpose" and t.shape.as_list() == [4, 3, 2]
    assert tp.shape.as_list() == [3, 2, 4]
    tv, tpv = run([t, tp])
    np.testing.assert_array_equal(tv, x.transpose())
    np.testing.assert_array_equal(tpv, x.transpose(1, 0, 2))


def test_transpose_unknown_rank_reverses():
    x = tf.placeholder(tf.float32)
    np.testing.assert_array_equal(run(tf.transpose(x), {x: X34}), X34.T)


def test_transpose_bad_perm():
    with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
        tf.transpose(tf.constant(X34), [0, 1, 2])
    with pytest.raises(ValueError, match="not a permutation"):
        tf.transpose(tf.constant(X34), [0, 0])


def test_invert_permutation():
    np.testing.assert_array_equal(run(tf.invert_permutation([2, 0, 1])), [1, 2, 0])


def test_expand_dims_and_squeeze():
    x = tf.placeholder(tf.float32, [None, 3])
    e = tf.expand_dims(x, -1)
    e0 = tf.expand_dims(x, dim=0)
    assert e.op.type == "ExpandDims" and e.shape.as_list() == [None, 3, 1]
    assert e0.shape.as_list() == [1, None, 3]
    s = tf.squeeze(tf.zeros([1, 2, 1]))
    s1 = tf.squeeze(tf.zeros([1, 2, 1]), axis=[2])
    assert s.op.type == "Squeeze" and s.shape.as_list() == [2]
    assert s1.shape.as_list() == [1, 2]
    assert tf.squeeze(x).shape.ndims is None
    xv = np.ones((2, 3), np.float32)
    ev, sv = run([e, s], {x: xv})
    assert ev.shape == (2, 3, 1) and sv.shape == (2,)


def test_expand_dims_and_squeeze_errors():
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(tf.zeros([2]))
    with pytest.raises(ValueError, match="Tried to expand dim index 3 for tensor with 1"):
        tf.expand_dims(tf.zeros([2]), 3)
    with pytest.raises(
        ValueError, match=r"Can not squeeze dim\[1\], expected a dimension of 1, got 2"
    ):
        tf.squeeze(tf.zeros([1, 2]), [1])


def test_tile():
    t = tf.tile(tf.constant(X34), [2, 1])
    assert t.op.type == "Tile" and t.shape.as_list() == [6, 4]
    np.testing.assert_array_equal(run(t), np.tile(X34, (2, 1)))
    with pytest.raises(ValueError, match="rank 2 but is rank 3"):
        tf.tile(tf.constant(X34), [1, 2, 3])


def test_pad_modes():
    x = tf.constant(X34)
    pads = [[1, 0], [0, 2]]
    p, p2 = tf.pad(x, pads), tf.pad(x, pads, constant_values=5.0)
    pr, ps = tf.pad(x, [[1, 1], [2, 2]], "REFLECT"), tf.pad(x, [[1, 1], [2, 2]], "SYMMETRIC")
    assert (p.op.type, p2.op.type, pr.op.type) == ("Pad", "PadV2", "MirrorPad")
    assert p.shape.as_list() == [4, 6]
    pv, p2v, prv, psv = run([p, p2, pr, ps])
    np.testing.assert_array_equal(pv, np.pad(X34, pads))
    np.testing.assert_array_equal(p2v, np.pad(X34, pads, constant_values=5))
    np.testing.assert_array_equal(prv, np.pad(X34, [[1, 1], [2, 2]], "reflect"))
    np.testing.assert_array_equal(psv, np.pad(X34, [[1, 1], [2, 2]], "symmetric"))
    with pytest.raises(ValueError, match="Unknown padding mode"):
        tf.pad(x, pads, "WRAP")


# -- slice, strided_slice, __getitem__ -----------------------------------------------------


def test_slice_values_shape_and_errors():
    s = tf.slice(tf.constant(X34), [1, 1], [2, -1])
    assert s.op.type == "Slice" and s.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(s), X34[1:3, 1:])
    with pytest.raises(ValueError, match=r"Expected size\[0\] in \[0, 2\], but got 3"):
        tf.slice(tf.constant(X34), [1, 0], [3, 1])
    x = tf.placeholder(tf.float32, [None, 4])
    bad = tf.slice(x, [0, 0], [5, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected size\[0\] in \[0, 3\]"):
        run(bad, {x: X34})


GETITEM_CASES = [
    (1,),
    (-1,),
    (slice(None),),
    (slice(1, 3),),
    (slice(None, None, -1),),
    (slice(None, None, 2), 1),
    (Ellipsis, 2),
    (Ellipsis, slice(1, None)),
    (None, 1),
    (slice(None), None, slice(-2, None)),
    (1, slice(3, 0, -2)),
    (slice(5, 1, -1), -1),
    (slice(-100, 100),),
]


@pytest.mark.parametrize("index", GETITEM_CASES)
def test_getitem_matches_numpy(index):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = tf.constant(x)[index]
    expected = x[index]
    assert t.op.type == "StridedSlice" and t.op.name == "strided_slice"
    assert t.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(t), expected)


def test_getitem_unknown_dims_keep_rank():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    assert x[0].shape.as_list() == [3, 5]
    assert x[:, 1:].shape.as_list() == [None, 2, 5]
    assert x[..., tf.newaxis, 0].shape.as_list() == [None, 3, 1]
    assert tf.placeholder(tf.float32)[0].shape.ndims is None


def test_getitem_tensor_index():
    i = tf.placeholder(tf.int32, [])
    x = tf.constant(X34)
    row, window = x[i], x[i : i + 2, -1]
    assert row.shape.as_list() == [4]
    rv, wv = run([row, window], {i: 1})
    np.testing.assert_array_equal(rv, X34[1])
    np.testing.assert_array_equal(wv, X34[1:3, -1])


def test_getitem_of_shape_is_constant_folded():
    x = tf.placeholder(tf.float32, [None, 7])
    z = tf.zeros([tf.shape(tf.zeros([5, 2]))[0], 3])
    assert z.shape.as_list() == [5, 3]
    assert run(tf.shape(x)[1], {x: np.zeros((2, 7), np.float32)}) == 7


def test_getitem_rejects_bad_indices():
    x = tf.constant(X34)
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[1.5]
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[tf.constant([0, 1])]
    with pytest.raises(ValueError, match="slice index 3 of dimension 0 out of bounds"):
        x[3]
    with pytest.raises(ValueError, match="Index out of range using input dim 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="Multiple ellipses"):
        x[..., ...]


def test_getitem_runtime_index_out_of_range():
    i = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="slice index 5 of dimension 0 out"):
        run(tf.constant(X34)[i], {i: 5})


def test_strided_slice_masks_directly():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.strided_slice(tf.constant(x), [0, 1], [0, 3], [1, 1], begin_mask=1, end_mask=1)
    assert t.shape.as_list() == [2, 2, 4]
    np.testing.assert_array_equal(run(t), x[:, 1:3])
    s = tf.strided_slice(tf.constant(x), [1, 0], [2, 0], [1, 1], shrink_axis_mask=1, end_mask=2)
    np.testing.assert_array_equal(run(s), x[1, 0:])


# -- one_hot, where, stop_gradient ---------------------------------------------------------


def test_one_hot_default_and_axis():
    idx = tf.constant([0, 2, -1, 5])
    oh = tf.one_hot(idx, 3)
    assert oh.op.type == "OneHot" and oh.dtype == tf.float32 and oh.shape.as_list() == [4, 3]
    expected = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], np.float32)
    np.testing.assert_array_equal(run(oh), expected)
    oh0 = tf.one_hot(idx, 3, on_value=5, off_value=-1, axis=0)
    assert oh0.dtype == tf.int32 and oh0.shape.as_list() == [3, 4]
    np.testing.assert_array_equal(run(oh0), np.where(expected.T == 1, 5, -1))


def test_one_hot_dtype_mismatch():
    with pytest.raises(TypeError, match="of on_value does not match dtype parameter"):
        tf.one_hot([0], 2, on_value=1.0, dtype=tf.int32)


def test_where_select_same_shape_and_vector_condition():
    c = tf.constant([[True, False], [False, True]])
    a, b = tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[9.0, 8.0], [7.0, 6.0]])
    s = tf.where(c, a, b)
    assert s.op.type == "Select" and s.shape.as_list() == [2, 2]
    rows = tf.where(tf.constant([False, True]), a, b)
    sv, rv = run([s, rows])
    np.testing.assert_array_equal(sv, [[1, 8], [7, 4]])
    np.testing.assert_array_equal(rv, [[9, 8], [3, 4]])


def test_where_select_shape_errors():
    with pytest.raises(ValueError, match="x and y must both be non-None"):
        tf.where(tf.constant([True]), tf.constant([1.0]))
    with pytest.raises(ValueError, match="compatible"):
        tf.where(tf.constant([True, False, True]), tf.zeros([2, 2]), tf.zeros([2, 2]))
    with pytest.raises(TypeError, match="expected type of bool"):
        tf.where(tf.constant([1.0]), tf.zeros([1]), tf.zeros([1]))


def test_where_coordinates_int64():
    w = tf.where(tf.constant([[True, False], [True, True]]))
    assert w.op.type == "Where" and w.dtype == tf.int64 and w.shape.as_list() == [None, 2]
    value = run(w)
    assert value.dtype == np.int64
    np.testing.assert_array_equal(value, [[0, 0], [1, 0], [1, 1]])


def test_stop_gradient_blocks_gradient():
    x = tf.placeholder(tf.float64, [2])
    y = tf.stop_gradient(x * 3.0) + x
    (g,) = tf.gradients(y, x)
    assert y.op.inputs[0].op.type == "StopGradient"
    np.testing.assert_array_equal(run(g, {x: [1.0, 2.0]}), [1.0, 1.0])


# -- gather, IndexedSlices, unsorted_segment_sum -------------------------------------------


def test_gather_values_and_shapes():
    p = tf.placeholder(tf.float32, [None, 4])
    g = tf.gather(p, [[2, 0], [1, 1]])
    g1 = tf.gather(p, [3, 0], axis=1)
    assert g.op.type == "GatherV2" and g.shape.as_list() == [2, 2, 4]
    assert g1.shape.as_list() == [None, 2]
    gv, g1v = run([g, g1], {p: X34})
    np.testing.assert_array_equal(gv, X34[[[2, 0], [1, 1]]])
    np.testing.assert_array_equal(g1v, X34[:, [3, 0]])


def test_gather_non_int_indices_is_type_error():
    with pytest.raises(TypeError, match="indices"):
        tf.gather(tf.constant(X34), [0.0, 1.0])


def test_gather_index_out_of_range_message():
    params = tf.constant(np.arange(5.0, dtype=np.float32))
    idx = tf.placeholder(tf.int32, [None])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 5\)"
    ):
        run(tf.gather(params, idx), {idx: [0, 7, 2]})


def test_gather_gradient_is_indexed_slices():
    params = tf.constant(X34)
    indices = tf.constant([[2, 0], [2, 1]])
    y = tf.gather(params, indices)
    (g,) = tf.gradients(y, params)
    assert isinstance(g, tf.IndexedSlices)
    assert g.values.shape.as_list() == [4, 4]
    values, idx, dense_shape = run([g.values, g.indices, g.dense_shape])
    np.testing.assert_array_equal(values, np.ones((4, 4), np.float32))
    np.testing.assert_array_equal(idx, [2, 0, 2, 1])
    np.testing.assert_array_equal(dense_shape, [3, 4])


def test_indexed_slices_densify_sums_duplicates():
    params = tf.constant(X34)
    y = tf.gather(params, [2, 0, 2]) * tf.constant([[1.0], [2.0], [3.0]])
    (g,) = tf.gradients(y, params)
    dense = tf.convert_to_tensor(g)
    assert dense.op.type == "UnsortedSegmentSum" and dense.shape.as_list() == [3, 4]
    expected = np.zeros((3, 4), np.float32)
    expected[0], expected[2] = 2.0, 1.0 + 3.0
    np.testing.assert_array_equal(run(dense), expected)


def test_indexed_slices_densify_warns_for_unknown_shape(caplog):
    params = tf.placeholder(tf.float32, [None, 2])
    (g,) = tf.gradients(tf.gather(params, [0]), params)
    with caplog.at_level(logging.WARNING, logger="minitf"):
        tf.convert_to_tensor(g)
    assert "dense Tensor of unknown shape" in caplog.text


def test_indexed_slices_without_dense_shape_cannot_densify():
    s = tf.IndexedSlices(tf.zeros([1, 2]), tf.constant([0]))
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(s)


def test_unsorted_segment_sum_values_and_errors():
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    s = tf.unsorted_segment_sum(data, [2, 0, 2], 4)
    assert s.op.type == "UnsortedSegmentSum" and s.shape.as_list() == [4, 2]
    np.testing.assert_array_equal(run(s), [[3, 4], [0, 0], [6, 8], [0, 0]])
    dropped = tf.unsorted_segment_sum(data, [-1, 0, 0], 1)
    np.testing.assert_array_equal(run(dropped), [[8, 10]])
    ids = tf.placeholder(tf.int32, [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 9 is out of"):
        run(tf.unsorted_segment_sum(data, ids, 4), {ids: [0, 9, 1]})
    with pytest.raises(ValueError, match="prefix"):
        tf.unsorted_segment_sum(data, [0, 1], 2)


def test_dynamic_partition_and_stitch_roundtrip():
    data = tf.constant([10.0, 20.0, 30.0, 40.0])
    parts = tf.dynamic_partition(data, [1, 0, 1, 0], 2)
    idx = tf.dynamic_partition(tf.constant([0, 1, 2, 3]), [1, 0, 1, 0], 2)
    back = tf.dynamic_stitch(idx, parts)
    p0, p1, bv = run([parts[0], parts[1], back])
    np.testing.assert_array_equal(p0, [20, 40])
    np.testing.assert_array_equal(p1, [10, 30])
    np.testing.assert_array_equal(bv, [10, 20, 30, 40])


def _unique_reference(values):
    """Distinct values in order of first appearance, and each element's position among them."""
    y, idx = [], []
    for v in values:
        if v not in y:
            y.append(v)
        idx.append(y.index(v))
    return y, idx


@pytest.mark.parametrize(
    "values", [[1, 1, 2, 4, 4, 4, 7, 8, 8], [5, 3, 5, 1, 3], [2.5, -1.0, 2.5], [7], []]
)
def test_unique_lists_values_in_order_of_first_appearance(values):
    x = tf.placeholder(tf.float32 if any(isinstance(v, float) for v in values) else tf.int32)
    out = tf.unique(x)
    y, idx = run(out, {x: values})
    want_y, want_idx = _unique_reference(values)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(idx, want_idx)
    assert idx.dtype == np.int32 and y.dtype == x.dtype.as_numpy_dtype
    assert out.y is out[0] and out.idx is out[1] and out[0].op.type == "Unique"


def test_unique_out_idx_int64_and_static_shapes():
    y, idx = tf.unique(tf.constant([3, 1, 3]), out_idx=tf.int64)
    assert idx.dtype == tf.int64 and idx.shape.as_list() == [3]
    assert y.shape.as_list() == [None]
    assert run(idx).dtype == np.int64
    with pytest.raises(TypeError, match="out_idx"):
        tf.unique([1, 2], out_idx=tf.float32)


def test_unique_rejects_non_vectors():
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2.*'Unique'"):
        tf.unique([[1, 2]])
    x = tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="unique expects a 1D vector"):
        run(tf.unique(x).y, {x: [[1, 2]]})


# -- finite-difference gradient checks (float64) -------------------------------------------

GRADIENT_CASES = {
    "reshape": ((2, 3), lambda x: tf.reshape(x, [3, 2])),
    "identity": ((3,), lambda x: tf.identity(x)),
    "fill": ((), lambda x: tf.fill([2, 3], x)),
    "concat": ((2, 3), lambda x: tf.concat([x, 2.0 * x, tf.ones([2, 1], tf.float64)], 1)),
    "concat_axis0_unknown": (
        (2, 3),
        lambda x: tf.concat([tf.placeholder_with_default(x, [None, 3]), x * x], 0),
    ),
    "stack": ((2, 3), lambda x: tf.stack([x, x * x], axis=1)),
    "unstack": ((3, 2), lambda x: tf.unstack(x, axis=1)[1] * 3.0),
    "split": ((4, 2), lambda x: tf.split(x, 2)[1]),
    "split_v": ((5, 2), lambda x: tf.split(x, [2, -1], 0)[1] + 0.0),
    "transpose": ((2, 3, 4), lambda x: tf.transpose(x, [2, 0, 1])),
    "expand_dims": ((2, 3), lambda x: tf.expand_dims(x, 1)),
    "squeeze": ((2, 1, 3), lambda x: tf.squeeze(x)),
    "tile": ((2, 3), lambda x: tf.tile(x, [2, 3])),
    "pad": ((2, 3), lambda x: tf.pad(x, [[1, 0], [2, 1]])),
    "pad_v2": ((2, 3), lambda x: tf.pad(x, [[0, 1], [1, 1]], constant_values=2.0)),
    "slice": ((3, 4), lambda x: tf.slice(x, [1, 0], [2, 3])),
    "getitem": ((4, 5), lambda x: x[1:, ::-2]),
    "getitem_shrink_newaxis": ((4, 5), lambda x: x[tf.newaxis, 2, ..., 1:4]),
    "select": ((2, 3), lambda x: tf.where(tf.constant([True, False]), x, x * x)),
    "gather": ((4, 3), lambda x: tf.gather(x, [[3, 1], [3, 0]])),
    "gather_axis1": ((2, 4, 3), lambda x: tf.gather(x, [2, 2, 0], axis=1)),
    "unsorted_segment_sum": ((4, 2), lambda x: tf.unsorted_segment_sum(x, [1, -1, 1, 0], 3)),
    "dynamic_partition": ((4, 2), lambda x: tf.dynamic_partition(x, [1, 0, 1, 1], 2)[1] + 0.0),
    "dynamic_stitch": (
        (3, 2),
        lambda x: tf.dynamic_stitch([tf.constant([2, 0, 4]), tf.constant([1, 3])], [x, x[:2] * 2]),
    ),
}


@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_gradient_matches_finite_differences(case):
    x_shape, build = GRADIENT_CASES[case]
    assert grad_error(x_shape, build, rand(*x_shape)) < 1e-6


def test_strided_slice_second_order_gradient():
    x = tf.placeholder(tf.float64, [4, 3])
    y = x[1:3, 0] * x[1:3, 0]
    (g,) = tf.gradients(y, x)
    (gg,) = tf.gradients(g, x)
    xv = rand(4, 3)
    expected = np.zeros((4, 3))
    expected[1:3, 0] = 2.0
    np.testing.assert_allclose(run(gg, {x: xv}), expected)


def test_one_hot_and_shape_ops_have_no_gradient():
    x = tf.placeholder(tf.float64, [2])
    y = tf.one_hot([0, 1], 2, on_value=x[0], off_value=x[1])
    (g,) = tf.gradients(y, x)
    assert g is None


def test_array_ops_namespace():
    for name in ["zeros", "concat", "stack", "unstack", "gather", "where", "one_hot", "newaxis"]:
        assert hasattr(tf, name)
    assert tf.newaxis is None
    assert array_ops.unsorted_segment_sum is tf.unsorted_segment_sum


def test_indexed_slices_densify_warns_for_huge_dense_shape(caplog):
    huge = tf.IndexedSlices(tf.zeros([1, 2]), tf.constant([0]), tf.constant([60_000_000, 2]))
    with caplog.at_level(logging.WARNING, logger="minitf"):
        dense = tf.convert_to_tensor(huge)
    assert "dense Tensor with 120000000 elements" in caplog.text
    assert dense.shape.as_list() == [60_000_000, 2]


def test_multi_output_ops_with_a_single_output():
    x = np.arange(3.0, dtype=np.float32).reshape(1, 3)
    t = tf.constant(x)
    (u,), (s,), (sv,), (sn,) = tf.unstack(t), tf.split(t, 1), tf.split(t, [3], 1), tf.shape_n([t])
    uv, s_v, svv, snv = run([u, s, sv, sn])
    np.testing.assert_array_equal(uv, x[0])
    np.testing.assert_array_equal(s_v, x)
    np.testing.assert_array_equal(svv, x)
    np.testing.assert_array_equal(snv, [1, 3])
