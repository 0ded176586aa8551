"""Tests for the kernels that write into buffers, the fused MatMul kernel and in-place updates.

Pinned behaviour: a kernel's ``with_buffers`` variant gives, bit for bit, what
numpy computes op by op (NaN, infinities, signed zeros and subnormals
included), in an array it writes again only when nothing else holds it
(`reusable`); `fused_matmul` gives the bits of its ops run one by one or
declines its inputs before doing anything; a variable's update writes its
array in place only when the variable alone holds it, as TF's ``RefCountIsOne``
check does, so a value read earlier never changes.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.framework import dtypes, tensor_shape
from minitf.framework.op_registry import get_kernel_def
from minitf.ops.math.math_kernels import reusable
from minitf.ops.nn.nn_kernels import FusionDeclined, fused_matmul
from minitf.ops.state.state_ops import VariableResource

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _no_floating_point_warnings():
    """As in a step: NaN and infinities are values, not warnings (the executor's errstate)."""
    with np.errstate(all="ignore"):
        yield


SPECIAL = np.array(
    [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-39, 3.5, -2.25],
    np.float32,
)


def _values(shape, seed, special=True):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(np.float32)
    if special:
        flat = values.reshape(-1)
        flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return values


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _kernels(op):
    """``op``'s kernel and a variant of it with buffers."""
    compute = get_kernel_def(op.type).builder(op)
    return compute, compute.with_buffers()


def _twice(compute, *args):
    """Calls ``compute`` twice (the second call reuses the first's buffers); both results."""
    first = np.array(compute(None, *args), copy=True)
    return first, compute(None, *args)


# -- reusable -----------------------------------------------------------------------------


def test_reusable_gives_the_same_array_again_only_while_nothing_else_holds_it():
    buffers = [None]
    first = reusable(buffers, 0, (3, 4), np.float32)
    address = first.__array_interface__["data"][0]
    del first
    again = reusable(buffers, 0, (3, 4), np.float32)
    assert again.__array_interface__["data"][0] == address
    held = again
    del again
    other = reusable(buffers, 0, (3, 4), np.float32)
    assert other is not held and buffers[0] is other
    view = other[1:]
    del other
    assert reusable(buffers, 0, (3, 4), np.float32).base is None
    assert not np.shares_memory(buffers[0], view)


def test_reusable_gives_a_new_array_for_a_new_shape_or_dtype():
    buffers = [None]
    a = reusable(buffers, 0, (2, 2), np.float32)
    a_id = id(a)
    del a
    b = reusable(buffers, 0, (2, 3), np.float32)
    assert b.shape == (2, 3) and id(b) != a_id
    del b
    c = reusable(buffers, 0, (2, 3), np.float64)
    assert c.dtype == np.float64


# -- kernels with buffers ---------------------------------------------------------------------


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_with_buffers_gives_numpys_bits(transpose_a, transpose_b):
    a = _values((7, 5) if transpose_a else (5, 7), 0)
    b = _values((3, 7) if transpose_b else (7, 3), 1)
    x, y = tf.placeholder(tf.float32, a.shape), tf.placeholder(tf.float32, b.shape)
    op = tf.matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b).op
    _, buffered = _kernels(op)
    want = np.matmul(a.T if transpose_a else a, b.T if transpose_b else b)
    for got in _twice(buffered, a, b):
        _same_bits(got, want)


def test_a_large_matmul_with_buffers_writes_its_buffer_again_once_the_value_has_gone():
    a, b = _values((64, 30), 4), _values((30, 40), 5)
    x, y = tf.placeholder(tf.float32, a.shape), tf.placeholder(tf.float32, b.shape)
    _, buffered = _kernels(tf.matmul(x, y).op)
    first = buffered(None, a, b)
    address = first.__array_interface__["data"][0]
    _same_bits(first, np.matmul(a, b))
    del first
    again = buffered(None, a, b)
    assert again.__array_interface__["data"][0] == address
    _same_bits(again, np.matmul(a, b))


