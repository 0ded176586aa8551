"""Specification tests for the state ops: Assign*, scatter updates, resource-variable ops."""

import weakref

import numpy as np
import pytest

import minitf as tf
from minitf.framework.op_registry import get_kernel_def
from minitf.runtime.core.resource_mgr import ResourceMgr

pytestmark = pytest.mark.timeout(60)


def _initialized(sess, *variables):
    sess.run([v.initializer for v in variables])


# -- Assign ops -----------------------------------------------------------------------------


def test_assign_op_attributes():
    v = tf.Variable([1.0, 2.0])
    a = tf.assign(v, [3.0, 4.0])
    assert a.op.type == "Assign"
    assert a.op.get_attr("T") == tf.float32
    assert a.op.get_attr("validate_shape") is True
    assert a.op.get_attr("use_locking") is True
    assert a.dtype == tf.float32_ref
    assert a.shape.as_list() == [2]


def test_assign_add_and_sub_default_to_no_locking():
    v = tf.Variable([1.0, 2.0])
    assert tf.assign_add(v, [1.0, 1.0]).op.get_attr("use_locking") is False
    assert tf.assign_sub(v, [1.0, 1.0]).op.get_attr("use_locking") is False


def test_assign_requires_a_ref():
    with pytest.raises((TypeError, AttributeError)):
        tf.assign(tf.constant(1.0), 2.0)


def test_chained_assignments_through_returned_refs():
    v = tf.Variable(1.0)
    set_then_add = tf.assign_add(tf.assign(v, 10.0), 5.0)
    with tf.Session() as sess:
        _initialized(sess, v)
        assert sess.run(set_then_add) == 15.0
        assert sess.run(v) == 15.0


def test_assign_add_integer_variable():
    v = tf.Variable(np.array([1, 2, 3], dtype=np.int64))
    inc = tf.assign_add(v, np.array([10, 20, 30], dtype=np.int64))
    with tf.Session() as sess:
        _initialized(sess, v)
        sess.run(inc)
        out = sess.run(v)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [11, 22, 33])


def test_assign_add_with_runtime_shape_mismatch_raises_invalidargumenterror():
    v = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.float32)
    inc = tf.assign_add(v, p)
    with tf.Session() as sess:
        _initialized(sess, v)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(inc, {p: [1.0, 2.0, 3.0]})


def test_assign_add_on_uninitialized_variable_fails():
    v = tf.Variable(1.0, name="counter")
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="counter"):
            sess.run(inc)


def test_assign_value_fetched_earlier_is_not_changed_by_later_updates():
    v = tf.Variable([1.0, 2.0])
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.Session() as sess:
        _initialized(sess, v)
        before = sess.run(v)
        sess.run(inc)
        np.testing.assert_array_equal(before, [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])


def test_is_variable_initialized_op_type():
    v = tf.Variable(1.0)
    t = tf.is_variable_initialized(v)
    assert t.op.type == "IsVariableInitialized"
    assert t.shape.as_list() == []


# -- scatter ops ----------------------------------------------------------------------------


def _scatter_case(op, initial, indices, updates):
    v = tf.Variable(np.array(initial, dtype=np.float32))
    result = op(v, indices, np.array(updates, dtype=np.float32))
    with tf.Session() as sess:
        _initialized(sess, v)
        returned = sess.run(result)
        stored = sess.run(v)
    np.testing.assert_array_equal(returned, stored)
    return stored, result


def test_scatter_update_writes_rows():
    initial = np.arange(8, dtype=np.float32).reshape(4, 2)
    stored, result = _scatter_case(tf.scatter_update, initial, [3, 0], [[10, 11], [20, 21]])
    expected = initial.copy()
    expected[[3, 0]] = [[10, 11], [20, 21]]
    np.testing.assert_array_equal(stored, expected)
    assert result.op.type == "ScatterUpdate"
    assert result.dtype == tf.float32_ref
    assert result.op.get_attr("use_locking") is True


def test_scatter_update_duplicate_indices_with_equal_updates():
    # TF leaves the order of duplicate updates undefined; equal updates are well defined.
    stored, _ = _scatter_case(tf.scatter_update, [0, 0, 0], [1, 1], [5, 5])
    np.testing.assert_array_equal(stored, [0, 5, 0])


