"""Tests for tf.TensorArray: its ops, their kernels, its per-step life and its gradients.

Most cases are ports of TF's ``tensor_array_ops_test.py`` with its expected
values; the messages are those of TF's kernels (``tensor_array.h``,
``tensor_array_ops.cc``), and where TF 1.x and the old test disagree (an
index never written reads as zeros once the element shape is known) the
case follows TensorFlow as it runs. Gradients are checked against values
derived by hand and against finite differences.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.tensor_array_grad import _grad_source
from minitf.ops.gradients import gradient_checker
from minitf.runtime.core.step_context import StepContext

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default() as g:
        yield g


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _foo(**kwargs):
    kwargs.setdefault("size", 3)
    return tf.TensorArray(dtype=kwargs.pop("dtype", tf.float32), tensor_array_name="foo", **kwargs)


def _fails(fetch, *words, error=tf.errors.InvalidArgumentError):
    with pytest.raises(error) as info:
        _run(fetch)
    for word in words:
        assert word in info.value.message, info.value.message
    return info.value


# -- writes, reads, stacks, concats ----------------------------------------------------


def test_write_then_read_each_index():
    w = _foo(infer_shape=False).write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    d0, d1, d2 = _run([w.read(0), w.read(1), w.read(2)])
    np.testing.assert_array_equal(d0, [[4.0, 5.0]])
    np.testing.assert_array_equal(d1, [[1.0]])
    np.testing.assert_array_equal(d2, -3.0)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64, tf.complex64])
def test_write_then_stack(dtype):
    np_dtype = dtype.as_numpy_dtype
    ta = _foo(dtype=dtype)
    w = ta.write(0, np.array([[4, 5]], np_dtype)).write(1, np.array([[6, 7]], np_dtype))
    w = w.write(2, np.array([[8, 9]], np_dtype))
    stacked = w.stack()
    assert stacked.get_shape().as_list() == [3, 1, 2]
    np.testing.assert_array_equal(_run(stacked), np.array([[[4, 5]], [[6, 7]], [[8, 9]]], np_dtype))


@pytest.mark.parametrize("dtype", [tf.float32, tf.int64])
def test_write_then_concat(dtype):
    np_dtype = dtype.as_numpy_dtype
    rows = [[[4, 5], [104, 105], [204, 205]], [[6, 7], [106, 107]], [[8, 9]]]
    w = _foo(dtype=dtype, infer_shape=False)
    for i, row in enumerate(rows):
        w = w.write(i, np.array(row, np_dtype))
    np.testing.assert_array_equal(_run(w.concat()), np.concatenate(rows).astype(np_dtype))


def test_unstack_then_read():
    w = _foo().unstack([1.0, 2.0, 3.0])
    assert _run([w.read(0), w.read(1), w.read(2)]) == [1.0, 2.0, 3.0]
    w = _foo().unstack([[1.0, 1.1], [2.0, 2.1], [3.0, 3.1]])
    np.testing.assert_allclose(_run(w.read(2)), [3.0, 3.1])
    empty = _run([_foo().unstack(np.zeros((3, 0), np.float32)).read(i) for i in range(3)])
    assert [e.shape for e in empty] == [(0,)] * 3


def test_split_then_read():
    w = _foo(infer_shape=False).split([1.0, 2.0, 3.0], lengths=tf.constant([2, 0, 1]))
    d0, d1, d2 = _run([w.read(0), w.read(1), w.read(2)])
    np.testing.assert_array_equal(d0, [1.0, 2.0])
    assert d1.shape == (0,)
    np.testing.assert_array_equal(d2, [3.0])
    matrix = [[1.0, 101.0], [2.0, 201.0], [3.0, 301.0]]
    w = _foo(infer_shape=False).split(matrix, lengths=[2, 0, 1])
    d0, d1, d2 = _run([w.read(0), w.read(1), w.read(2)])
    np.testing.assert_array_equal(d0, matrix[:2])
    assert d1.shape == (0, 2)
    np.testing.assert_array_equal(d2, matrix[2:])


def test_gather_and_scatter_take_indices_in_any_order():
    w = _foo(size=4).scatter([2, 0, 3, 1], [[20.0], [0.0], [30.0], [10.0]])
    np.testing.assert_array_equal(_run(w.gather([3, 1])), [[30.0], [10.0]])


def test_size_of_a_fixed_and_of_a_grown_array():
    assert _run(_foo().size()) == 3
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(4, 1.0)
    assert _run(grown.size()) == 5


def test_a_dynamic_array_stacks_its_unwritten_indices_as_zeros():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[2])
    np.testing.assert_array_equal(_run(ta.write(2, [1.0, 2.0]).stack()), [[0, 0], [0, 0], [1, 2]])


def test_unstack_into_a_dynamic_array_then_write_past_it():
    w = tf.TensorArray(tf.float32, size=3, dynamic_size=True).unstack([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(_run(w.write(3, 4.0).stack()), [1.0, 2.0, 3.0, 4.0])


def test_an_empty_array_stacks_to_its_element_shape():
    empty = _run(tf.TensorArray(tf.float32, size=0, element_shape=[3]).stack())
    assert empty.shape == (0, 3)


def test_reading_twice_needs_clear_after_read_false():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])
    w = _foo(size=2, clear_after_read=False).unstack(value)
    first = w.read(0)
    with tf.control_dependencies([first]):
        again = w.read(0)
    np.testing.assert_array_equal(_run(again), [1.0, -1.0])


def test_close_then_size_fails_and_closing_runs_clean():
    ta = _foo(infer_shape=False)
    w = ta.write(0, [[4.0, 5.0]]).write(1, [3.0])
    _run(w.close())
    with tf.control_dependencies([ta.close()]):
        size = tf.TensorArray(tf.float32, handle=ta.handle, flow=tf.identity(ta.flow)).size()
    _fails(size, "TensorArray foo_", "has already been closed.")


def test_identity_orders_later_ops_after_the_control_dependencies():
    w = _foo().write(0, 1.0)
    first = w.read(0)
    with tf.control_dependencies([first]):
        same = w.identity()
    assert same.handle is w.handle and same.flow is not w.flow
    _fails(same.read(0), "Could not read index 0 twice")


# -- static shapes -----------------------------------------------------------------------


def test_reads_take_the_shape_of_the_writes():
    c0 = tf.constant([4.0, 5.0])
    w0 = _foo().write(0, c0)
    assert w0.read(0).get_shape() == c0.get_shape()
    assert w0.write(1, [6.0, 7.0]).read(1).get_shape().as_list() == [2]
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"):
        w0.write(0, [4.0, 5.0, 6.0])


def test_unstack_and_split_set_the_element_shape():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    assert ta.unstack(value).read(0).get_shape().as_list() == [2]
    split = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    assert split.split(value, [1, 1, 1]).read(0).get_shape().as_list() == [1, 2]
    uneven = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    assert uneven.split(value, [1, 2]).read(0).get_shape().ndims is None


def test_a_write_of_unknown_shape_leaves_the_read_unknown():
    w = _foo().write(0, tf.placeholder(tf.float32))
    assert w.read(0).get_shape().ndims is None


def test_arguments_that_exclude_each_other():
    ta = _foo()
    with pytest.raises(ValueError, match="Argument `size` must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="both a `handle` and `size`"):
        tf.TensorArray(tf.float32, size=2, handle=ta.handle, flow=ta.flow)
    with pytest.raises(ValueError, match="both `handle` and `tensor_array_name`"):
        tf.TensorArray(tf.float32, tensor_array_name="x", handle=ta.handle, flow=ta.flow)
    with pytest.raises(ValueError, match="flow must not be None"):
        tf.TensorArray(tf.float32, handle=ta.handle)
    with pytest.raises(TypeError, match="Expected `handle` to be a Tensor"):
        tf.TensorArray(tf.float32, handle="h", flow=ta.flow)


def test_a_size_that_is_not_a_scalar_fails_at_construction():
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'TensorArray"):
        tf.TensorArray(tf.float32, size=[2])


# -- run-time errors -----------------------------------------------------------------------


def test_writing_the_wrong_dtype_or_out_of_range():
    _fails(
        _foo().write(0, "wrong").flow,
        "TensorArray dtype is float but Op is trying to write dtype string",
    )
    _fails(
        _foo().write(-1, 3.0).flow,
        "Tried to write to index -1 but array is not resizeable and size is: 3",
    )
    _fails(
        _foo().write(3, 3.0).flow,
        "Tried to write to index 3 but array is not resizeable and size is: 3",
    )


def test_reading_the_wrong_dtype_or_out_of_range():
    w0 = _foo().write(0, [[4.0, 5.0]])
    as_double = tf.TensorArray(tf.float64, handle=w0.handle, flow=w0.flow)
    _fails(as_double.read(0), "TensorArray dtype is float but Op requested dtype double.")
    _fails(_foo().read(-1), "Tried to read from index -1 but array size is: 3")
    _fails(_foo().read(3), "Tried to read from index 3 but array size is: 3")


def test_an_index_never_written_reads_as_zeros_once_the_shape_is_known():
    np.testing.assert_array_equal(_run(_foo().write(0, [[4.0, 5.0]]).read(1)), [[0.0, 0.0]])
    np.testing.assert_array_equal(
        _run(_foo().write(0, [[4.0, 5.0]]).stack()), [[[4.0, 5.0]], [[0, 0]], [[0, 0]]]
    )
    _fails(
        _foo(infer_shape=False).write(0, [[4.0, 5.0]]).read(1),
        "Could not read from TensorArray index 1.  Furthermore, the element shape is not fully "
        "defined: <unknown>.",
    )


def test_writing_an_index_twice_fails():
    e = _fails(
        _foo().write(2, 3.0).write(2, 3.0).flow,
        "Could not write to TensorArray index 2 because it has already been written to.",
    )
    assert e.op.type == "TensorArrayWriteV3"


def test_writing_an_index_after_reading_it_fails():
    w = _foo(clear_after_read=False).write(0, 3.0)
    r = w.read(0)
    with tf.control_dependencies([r]):
        again = w.write(0, 1.0)
    _fails(again.flow, "Could not write to TensorArray index 0 because it has already been read.")


def test_reading_an_index_twice_fails_when_cleared_after_read():
    w = _foo(size=2).unstack(tf.constant([[1.0, -1.0], [10.0, -10.0]]))
    first = w.read(0)
    with tf.control_dependencies([first]):
        again = w.read(0)
    _fails(
        again,
        "Could not read index 0 twice because it was cleared after a previous read (perhaps try "
        "setting clear_after_read = false?).",
    )


def test_a_value_shape_unlike_the_first_fails_when_run():
    first = tf.placeholder_with_default([1.0], [None])
    second = tf.placeholder_with_default([1.0, 2.0], [None])
    _fails(
        _foo().write(0, first).write(1, second).flow,
        "Could not write to TensorArray index 1 because the value shape is [2] which is "
        "incompatible with the TensorArray's inferred element shape: [1] (consider setting "
        "infer_shape=False).",
    )


def test_concat_of_incompatible_shapes_fails():
    w = _foo(infer_shape=False).write(0, 3.0).write(1, 4.0).write(2, [3.0])
    _fails(w.concat(), "Concat saw a scalar shape at index 0 but requires at least vectors")
    w = _foo(infer_shape=False).write(0, [3.0]).write(1, [4.0]).write(2, [[3.0]])
    _fails(
        w.concat(),
        "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: [] but "
        "index 2 has (excepting dimension 0) shape: [1]",
    )


def test_stack_of_inconsistent_shapes_fails():
    w = _foo(infer_shape=False).write(0, [3.0]).write(1, [4.0, 1.0]).write(2, [3.0])
    _fails(w.stack(), "Index 0 has shape: [1] but index 1 has shape: [2]")


def test_scatter_and_split_that_do_not_fit():
    _fails(
        _foo().scatter([0, 3], [1.0, 2.0]).flow, "Max scatter index must be < array size (3 vs. 3)"
    )
    _fails(
        _foo().split([1.0, 2.0, 3.0], [1, 1]).flow,
        "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is 2",
    )
    _fails(
        _foo().split([1.0, 2.0, 3.0, 4.0], [1, 1, 1, 1]).flow,
        "TensorArray's size is not equal to the size of lengths (3 vs. 4)",
    )


def test_a_negative_size_and_an_empty_array_of_unknown_shape():
    _fails(tf.TensorArray(tf.float32, size=-1).flow, "Size should be >= 0.")
    _fails(
        tf.TensorArray(tf.float32, size=0).stack(),
        "TensorArray has size zero, but element shape <unknown> is not fully defined.",
        error=tf.errors.UnimplementedError,
    )
    _fails(
        tf.TensorArray(tf.float32, size=0).concat(),
        "TensorArray has size zero, but element_shape_except0 <unknown> is not fully defined.",
        error=tf.errors.UnimplementedError,
    )


# -- one array per step --------------------------------------------------------------------


def test_each_run_has_its_own_array():
    ta = _foo(size=2)
    w = ta.write(0, tf.placeholder(tf.float32, []))
    with tf.Session() as sess:
        assert sess.run(w.read(0), {w.flow.op.inputs[2]: 7.0}) == 7.0
        assert sess.run(w.read(0), {w.flow.op.inputs[2]: 8.0}) == 8.0  # not "written twice"
        sess.run(w.flow, {w.flow.op.inputs[2]: 1.0})
        # The write of the run before is gone with its step.
        late = tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.flow).read(0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="element shape is not fully"):
            sess.run(late)
        assert sess._resource_mgr.items() == []  # nothing is kept in the task's resources


def test_a_step_container_is_the_steps_own():
    first, second = StepContext(None, step_id=41), StepContext(None, step_id=42)
    assert first.step_container is first.step_container
    assert first.step_container is not second.step_container
    assert second.step_container.default_container == "__per_step_42"


# -- gradients -----------------------------------------------------------------------------


def test_gradient_array_write_and_read():
    ta = _foo(infer_shape=False)
    g_ta = ta.grad("grad")
    w = ta.write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    g_w = g_ta.write(0, [[5.0, 6.0]]).write(1, [[2.0]]).write(2, -2.0)
    d0, g_d0, g_d2 = _run([w.read(0), g_w.read(0), g_w.read(2)])
    np.testing.assert_array_equal(d0, [[4.0, 5.0]])
    np.testing.assert_array_equal(g_d0, [[5.0, 6.0]])
    assert g_d2 == -2.0


def test_gradient_array_of_a_dynamic_array_has_its_size():
    w = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)
    w = w.write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    g_ta = w.grad("grad")
    assert _run([w.size(), g_ta.size()]) == [3, 3]


def test_two_grad_calls_with_one_source_share_the_array():
    ta = _foo()
    g0, g1 = ta.grad("grad"), ta.grad("grad")
    with tf.control_dependencies([g0.write(0, [[4.0, 5.0]]).flow]):
        r = g1.read(0)
    np.testing.assert_array_equal(_run(r), [[4.0, 5.0]])


def test_gradient_of_unstack_then_reads_sums_the_reads_of_one_index():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])
    w = _foo(size=2, clear_after_read=False).unstack(value)
    grad = tf.gradients(
        ys=[w.read(0), w.read(0), w.read(1)],
        xs=[value],
        grad_ys=[[2.0, 3.0], [-1.5, 1.5], [4.0, 5.0]],
    )
    np.testing.assert_array_equal(_run(grad)[0], [[2.0 - 1.5, 3.0 + 1.5], [4.0, 5.0]])


def test_gradient_of_writes_then_stack_concat_and_read():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])
    a, b = value[0], value[1]
    w = _foo(size=2, clear_after_read=False).write(0, a).write(1, b)
    ys = [w.stack(), w.concat(), w.read(0), w.read(1)]
    grad_ys = [[[2.0, 3.0], [4.0, 5.0]], [3.0, 4.0, 5.0, 6.0], [10.0, 20.0], [30.0, 40.0]]
    grad = _run(tf.gradients(ys, [a, b], grad_ys=grad_ys))
    # d/da: stack row 0 + concat's first two + read(0); d/db likewise.
    np.testing.assert_array_equal(grad[0], [2.0 + 3.0 + 10.0, 3.0 + 4.0 + 20.0])
    np.testing.assert_array_equal(grad[1], [4.0 + 5.0 + 30.0, 5.0 + 6.0 + 40.0])


def test_uneven_pieces_of_a_split_do_not_fit_an_inferred_shape():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    _fails(
        _foo(size=2).split(value, [2, 1]).flow,
        "Could not write to TensorArray index 1 because the value shape is [1,2] which is "
        "incompatible with the TensorArray's inferred element shape: [2,2]",
    )


def test_gradient_of_split_then_concat_is_the_incoming_gradient():
    value = tf.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    r = _foo(size=2, infer_shape=False).split(value, [2, 1]).concat()
    upstream = [[2.0, -2.0], [20.0, -20.0], [200.0, -200.0]]
    np.testing.assert_array_equal(_run(tf.gradients([r], [value], grad_ys=[upstream]))[0], upstream)


def test_gradient_of_an_index_never_read_is_zero():
    x = tf.constant([2.0, 3.0])
    r0 = _foo(size=2).unstack(x).read(0)
    np.testing.assert_array_equal(_run(tf.gradients(r0, x, grad_ys=1.0))[0], [1.0, 0.0])


def test_gradient_of_scatter_then_gather():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    g = _foo(size=4).scatter([3, 0, 2], x).gather([2, 3])
    grad = _run(tf.gradients([g], [x], grad_ys=[[[1.0, 2.0], [3.0, 4.0]]]))[0]
    # gather row 0 is x[2] (index 2), row 1 is x[0] (index 3); x[1] (index 0) is not read.
    np.testing.assert_array_equal(grad, [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])


def test_two_gradient_computations_keep_their_own_arrays():
    a = tf.identity(np.arange(1, 16, dtype=np.float32).reshape(3, 5))
    b = tf.identity(np.arange(16, 31, dtype=np.float32).reshape(3, 5))
    ta = tf.TensorArray(tf.float32, size=2).write(0, a, name="write_a").write(1, b, name="write_b")
    c = ta.read(0, name="read_a_0") + ta.read(1, name="read_b_0")
    g0 = -np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    grad_a = tf.gradients([c], [a], [g0])[0]
    grad_b = tf.gradients([c], [b], [g0])[0]
    for values in (_run([grad_a]), _run([grad_b]), _run([grad_a, grad_b])):
        for value in values:
            np.testing.assert_array_equal(value, g0)


def test_gradient_through_a_tensor_array_matches_finite_differences():
    x = tf.placeholder(tf.float64, [3, 2])
    ta = tf.TensorArray(tf.float64, size=3, clear_after_read=False).unstack(x)
    y = ta.read(0) * ta.read(2) + tf.square(ta.read(1))
    w = tf.TensorArray(tf.float64, size=2).write(0, y).write(1, 2.0 * ta.read(0))
    out = w.stack() * 3.0
    with tf.Session():
        theoretical, numerical = gradient_checker.compute_gradient(x, [3, 2], out, [2, 2])
    np.testing.assert_allclose(theoretical, numerical, rtol=1e-6, atol=1e-6)


def test_grad_source_is_the_innermost_gradients_scope():
    def source(name):
        return _grad_source(tf.constant(0, name=name))

    assert source("gradients") == "gradients:0"
    assert source("gradients_0/foo") == "gradients_0"
    assert source("foo/bar/gradients/baz") == "foo/bar/gradients"
    assert source("foo/gradients/bar/gradients_0/baz") == "foo/gradients/bar/gradients_0"
    for bad in ("foo", "foo/bar"):
        with pytest.raises(ValueError, match="Expected op/tensor name to start with gradients"):
            source(bad)


def test_tensor_array_ops_have_tf_names():
    ta = _foo()
    w = ta.write(0, [1.0])
    types = {
        ta.handle.op.type, w.flow.op.type, w.read(0).op.type, w.stack().op.type,
        w.concat().op.type, _foo().unstack([1.0, 2.0, 3.0]).flow.op.type,
        _foo().split([1.0, 2.0, 3.0], [1, 1, 1]).flow.op.type,
        tf.TensorArray(tf.float32, size=1, dynamic_size=True).size().op.type,
        ta.close().type, ta.grad("g").handle.op.type,
    }  # fmt: skip
    assert types == {
        "TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayGatherV3",
        "TensorArrayConcatV3", "TensorArrayScatterV3", "TensorArraySplitV3",
        "TensorArraySizeV3", "TensorArrayCloseV3", "TensorArrayGradV3",
    }  # fmt: skip
    assert (
        ta.handle.op.name == "TensorArray"
        and w.flow.op.name == "TensorArrayWrite/TensorArrayWriteV3"
    )


def test_a_tensor_array_step_moves_op_by_op_under_the_stepper():
    from minitf.stepper import HeldScheduler, Stepper

    w = tf.TensorArray(tf.float32, size=2, name="ta").write(0, 3.0).write(1, 4.0)
    total = tf.reduce_sum(w.stack(), name="total")
    with tf.Session(scheduler=HeldScheduler()) as sess:
        stepper = Stepper.for_session(sess)
        result = {}
        runner = threading.Thread(target=lambda: result.update(v=sess.run(total)), daemon=True)
        runner.start()
        while stepper.next(wait=0.5) is not None:
            assert stepper.state()["tasks"]
        runner.join(10)
    assert result["v"] == 7.0
    ran = [e["op"] for e in stepper.events]
    assert ran.index("ta") < ran.index("TensorArrayWrite/TensorArrayWriteV3") < ran.index("total")


def test_the_renderer_draws_a_graph_of_tensor_array_ops(_graph):
    from minitf.viz import dot

    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.TensorArray(tf.float32, size=3).unstack(x)
    tf.gradients(w.read(1), x)
    text = dot.graph_dot(_graph)
    for op_type in ("TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3"):
        assert op_type in text
    assert "resource []" in text  # the handle's edges are labelled like any tensor