@pytest.mark.parametrize("op_type", ["MatMul", "AddV2"])
def test_kernels_with_buffers_give_small_results_in_new_arrays(op_type):
    # Below SMALL_RESULT elements numpy's own small-array cache is cheaper than a buffer.
    a, b = _values((8, 8), 6), _values((8, 8), 7)
    x, y = tf.placeholder(tf.float32, a.shape), tf.placeholder(tf.float32, b.shape)
    op = tf.matmul(x, y).op if op_type == "MatMul" else tf.add(x, y).op
    _, buffered = _kernels(op)
    first, second = buffered(None, a, b), buffered(None, a, b)
    assert first is not second and not np.shares_memory(first, second)
    want = np.matmul(a, b) if op_type == "MatMul" else np.add(a, b)
    _same_bits(first, want)
    _same_bits(second, want)


def test_matmul_with_buffers_reports_mismatched_sizes_as_the_op_does():
    op = tf.matmul(
        tf.placeholder(tf.float32, [None, None]), tf.placeholder(tf.float32, [None, None])
    ).op
    _, buffered = _kernels(op)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
        buffered(None, np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))


@pytest.mark.parametrize(
    "op_type, ufunc",
    [("AddV2", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("RealDiv", np.true_divide)],
)
@pytest.mark.parametrize(
    "shapes",
    [
        ((6, 4), (6, 4)),
        ((6, 4), (4,)),
        ((6, 1), (6, 4)),
        ((4,), (6, 4)),
        ((64, 32), (64, 32)),  # large enough for a buffer (SMALL_RESULT)
        ((64, 32), (32,)),
        ((32,), (64, 32)),
    ],
)
def test_binary_ops_with_buffers_give_numpys_bits_and_broadcast(op_type, ufunc, shapes):
    x, y = _values(shapes[0], 2), _values(shapes[1], 3)
    graph = tf.get_default_graph()
    op = graph.create_op(
        op_type,
        [tf.placeholder(tf.float32), tf.placeholder(tf.float32)],
        [tf.float32],
        attrs={"T": tf.float32},
    )
    _, buffered = _kernels(op)
    for got in _twice(buffered, x, y):
        _same_bits(got, ufunc(x, y))


def test_binary_ops_with_buffers_keep_scalars_numpy_scalars():
    op = tf.add(tf.placeholder(tf.float32), tf.placeholder(tf.float32)).op
    plain, buffered = _kernels(op)
    x, y = np.array(1.5, np.float32), np.array(2.25, np.float32)
    got = buffered(None, x, y)
    assert type(got) is type(plain(None, x, y)) is np.float32 and got == 3.75


def test_relu_and_its_gradient_with_buffers_give_numpys_bits():
    x, g = _values((9, 13), 4), _values((9, 13), 5)
    features = tf.placeholder(tf.float32)
    _, relu = _kernels(tf.nn.relu(features).op)
    for got in _twice(relu, x):
        _same_bits(got, np.maximum(x, 0))
    relu_grad_op = tf.get_default_graph().create_op(
        "ReluGrad", [tf.placeholder(tf.float32), features], [tf.float32], attrs={"T": tf.float32}
    )
    _, relu_grad = _kernels(relu_grad_op)
    for got in _twice(relu_grad, g, x):
        _same_bits(got, g * (x > 0))


@pytest.mark.parametrize("data_format, shape", [("NHWC", (5, 6)), ("NCHW", (2, 6, 3, 3))])
def test_bias_add_with_buffers_gives_numpys_bits(data_format, shape):
    value, bias = _values(shape, 6), _values((6,), 7)
    op = tf.nn.bias_add(
        tf.placeholder(tf.float32, shape), tf.placeholder(tf.float32, [6]), data_format=data_format
    ).op
    _, buffered = _kernels(op)
    view = bias if data_format == "NHWC" else bias.reshape(-1, 1, 1)
    for got in _twice(buffered, value, bias):
        _same_bits(got, value + view)


def test_sparse_softmax_cross_entropy_with_buffers_gives_the_kernels_bits():
    logits = _values((8, 5), 8, special=False) * 4
    logits[0, 1] = -0.0
    labels = np.array([0, 4, 1, 2, 3, 4, 0, 1], np.int64)
    op = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int64, [8]), logits=tf.placeholder(tf.float32, [8, 5])
    ).op
    _, buffered = _kernels(op)
    rows = np.arange(8)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exps = np.exp(shifted)
    sums = exps.sum(axis=-1, keepdims=True)
    want_loss = np.log(sums[:, 0]) - shifted[rows, labels]
    want_backprop = exps / sums
    want_backprop[rows, labels] -= 1
    first_loss, first_backprop = (np.array(v) for v in buffered(None, logits, labels))
    loss, backprop = buffered(None, logits, labels)
    for got, want in ((first_loss, want_loss), (loss, want_loss), (backprop, want_backprop)):
        _same_bits(got, want)
    _same_bits(first_backprop, want_backprop)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of -1"):
        buffered(None, logits, np.array([0, 1, -1, 0, 0, 0, 0, 0], np.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 5"):
        buffered(None, logits, np.array([0, 1, 5, 0, 0, 0, 0, 0], np.int64))


def test_sparse_softmax_cross_entropy_with_buffers_follows_the_batch_size_and_int32_labels():
    op = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int32, [None]), logits=tf.placeholder(tf.float32, [None, 3])
    ).op
    _, buffered = _kernels(op)
    for n, seed in ((4, 11), (6, 12), (4, 13)):
        logits = _values((n, 3), seed, special=False)
        labels = np.arange(n, dtype=np.int32) % 3
        rows = np.arange(n)
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exps = np.exp(shifted)
        sums = exps.sum(axis=-1, keepdims=True)
        want_backprop = exps / sums
        want_backprop[rows, labels] -= 1
        loss, backprop = buffered(None, logits, labels)
        _same_bits(loss, np.log(sums[:, 0]) - shifted[rows, labels])
        _same_bits(backprop, want_backprop)