def test_scatter_add_accumulates_duplicate_indices():
    initial = np.ones((3, 2), dtype=np.float32)
    indices = np.array([0, 2, 0, 0])
    updates = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.float32)
    stored, result = _scatter_case(tf.scatter_add, initial, indices, updates)
    expected = initial.copy()
    np.add.at(expected, indices, updates)
    np.testing.assert_array_equal(stored, expected)
    assert result.op.type == "ScatterAdd"
    assert result.op.get_attr("use_locking") is False


def test_scatter_sub_accumulates_duplicate_indices():
    initial = np.array([10.0, 10.0, 10.0], dtype=np.float32)
    indices = np.array([1, 1, 2, 1])
    updates = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    stored, result = _scatter_case(tf.scatter_sub, initial, indices, updates)
    expected = initial.copy()
    np.subtract.at(expected, indices, updates)
    np.testing.assert_array_equal(stored, expected)
    assert result.op.type == "ScatterSub"


def test_scatter_add_with_two_dimensional_indices():
    initial = np.zeros((3, 2), dtype=np.float32)
    indices = np.array([[0, 1], [1, 1]])
    updates = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    stored, _ = _scatter_case(tf.scatter_add, initial, indices, updates)
    expected = initial.copy()
    np.add.at(expected, indices.ravel(), updates.reshape(4, 2))
    np.testing.assert_array_equal(stored, expected)


def test_scatter_add_repeated_runs_keep_accumulating():
    v = tf.Variable(np.zeros(3, dtype=np.float32))
    op = tf.scatter_add(v, [2, 2], [1.0, 1.0])
    with tf.Session() as sess:
        _initialized(sess, v)
        for _ in range(3):
            sess.run(op)
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0, 6.0])


def test_scatter_with_scalar_update_broadcasts_to_the_indexed_rows():
    # TF 1.15 ScatterAdd: "updates.shape = indices.shape + ref.shape[1:] or updates.shape = []".
    v = tf.Variable(np.zeros((3, 2), dtype=np.float32))
    op = tf.scatter_add(v, [0, 2], 10.0)
    with tf.Session() as sess:
        _initialized(sess, v)
        sess.run(op)
        np.testing.assert_array_equal(sess.run(v), [[10, 10], [0, 0], [10, 10]])


def test_scatter_static_shape_mismatch_raises_valueerror():
    v = tf.Variable(np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(ValueError):
        tf.scatter_update(v, [0, 1], np.zeros((2, 3), dtype=np.float32))


def test_scatter_float_indices_raise_typeerror():
    v = tf.Variable(np.zeros(3, dtype=np.float32))
    with pytest.raises(TypeError):
        tf.scatter_update(v, [0.0], [1.0])


@pytest.mark.parametrize("op", [tf.scatter_update, tf.scatter_add, tf.scatter_sub])
def test_scatter_out_of_range_index_raises_invalidargumenterror(op):
    v = tf.Variable(np.zeros(3, dtype=np.float32))
    idx = tf.placeholder(tf.int32, [None])
    upd = tf.placeholder(tf.float32, [None])
    result = op(v, idx, upd)
    with tf.Session() as sess:
        _initialized(sess, v)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 3\)"
        ):
            sess.run(result, {idx: [0, 5], upd: [1.0, 1.0]})
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[0\] = -1 is not in \[0, 3\)"
        ):
            sess.run(result, {idx: [-1], upd: [1.0]})
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0, 0.0])


def test_scatter_out_of_range_message_uses_multi_dimensional_index():
    # TF formats the bad position with SliceDebugString(indices.shape(), i): "[1,1]".
    v = tf.Variable(np.zeros(3, dtype=np.float32))
    idx = tf.placeholder(tf.int32, [2, 2])
    result = tf.scatter_add(v, idx, tf.ones([2, 2]))
    with tf.Session() as sess:
        _initialized(sess, v)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"indices\[1,1\] = 7 is not in \[0, 3\)"
        ):
            sess.run(result, {idx: [[0, 1], [2, 7]]})


def test_scatter_methods_on_variable_take_indexed_slices():
    v = tf.Variable(np.zeros((3, 2), dtype=np.float32))
    delta = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 0]))
    add = v.scatter_add(delta)
    with tf.Session() as sess:
        _initialized(sess, v)
        sess.run(add)
        np.testing.assert_array_equal(sess.run(v), [[3, 4], [0, 0], [1, 2]])
        sess.run(v.scatter_sub(delta))
        np.testing.assert_array_equal(sess.run(v), np.zeros((3, 2)))
        sess.run(v.scatter_update(delta))
        np.testing.assert_array_equal(sess.run(v), [[3, 4], [0, 0], [1, 2]])