def test_a_result_the_caller_holds_is_not_written_by_the_next_call():
    op = tf.matmul(tf.placeholder(tf.float32, [4, 3]), tf.placeholder(tf.float32, [3, 2])).op
    _, buffered = _kernels(op)
    a, b = _values((4, 3), 9, special=False), _values((3, 2), 10, special=False)
    held = buffered(None, a, b)
    copy = held.copy()
    other = buffered(None, -a, b)
    assert other is not held
    _same_bits(held, copy)
    _same_bits(other, (-a) @ b)


# -- fused_matmul -------------------------------------------------------------------------


def _epilogue_in_numpy(product, epilogue, extras):
    extras = iter(extras)
    for step in epilogue:
        if step == "BiasAdd":
            product = product + next(extras)
        elif step == "Relu":
            product = np.maximum(product, 0)
        else:
            product = product * (next(extras) > 0)
    return product


@pytest.mark.parametrize(
    "epilogue",
    [("BiasAdd",), ("Relu",), ("BiasAdd", "Relu"), ("ReluGrad",), ("BiasAdd", "Relu", "ReluGrad")],
)
@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False), (False, True)])
def test_fused_matmul_gives_the_bits_of_its_ops_one_by_one(epilogue, transpose_a, transpose_b):
    a = _values((6, 5) if transpose_a else (5, 6), 11)
    b = _values((4, 6) if transpose_b else (6, 4), 12)
    extras = [
        _values((4,), 13) if step == "BiasAdd" else _values((5, 4), 14)
        for step in epilogue
        if step != "Relu"
    ]
    product = np.matmul(a.T if transpose_a else a, b.T if transpose_b else b)
    want = _epilogue_in_numpy(product, epilogue, extras)
    compute = fused_matmul(transpose_a, transpose_b, np.float32, epilogue)()
    first = np.array(compute(None, a, b, *extras))
    _same_bits(first, want)
    _same_bits(compute(None, a, b, *extras), want)
    outputs = fused_matmul(transpose_a, transpose_b, np.float32, epilogue, copies=2)()(
        None, a, b, *extras
    )
    assert len(outputs) == 2 and outputs[0] is outputs[1]
    _same_bits(outputs[0], want)


@pytest.mark.parametrize(
    "a, b, extras",
    [
        (np.ones((2, 3), np.float64), np.ones((3, 4), np.float64), [np.ones(4, np.float64)]),
        (np.ones((2, 3), np.float32), np.ones((5, 4), np.float32), [np.ones(4, np.float32)]),
        (np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), [np.ones(3, np.float32)]),
        (np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), [np.ones(4, np.int32)]),
        (np.ones((2, 2, 3), np.float32), np.ones((3, 4), np.float32), [np.ones(4, np.float32)]),
    ],
)
def test_fused_matmul_declines_inputs_it_cannot_take_as_they_are(a, b, extras):
    compute = fused_matmul(False, False, np.float32, ("BiasAdd",))()
    with pytest.raises(FusionDeclined):
        compute(None, a, b, *extras)


def test_fused_matmul_refuses_an_epilogue_it_does_not_know():
    with pytest.raises(ValueError, match="cannot fuse \\['Tanh'\\]"):
        fused_matmul(False, False, np.float32, ("BiasAdd", "Tanh"))


# -- variables updated in place -------------------------------------------------------------


def _variable(value):
    v = VariableResource("v", dtypes.float32, tensor_shape.TensorShape(list(value.shape)))
    v.assign(value.copy())
    return v


def test_an_update_writes_in_place_when_the_variable_alone_holds_its_value():
    v = _variable(np.array([1.0, 2.0, 3.0], np.float32))
    stored = id(v.value)
    v.subtract(np.array([0.5, 0.25, 0.125], np.float32))
    assert id(v.value) == stored
    _same_bits(v.read(), np.array([0.5, 1.75, 2.875], np.float32))
    assert not v.value.flags.writeable


def test_an_update_stores_a_new_array_when_a_reader_still_holds_the_value():
    v = _variable(np.array([1.0, 2.0, 3.0], np.float32))
    read_earlier = v.read()
    view = v.read()[1:]
    v.subtract(np.array([1.0, 1.0, 1.0], np.float32))
    _same_bits(read_earlier, np.array([1.0, 2.0, 3.0], np.float32))
    _same_bits(view, np.array([2.0, 3.0], np.float32))
    _same_bits(v.read(), np.array([0.0, 1.0, 2.0], np.float32))
    assert v.value is not read_earlier


def test_assign_copies_into_the_variables_array_and_never_keeps_the_callers():
    v = _variable(np.zeros(4, np.float32))
    stored = id(v.value)
    fed = np.arange(4, dtype=np.float32)
    v.assign(fed)
    assert id(v.value) == stored
    fed[0] = 100.0
    _same_bits(v.read(), np.arange(4, dtype=np.float32))
    held = v.read()
    v.assign(np.ones(4, np.float32))
    _same_bits(held, np.arange(4, dtype=np.float32))
    _same_bits(v.read(), np.ones(4, np.float32))


def test_variables_that_share_a_value_each_keep_their_own_when_one_is_updated():
    a = tf.Variable(np.array([1.0, 2.0], np.float32), name="a")
    b = tf.Variable(np.zeros(2, np.float32), name="b")
    copy = tf.assign(b, a)
    step = tf.train.GradientDescentOptimizer(1.0).apply_gradients(
        [(tf.constant(np.array([0.5, 0.5], np.float32)), a)]
    )
    with tf.Session() as sess:
        sess.run(a.initializer)
        sess.run(copy)  # b, without a value yet, takes a's (frozen) array itself
        for _ in range(3):
            sess.run(step)
        np.testing.assert_array_equal(sess.run(a), [-0.5, 0.5])
        np.testing.assert_array_equal(sess.run(b), [1.0, 2.0])


def test_a_view_of_the_variable_taken_before_its_update_in_a_step_keeps_the_old_value():
    v = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    flat = tf.reshape(v.value(), [4])  # numpy's reshape: a view of the variable's array
    with tf.control_dependencies([flat]):
        step = tf.train.GradientDescentOptimizer(1.0).apply_gradients([(tf.ones([2, 2]), v)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        for i in range(3):
            seen, _ = sess.run([flat, step])
            np.testing.assert_array_equal(seen, np.array([1.0, 2.0, 3.0, 4.0]) - i)
        np.testing.assert_array_equal(sess.run(v), np.array([[1.0, 2.0], [3.0, 4.0]]) - 3)


def test_steps_that_run_one_update_at_once_each_apply_their_own_gradient():
    # The kernel keeps delta * alpha in an array of its own between steps; it is
    # used only under the variable's lock, so concurrent steps never mix theirs.
    v = tf.Variable(np.zeros(1000, np.float32))
    grad = tf.placeholder(tf.float32, [1000])
    step = tf.train.GradientDescentOptimizer(1.0).apply_gradients([(grad, v)])
    runs = 200
    with tf.Session() as sess:
        sess.run(v.initializer)
        update = sess.make_callable(step, [grad])

        def train(value: float):
            g = np.full(1000, value, np.float32)
            for _ in range(runs):
                update(g)

        threads = [threading.Thread(target=train, args=(d,)) for d in (1.0, 2.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        # Every update subtracted its own gradient: 200 * 1 + 200 * 2, exactly.
        np.testing.assert_array_equal(sess.run(v), np.full(1000, -600.0, np.float32))