# -- resource variable ops -------------------------------------------------------------------


def test_resource_variable_op_types():
    v = tf.Variable([1.0, 2.0], use_resource=True)
    assert v.handle.dtype == tf.resource
    assert v.handle.op.type == "VarHandleOp"
    assert v.assign([3.0, 4.0], read_value=False).type == "AssignVariableOp"
    assert v.assign_add([1.0, 1.0], read_value=False).type == "AssignAddVariableOp"
    assert v.assign_sub([1.0, 1.0], read_value=False).type == "AssignSubVariableOp"
    assert v.read_value().op.type == "ReadVariableOp"


def test_resource_assign_static_shape_mismatch_raises_valueerror():
    v = tf.Variable([1.0, 2.0], use_resource=True)
    with pytest.raises(ValueError):
        v.assign([1.0, 2.0, 3.0])


def test_resource_assign_add_sequence():
    v = tf.Variable(np.array([1.0, 2.0], np.float32), use_resource=True)
    inc = v.assign_add([0.5, 0.5])
    with tf.Session() as sess:
        _initialized(sess, v)
        sess.run(inc)
        np.testing.assert_array_equal(sess.run(inc), [2.0, 3.0])
        out = sess.run(v)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2.0, 3.0])


# -- CountUpTo ------------------------------------------------------------------------------


def test_count_up_to_returns_the_value_before_each_increment_then_reached_limit():
    # TF's CountUpToOp: output = old value; at the limit OutOfRange "Reached limit of N",
    # the variable keeps the limit.
    w = tf.Variable(0, name="w")
    count = w.count_up_to(3)
    assert count.op.type == "CountUpTo" and count.op.get_attr("limit") == 3
    assert count.dtype == tf.int32 and count.shape.as_list() == []
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert [sess.run(count) for _ in range(3)] == [0, 1, 2]
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 3") as e:
                sess.run(count)
            assert e.value.op is count.op
        assert sess.run(w) == 3


def test_count_up_to_on_an_int64_variable_and_a_resource_variable():
    w64 = tf.Variable(tf.constant(5, tf.int64))
    r = tf.Variable(0, use_resource=True)
    c64, cr = tf.count_up_to(w64, 6), r.count_up_to(1)
    assert c64.dtype == tf.int64 and cr.op.type == "ResourceCountUpTo"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([c64, cr]) == [5, 0]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 1"):
            sess.run(cr)


def test_count_up_to_needs_a_scalar_integer_variable():
    with pytest.raises(
        ValueError, match="Shape must be rank 0 but is rank 1 .*input shapes: \\[2\\]"
    ):
        tf.count_up_to(tf.Variable([1, 2]), 3)
    with pytest.raises(TypeError, match="has DataType float32 not in list of allowed values"):
        tf.count_up_to(tf.Variable(1.0), 3)
    with pytest.raises(TypeError, match="mutable tensor"):
        tf.count_up_to(tf.constant(1), 3)


def test_count_up_to_of_an_uninitialized_variable_fails_precondition():
    w = tf.Variable(0, name="never_initialized")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
            sess.run(w.count_up_to(2))


class _Context:
    """What a variable's kernel reads of a step: the task's resource manager."""

    def __init__(self, resource_mgr):
        self.resource_mgr = resource_mgr


def test_a_variable_kernel_finds_the_resource_its_task_holds_now():
    op = tf.Variable(np.zeros(3, np.float32), name="v").op
    compute = get_kernel_def("VariableV2").builder(op)
    manager, other = ResourceMgr(), ResourceMgr()
    first = compute(_Context(manager))
    assert compute(_Context(manager)) is first is manager.lookup("", "v")
    assert compute(_Context(other)) is other.lookup("", "v") is not first
    manager.delete("", "v")  # as a session's reset or close drops it
    again = compute(_Context(manager))
    assert again is not first and again is manager.lookup("", "v")
    manager.clear()
    collected = weakref.ref(again)
    del again, first
    assert collected() is None  # the kernel keeps no variable alive
    assert compute(_Context(manager)) is manager.lookup("", "v")
