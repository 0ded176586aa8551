"""Bad inputs and the errors they get: one test per row of docs/errors.md.

Each ``test_row_NN_...`` pins down row NN of the table: the exact TF error
class, the words of the message that name what was wrong, and what the error
left intact (a queue's elements, a variable's value, a usable session). The
expected values are literals or numpy, never minitf's own output.
`test_every_row_of_the_table_has_a_test` keeps the table and the tests in step.
"""

import contextlib
import logging
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import minitf as tf
from minitf import cli
from minitf.cluster import policies
from minitf.platform import flags as flags_lib
from minitf.runtime.distributed import server as server_lib
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(60)

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SHORT = tf.RunOptions(timeout_in_ms=200)  # for the rows where a run waits in vain


@contextlib.contextmanager
def raises(cls, *words):
    """Expects exactly ``cls`` (not a subclass) with every one of ``words`` in its message."""
    with pytest.raises(cls) as info:
        yield info
    assert type(info.value) is cls, f"{type(info.value).__name__} is not {cls.__name__}"
    text = str(info.value)
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


def op_types(graph) -> set[str]:
    return {op.type for op in graph.get_operations()}


def queue_size(sess, q) -> int:
    return int(sess.run(q.size()))


# -- shapes ---------------------------------------------------------------------------------


def test_row_01_reshape_to_a_shape_with_another_element_count():
    with tf.Graph().as_default() as g:
        t = tf.constant([1, 2, 3])
        with raises(
            ValueError,
            "Cannot reshape a tensor with 3 elements",
            "[2,2] (4 elements)",
            "for 'r' (op: 'Reshape')",
        ):
            tf.reshape(t, [2, 2], name="r")
        assert "Reshape" not in op_types(g)
        with tf.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(tf.reshape(t, [3, 1])), [[1], [2], [3]])


def test_row_02_matmul_of_inner_dimensions_that_differ():
    with tf.Graph().as_default() as g:
        a, b = tf.ones([2, 3]), tf.ones([2, 3])
        with raises(
            ValueError, "Dimensions must be equal, but are 3 and 2", "'MatMul'", "[2,3], [2,3]"
        ):
            tf.matmul(a, b)
        assert "MatMul" not in op_types(g)
        with tf.Session(graph=g) as sess:
            np.testing.assert_array_equal(
                sess.run(tf.matmul(a, b, transpose_b=True)), np.full((2, 2), 3.0)
            )


def test_row_03_reshape_of_a_fed_value_with_another_element_count():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, None, name="x")
        r = tf.reshape(x, [2, 2], name="r")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "Input to reshape is a tensor with 3 values, but the requested shape has 4",
                "[[node r]]",
            ):
                sess.run(r, {x: [1.0, 2.0, 3.0]})
            np.testing.assert_array_equal(sess.run(r, {x: [1.0, 2.0, 3.0, 4.0]}), [[1, 2], [3, 4]])


def test_row_04_matmul_of_fed_matrices_that_do_not_fit():
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, None, name="a")
        b = tf.placeholder(tf.float32, None, name="b")
        m = tf.matmul(a, b, name="mm")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "Matrix size-incompatible",
                "In[0]: [2, 3], In[1]: [2, 3]",
                "[[node mm]]",
            ):
                sess.run(m, {a: np.ones((2, 3)), b: np.ones((2, 3))})
            got = sess.run(m, {a: np.ones((2, 3)), b: np.ones((3, 2))})
            np.testing.assert_array_equal(got, np.full((2, 2), 3.0))


# -- dtypes ---------------------------------------------------------------------------------


def test_row_05_add_of_an_int32_and_a_float32_tensor():
    with tf.Graph().as_default() as g:
        i, f = tf.constant(1), tf.constant(1.0)
        with raises(
            TypeError,
            "Input 'y' of 'Add' Op has type float32",
            "does not match type int32 of argument 'x'",
        ):
            tf.add(i, f)
        assert "Add" not in op_types(g)
        with tf.Session(graph=g) as sess:
            assert sess.run(tf.add(tf.cast(i, tf.float32), f)) == 2.0


def test_row_06_a_float_constant_of_dtype_int32():
    with tf.Graph().as_default() as g:
        with raises(TypeError, "Expected int32, got 1.5 of type 'float' instead."):
            tf.constant(1.5, dtype=tf.int32)
        assert g.get_operations() == []


def test_row_07_feeding_an_int_too_large_for_an_int32_placeholder():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.int32, [], name="x")
        with tf.Session(graph=g) as sess:
            with raises(
                TypeError, "Type of feed value 1099511627776", "int32", "larger type (e.g. int64)"
            ):
                sess.run(x, {x: 2**40})
            assert sess.run(x, {x: 2**31 - 1}) == 2**31 - 1


# -- device strings -------------------------------------------------------------------------


def test_row_08_a_task_index_that_is_not_a_number():
    with tf.Graph().as_default():
        with raises(ValueError, "'/job:ps/task:x'", "the task must be an integer index"):
            with tf.device("/job:ps/task:x"):
                pass
        assert tf.constant(1.0).device == ""


def test_row_09_two_device_types_in_one_string():
    with tf.Graph().as_default():
        with raises(ValueError, "Cannot specify multiple device types: /cpu:0/gpu:0"):
            with tf.device("/cpu:0/gpu:0"):
                pass
        assert tf.constant(1.0).device == ""


def test_row_10_an_op_on_a_ps_task_in_a_local_session():
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            c = tf.constant(1.0, name="c")
        d = tf.constant(2.0, name="d")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "Cannot assign a device for operation c",
                "explicitly assigned to /job:ps/task:0",
                "[[node c]]",
            ):
                sess.run(c)
            assert sess.run(d) == 2.0


def test_row_11_an_op_on_a_gpu_that_is_not_there():
    with tf.Graph().as_default() as g:
        with tf.device("/gpu:0"):
            c = tf.constant(1.0, name="c")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "Cannot assign a device for operation c",
                "/device:GPU:0",
                "/job:localhost/replica:0/task:0/device:CPU:0",
            ):
                sess.run(c)
        soft = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(graph=g, config=soft) as sess:
            assert sess.run(c) == 1.0


# -- cluster specs and servers --------------------------------------------------------------


def test_row_12_a_sparse_task_index_that_is_not_a_number():
    jobs = {"ps": {"a": "localhost:2222"}}
    with raises(ValueError, "Task index 'a' of job 'ps' is not an integer"):
        tf.train.ClusterSpec(jobs)
    assert jobs == {"ps": {"a": "localhost:2222"}}
    assert tf.train.ClusterSpec({"ps": {0: "localhost:2222"}}).task_indices("ps") == [0]


def test_row_13_an_address_without_a_port():
    with raises(
        ValueError, "Invalid address 'localhost' for /job:ps/task:0", "it is not 'host:port'"
    ):
        tf.train.ClusterSpec({"ps": ["localhost"]})


def test_row_81_a_session_target_without_a_port():
    # TF's InvalidArgumentError, when the session is made: no connection is tried.
    message = 'Could not interpret "localhost:notaport" as a host-port pair.'
    with raises(tf.errors.InvalidArgumentError, message):
        tf.Session("grpc://localhost:notaport")


def test_row_14_a_task_index_past_the_end_of_its_job():
    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"]})
    with raises(ValueError, "No task with index 3 in job 'ps'"):
        cluster.task_address("ps", 3)
    assert cluster.task_address("ps", 0) == "localhost:2222"


def test_row_15_a_server_for_a_job_the_cluster_does_not_have():
    (port,) = free_ports(1)
    cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{port}"]})
    with raises(ValueError, "No such job in cluster: 'worker'"):
        tf.train.Server(cluster, job_name="worker", task_index=0)
    with socket.socket() as s:  # nothing listens: the port is still free
        s.bind(("127.0.0.1", port))


def test_row_16_a_server_on_a_port_that_is_in_use(monkeypatch):
    # A server tries a port in use again for a while; the refusal is the same sooner.
    monkeypatch.setattr(server_lib, "LISTEN_PATIENCE_SECS", 0.5)
    (port,) = free_ports(1)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{port}"]})
        with raises(
            tf.errors.UnavailableError,
            "/job:ps/replica:0/task:0",
            f"cannot listen on 127.0.0.1:{port}",
            f"port {port} is in use",
        ):
            tf.train.Server(cluster, job_name="ps", task_index=0)
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            conn, _ = holder.accept()  # the program that held the port still has it
            conn.close()


def test_row_17_a_session_target_where_no_task_listens(monkeypatch):
    monkeypatch.setenv("MINITF_CONNECT_TIMEOUT", "0.2")
    (port,) = free_ports(1)
    with tf.Graph().as_default() as g:
        c = tf.constant(3.0)
        with raises(
            tf.errors.UnavailableError,
            f"grpc://127.0.0.1:{port}",
            "is unreachable",
            "Is the task running?",
        ):
            with tf.Session(f"grpc://127.0.0.1:{port}", graph=g) as sess:
                sess.run(c)
        with tf.Session(graph=g) as sess:
            assert sess.run(c) == 3.0


# -- feeds ----------------------------------------------------------------------------------


def test_row_18_a_feed_key_from_another_graph():
    other = tf.Graph()
    with other.as_default():
        p = tf.placeholder(tf.float32, name="p")
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, name="x")
        with tf.Session(graph=g) as sess:
            with raises(
                TypeError,
                "Cannot interpret feed_dict key as Tensor",
                "'p:0'",
                "is not an element of this graph",
            ):
                sess.run(x, {p: 1.0, x: 2.0})
            assert sess.run(x, {x: 2.0}) == 2.0


def test_row_19_a_feed_value_that_is_a_tensor():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, name="x")
        two = tf.constant(2.0)
        with tf.Session(graph=g) as sess:
            with raises(TypeError, "The value of a feed cannot be a tf.Tensor object", "'x:0'"):
                sess.run(x, {x: two})
            assert sess.run(x, {x: sess.run(two)}) == 2.0


def test_row_20_a_placeholder_that_is_not_fed():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = x * 2.0
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,3]",
                "[[node x]]",
            ):
                sess.run(y)
            np.testing.assert_array_equal(sess.run(y, {x: [[1.0, 2.0, 3.0]]}), [[2.0, 4.0, 6.0]])


def test_row_21_a_feed_of_the_wrong_shape():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.Session(graph=g) as sess:
            with raises(
                ValueError,
                "Cannot feed value of shape (2, 4) for Tensor 'x:0'",
                "which has shape '(?, 3)'",
            ):
                sess.run(x, {x: np.ones((2, 4))})
            assert sess.run(x, {x: np.ones((2, 3))}).shape == (2, 3)


# -- fetches and run options ----------------------------------------------------------------


def test_row_22_fetching_none():
    with tf.Graph().as_default() as g:
        c = tf.constant(1.0)
        with tf.Session(graph=g) as sess:
            with raises(TypeError, "Fetch argument None has invalid type <class 'NoneType'>"):
                sess.run([c, None])
            assert sess.run(c) == 1.0


def test_row_23_fetching_a_tensor_name_that_does_not_exist():
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
        with tf.Session(graph=g) as sess:
            with raises(
                ValueError,
                "Fetch argument 'nope:0' cannot be interpreted as a Tensor",
                "The operation, 'nope', does not exist in the graph",
            ):
                sess.run("nope:0")
            assert sess.run("c:0") == 1.0


def test_row_24_running_a_closed_session():
    with tf.Graph().as_default() as g:
        c = tf.constant(1.0)
        sess = tf.Session(graph=g)
        sess.close()
        with raises(RuntimeError, "Attempted to use a closed Session."):
            sess.run(c)
        with tf.Session(graph=g) as again:
            assert again.run(c) == 1.0


def test_row_25_a_run_option_of_the_wrong_type():
    with raises(
        TypeError, "RunOptions.timeout_in_ms", "'100' has type str", "expected one of: int"
    ):
        tf.RunOptions(timeout_in_ms="100")
    with tf.Graph().as_default() as g:
        c = tf.constant(1.0)
        with tf.Session(graph=g) as sess:
            assert sess.run(c, options=tf.RunOptions(timeout_in_ms=100)) == 1.0


# -- queues ---------------------------------------------------------------------------------


def test_row_26_enqueueing_a_tensor_of_another_static_shape():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(3, tf.float32, shapes=[[2]], name="q")
        with raises(ValueError, "Shapes (3,) and (2,) are incompatible"):
            q.enqueue([[1.0, 2.0, 3.0]])
        assert "QueueEnqueueV2" not in op_types(g)


def test_row_27_enqueueing_a_fed_value_of_another_shape():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(5, tf.float32, shapes=[[2]], name="q")
        p = tf.placeholder(tf.float32, None, name="p")
        enqueue = q.enqueue([p])
        with tf.Session(graph=g) as sess:
            sess.run(enqueue, {p: [1.0, 2.0]})
            sess.run(enqueue, {p: [3.0, 4.0]})
            with raises(
                tf.errors.InvalidArgumentError,
                "Shape mismatch in tuple component 0. Expected [2], got [3]",
                "[[node q_enqueue]]",
            ):
                sess.run(enqueue, {p: [5.0, 6.0, 7.0]})
            assert queue_size(sess, q) == 2
            np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [[1, 2], [3, 4]])


def test_row_28_enqueueing_to_a_closed_queue():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(3, tf.float32, name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue(1.0))
            sess.run(q.close())
            with raises(
                tf.errors.CancelledError, "FIFOQueue '", "q' is closed.", "[[node q_enqueue_1]]"
            ):
                sess.run(q.enqueue(2.0))
            assert queue_size(sess, q) == 1
            assert sess.run(q.dequeue()) == 1.0


def test_row_29_dequeue_many_from_a_closed_queue_with_too_few_elements():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue_many([[1.0, 2.0, 3.0]]))
            sess.run(q.close())
            with raises(
                tf.errors.OutOfRangeError,
                "is closed and has insufficient elements",
                "(requested 5, current size 3)",
                "[[node q_DequeueMany]]",
            ):
                sess.run(q.dequeue_many(5))
            assert queue_size(sess, q) == 3
            np.testing.assert_array_equal(sess.run(q.dequeue_up_to(5)), [1.0, 2.0, 3.0])


def test_row_30_dequeue_many_from_a_queue_without_shapes():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(10, tf.float32, name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue(1.0))
            sess.run(q.enqueue(2.0))
            with raises(
                tf.errors.InvalidArgumentError,
                "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
                "specified shapes",
                "[[node q_DequeueMany]]",
            ):
                sess.run(q.dequeue_many(2))
            assert queue_size(sess, q) == 2
            assert [sess.run(q.dequeue()), sess.run(q.dequeue())] == [1.0, 2.0]


def test_row_31_dequeue_from_an_empty_queue_with_a_deadline():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(10, tf.float32, name="q")
        dequeue = q.dequeue()
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.DeadlineExceededError,
                "Timed out waiting for notification",
                "q_Dequeue waits for queue",
                "[[node q_Dequeue]]",
            ):
                sess.run(dequeue, options=SHORT)
            sess.run(q.enqueue(7.0))
            assert sess.run(dequeue) == 7.0  # the timed-out dequeue took nothing


def test_row_32_enqueue_to_a_full_queue_with_a_deadline():
    with tf.Graph().as_default() as g:
        q = tf.FIFOQueue(1, tf.float32, name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue(1.0))
            with raises(
                tf.errors.DeadlineExceededError,
                "Timed out waiting for notification",
                "q_enqueue_1 waits for queue",
            ):
                sess.run(q.enqueue(2.0), options=SHORT)
            assert queue_size(sess, q) == 1
            assert sess.run(q.dequeue()) == 1.0
            assert queue_size(sess, q) == 0  # the timed-out enqueue added nothing later


def test_row_33_two_queues_sharing_a_name_with_different_capacities():
    with tf.Graph().as_default() as g:
        q1 = tf.FIFOQueue(5, tf.float32, shared_name="shared", name="q1")
        q2 = tf.FIFOQueue(6, tf.float32, shared_name="shared", name="q2")
        with tf.Session(graph=g) as sess:
            sess.run(q1.enqueue(1.0))
            with raises(
                tf.errors.InvalidArgumentError,
                "Shared queue 'shared' has capacity 5",
                "requested capacity was 6",
                "[[node q2]]",
            ):
                sess.run(q2.size())
            assert queue_size(sess, q1) == 1
            assert sess.run(q1.dequeue()) == 1.0


# -- conditional accumulators ---------------------------------------------------------------


def test_row_34_a_gradient_of_another_static_shape():
    with tf.Graph().as_default() as g:
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
        with raises(ValueError, "Shapes (3,) and (2,) are incompatible"):
            acc.apply_grad([1.0, 2.0, 3.0])
        assert "ResourceAccumulatorApplyGradient" not in op_types(g)


def test_row_35_a_fed_gradient_of_another_shape():
    with tf.Graph().as_default() as g:
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
        p = tf.placeholder(tf.float32, None, name="p")
        apply = acc.apply_grad(p)
        with tf.Session(graph=g) as sess:
            sess.run(apply, {p: [1.0, 2.0]})
            with raises(
                tf.errors.InvalidArgumentError,
                "Shape mismatch: expected [2], got [3]",
                "[[node ResourceAccumulatorApplyGradient]]",
            ):
                sess.run(apply, {p: [1.0, 2.0, 3.0]})
            assert sess.run(acc.num_accumulated()) == 1
            np.testing.assert_array_equal(sess.run(acc.take_grad(1)), [1.0, 2.0])


def test_row_36_take_grad_of_zero_gradients():
    with tf.Graph().as_default() as g:
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
        with tf.Session(graph=g) as sess:
            sess.run(acc.apply_grad([1.0, 2.0]))
            with raises(
                tf.errors.InvalidArgumentError,
                "Argument num_required must be positive, but was 0",
                "[[node ResourceAccumulatorTakeGradient]]",
            ):
                sess.run(acc.take_grad(0))
            assert sess.run(acc.num_accumulated()) == 1


def test_row_37_take_grad_of_more_gradients_than_arrive_with_a_deadline():
    with tf.Graph().as_default() as g:
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
        take = acc.take_grad(2)
        with tf.Session(graph=g) as sess:
            sess.run(acc.apply_grad([1.0, 2.0]))
            with raises(
                tf.errors.DeadlineExceededError,
                "Timed out waiting for notification",
                "has 1 of 2 gradients",
                "[[node ResourceAccumulatorTakeGradient]]",
            ):
                sess.run(take, options=SHORT)
            assert sess.run(acc.num_accumulated()) == 1
            sess.run(acc.apply_grad([3.0, 6.0]))
            np.testing.assert_array_equal(sess.run(take), np.mean([[1, 2], [3, 6]], axis=0))


def test_row_38_an_accumulator_of_strings():
    with tf.Graph().as_default() as g:
        with raises(
            TypeError,
            "Value passed to parameter 'dtype' has DataType string",
            "not in list of allowed values",
            "ResourceConditionalAccumulator",
        ):
            tf.ConditionalAccumulator(tf.string, shape=[2], name="acc")
        assert g.get_operations() == []


def test_row_39_a_sparse_gradient_index_past_the_declared_shape():
    with tf.Graph().as_default() as g:
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2], name="sacc")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "index of slice 1 exceeded limits of shape; index is 5 exceeded 3",
                "[[node SparseAccumulatorApplyGradient]]",
            ):
                sess.run(acc.apply_grad([0, 5], [[1.0, 1.0], [2.0, 2.0]], grad_shape=[3, 2]))
            assert sess.run(acc.num_accumulated()) == 0


# -- optimizers -----------------------------------------------------------------------------


def test_row_40_a_learning_rate_of_none():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        with raises(ValueError, "None values not supported", "'learning_rate'"):
            tf.train.GradientDescentOptimizer(None).minimize(v * v)
        assert "ApplyGradientDescent" not in op_types(g)


def test_row_41_minimize_with_no_variables():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "No variables to optimize."):
            tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(2.0) * 3.0)
        assert "ApplyGradientDescent" not in op_types(g)


def test_row_42_minimize_with_an_empty_var_list():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        with raises(ValueError, "No variables to optimize."):
            tf.train.GradientDescentOptimizer(0.1).minimize(v * v, var_list=[])
        assert "ApplyGradientDescent" not in op_types(g)


def test_row_43_a_loss_that_does_not_depend_on_the_variables():
    with tf.Graph().as_default() as g:
        tf.Variable(1.0, name="v")
        with raises(ValueError, "No gradients provided for any variable", "'v:0'", "and loss"):
            tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(3.0))
        assert "ApplyGradientDescent" not in op_types(g)


def test_row_44_apply_gradients_with_every_gradient_none():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        with raises(ValueError, "No gradients provided for any variable:", "'v:0'"):
            tf.train.GradientDescentOptimizer(0.1).apply_gradients([(None, v)])
        assert "ApplyGradientDescent" not in op_types(g)
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            assert sess.run(v) == 1.0


# -- SyncReplicasOptimizer ------------------------------------------------------------------


def sync_model(replicas_to_aggregate=2, total_num_replicas=None):
    """A variable [1, 2], the global step, a loss and a SyncReplicasOptimizer (not applied)."""
    v = tf.Variable([1.0, 2.0], name="v")
    global_step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(v * v)
    opt = tf.train.SyncReplicasOptimizer(
        tf.train.GradientDescentOptimizer(0.1),
        replicas_to_aggregate=replicas_to_aggregate,
        total_num_replicas=total_num_replicas,
    )
    return v, global_step, loss, opt


def test_row_45_sync_apply_gradients_without_a_global_step():
    with tf.Graph().as_default() as g:
        v, _, loss, opt = sync_model()
        with raises(ValueError, "Global step is required to check staleness"):
            opt.apply_gradients(opt.compute_gradients(loss))
        assert "ResourceConditionalAccumulator" not in op_types(g)


def test_row_46_sync_chief_queue_runner_before_apply_gradients():
    with tf.Graph().as_default():
        _, global_step, loss, opt = sync_model()
        with raises(ValueError, "Should be called after apply_gradients()."):
            opt.get_chief_queue_runner()
        opt.minimize(loss, global_step=global_step)
        assert opt.get_chief_queue_runner() is not None


def test_row_47_sync_init_tokens_before_apply_gradients():
    with tf.Graph().as_default():
        _, global_step, loss, opt = sync_model()
        with raises(ValueError, "get_init_tokens_op() should be called after apply_gradients()."):
            opt.get_init_tokens_op()
        opt.minimize(loss, global_step=global_step)
        assert opt.get_init_tokens_op() is not None


def test_row_48_sync_too_few_initial_tokens():
    with tf.Graph().as_default():
        # 4 gradients per update from 2 workers: each must push 2, so 4 - 2 = 2 tokens are needed.
        _, global_step, loss, opt = sync_model(replicas_to_aggregate=4, total_num_replicas=2)
        opt.minimize(loss, global_step=global_step)
        with raises(ValueError, "Too few tokens to finish the first step: 1 (given) vs 2 (needed)"):
            opt.get_init_tokens_op(num_tokens=1)
        assert opt.get_init_tokens_op(num_tokens=2).type == "QueueEnqueueManyV2"


def test_row_49_sync_hook_used_before_apply_gradients():
    with tf.Graph().as_default():
        _, global_step, loss, opt = sync_model()
        hook = opt.make_session_run_hook(is_chief=True)
        with raises(
            ValueError,
            "SyncReplicasOptimizer.apply_gradient should be called before using the hook.",
        ):
            hook.begin()
        opt.minimize(loss, global_step=global_step)
        hook.begin()


def test_row_50_sync_apply_gradients_called_twice():
    with tf.Graph().as_default():
        _, global_step, loss, opt = sync_model()
        opt.minimize(loss, global_step=global_step)
        with raises(
            ValueError,
            "apply_gradients() was already called on SyncReplicasOptimizer 'sync_replicas'",
            "one SyncReplicasOptimizer per train op",
        ):
            opt.apply_gradients(opt.compute_gradients(loss), global_step=global_step)
        local_steps = [x for x in tf.local_variables() if "sync_rep_local_step" in x.op.name]
        assert len(local_steps) == 1


def test_row_51_sync_replicas_to_aggregate_of_zero():
    with tf.Graph().as_default() as g:
        v, global_step, loss, opt = sync_model(replicas_to_aggregate=0)
        opt.minimize(loss, global_step=global_step)
        (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
        with tf.Session(graph=g) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            with raises(
                tf.errors.InvalidArgumentError,
                "Argument num_required must be positive, but was 0",
                "sync_replicas/ResourceAccumulatorTakeGradient",
            ):
                sess.run(sync_op, options=tf.RunOptions(timeout_in_ms=5000))
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
            assert sess.run(global_step) == 0


# -- variables ------------------------------------------------------------------------------


def test_row_52_reading_a_variable_that_was_not_initialized():
    with tf.Graph().as_default() as g:
        weights = tf.Variable(1.0, name="weights")
        bias = tf.Variable(2.0, name="bias")
        total = weights + bias
        with tf.Session(graph=g) as sess:
            sess.run(bias.initializer)
            with raises(
                tf.errors.FailedPreconditionError,
                "Attempting to use uninitialized value weights",
                "[[node weights/read]]",
            ):
                sess.run(total)
            assert sess.run(bias) == 2.0
            sess.run(weights.initializer)
            assert sess.run(total) == 3.0


def test_row_53_get_variable_twice_without_reuse():
    with tf.Graph().as_default():
        tf.get_variable("v", [2])
        with raises(ValueError, "Variable v already exists, disallowed", "reuse=True"):
            tf.get_variable("v", [2])
        assert [v.op.name for v in tf.global_variables()] == ["v"]


def test_row_54_get_variable_reused_with_another_shape():
    with tf.Graph().as_default():
        with tf.variable_scope("s"):
            tf.get_variable("v", [2])
        with tf.variable_scope("s", reuse=True):
            with raises(
                ValueError,
                "Trying to share variable s/v, but specified shape (3,) and found shape (2,).",
            ):
                tf.get_variable("v", [3])
            assert tf.get_variable("v", [2]).get_shape().as_list() == [2]


def test_row_55_assigning_int32_to_a_float32_variable():
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        with raises(
            TypeError, "Input 'value' of 'Assign' Op has type int32", "does not match type float32"
        ):
            v.assign(tf.constant([3, 4]))
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_row_56_assigning_a_fed_value_of_another_shape():
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        p = tf.placeholder(tf.float32, None, name="p")
        assign = tf.assign(v, p, name="assign")
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            with raises(
                tf.errors.InvalidArgumentError,
                "Assign requires shapes of both tensors to match. lhs shape= [2] rhs shape= [3]",
                "[[node assign]]",
            ):
                sess.run(assign, {p: [5.0, 6.0, 7.0]})
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


# -- Saver ----------------------------------------------------------------------------------


def test_row_57_restore_from_a_path_with_no_checkpoint(tmp_path):
    missing = str(tmp_path / "no_such" / "model.ckpt")
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            # TF 1.13+ raises ValueError, older TF1 NotFoundError: minitf's error is both.
            with pytest.raises(ValueError) as info:
                saver.restore(sess, missing)
            assert isinstance(info.value, tf.errors.NotFoundError)
            assert f"The passed save_path is not a valid checkpoint: {missing}" in str(info.value)
            assert sess.run(v) == 1.0


def test_row_58_restore_a_checkpoint_that_lacks_a_variable(tmp_path):
    with tf.Graph().as_default() as g:
        a = tf.Variable(1.0, name="a")
        with tf.Session(graph=g) as sess:
            sess.run(a.initializer)
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default() as g:
        b = tf.Variable(2.0, name="b")
        saver = tf.train.Saver()
        with tf.Session(graph=g) as sess:
            sess.run(b.initializer)
            with raises(
                tf.errors.NotFoundError,
                "Restoring from checkpoint failed",
                f"Key b not found in checkpoint {path}",
            ):
                saver.restore(sess, path)
            assert sess.run(b) == 2.0


def test_row_59_save_under_a_directory_whose_parent_is_missing(tmp_path):
    target = tmp_path / "missing" / "dir" / "model.ckpt"
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            with raises(ValueError, f"Parent directory of {target} doesn't exist, can't save."):
                saver.save(sess, str(target))
            assert not (tmp_path / "missing").exists()
            assert saver.save(sess, str(tmp_path / "ok" / "model.ckpt")).endswith("model.ckpt")


# -- command lines --------------------------------------------------------------------------


@pytest.fixture
def command_line(monkeypatch, capsys):
    """Runs ``minitf ARGS`` in this process; returns (exit status, stderr)."""
    monkeypatch.delenv(cli.LOG_LEVEL_ENV, raising=False)
    logger = logging.getLogger("minitf")
    level, handlers = logger.level, list(logger.handlers)

    def run(*argv):
        try:
            status = cli.main(list(argv))
        except SystemExit as exc:
            status = exc.code
        return status, capsys.readouterr().err

    yield run
    logger.setLevel(level)
    logger.handlers[:] = handlers


@pytest.fixture
def script(tmp_path):
    """A script that leaves a file behind when it runs (it must not)."""
    path = tmp_path / "script.py"
    path.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    return path


def test_row_60_launch_with_no_workers(command_line, script):
    status, err = command_line("launch", "--workers", "0", str(script))
    assert status == 2
    assert "minitf launch: --workers must be at least 1 and --ps at least 0" in err
    assert "--workers 0" in err
    assert not (script.parent / "ran").exists()


def test_row_61_launch_with_a_negative_ps_count(command_line, script):
    status, err = command_line("launch", "--ps", "-1", str(script))
    assert status == 2
    assert "minitf launch: --workers must be at least 1 and --ps at least 0" in err
    assert "--ps -1" in err
    assert not (script.parent / "ran").exists()


def test_row_62_launch_with_an_unknown_option(command_line, script):
    status, err = command_line("launch", "--bogus", str(script))
    assert status == 2
    assert "unrecognized arguments: --bogus" in err
    assert not (script.parent / "ran").exists()


def test_row_63_step_with_no_workers(command_line, script):
    status, err = command_line("step", "--workers", "0", str(script))
    assert status == 2
    assert "minitf step: --workers must be at least 1 and --ps at least 0" in err
    assert not (script.parent / "ran").exists()


def test_row_64_demo_with_zero_steps(command_line, tmp_path):
    out = tmp_path / "out"
    status, _ = command_line("demo", "--steps", "0", "--out", str(out))
    assert status == "minitf demo: --steps must be positive, got 0"
    assert not out.exists()


def test_row_65_an_integer_flag_given_text():
    values = flags_lib.FlagValues()
    tf.app.flags.DEFINE_integer("steps", 10, "global steps", flag_values=values)
    with raises(flags_lib.IllegalFlagValueError, "flag --steps=abc", "expected an integer"):
        values(["prog", "--steps=abc"])
    assert values["steps"].value == 10
    assert not values.is_parsed()
    assert tf.app.flags.IllegalFlagValueError is flags_lib.IllegalFlagValueError


def test_row_66_app_run_with_an_unknown_flag(capsys):
    before = tf.app.flags.FLAGS.flag_values_dict()
    ran = []
    with pytest.raises(SystemExit) as info:
        tf.app.run(ran.append, argv=["prog", "--no_such_flag=1"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "FATAL Flags parsing error: Unknown command line flag 'no_such_flag'" in err
    assert ran == []
    assert tf.app.flags.FLAGS.flag_values_dict() == before


def test_row_67_launch_with_a_simulation_flag_but_no_simulate(command_line, script):
    status, err = command_line("launch", "--seed", "1", str(script))
    assert status == 2
    assert "minitf launch: --seed, --straggler and --out go with --simulate" in err
    assert not (script.parent / "ran").exists()


def test_row_68_simulate_with_an_unknown_delay_model(command_line, script):
    status, err = command_line("launch", "--simulate", "--straggler", "1=Slow(2)", str(script))
    assert status == 2
    assert "minitf launch: not a delay model: 'Slow(2)'; expected one of Constant(...)" in err
    assert not (script.parent / "ran").exists()


# -- the table and the tests ----------------------------------------------------------------


def table_rows(text: str) -> list[int]:
    """The row numbers of the Markdown tables in ``text`` (first cell a number)."""
    return [int(m.group(1)) for m in re.finditer(r"^\|\s*(\d+)\s*\|", text, re.MULTILINE)]


def test_every_row_of_the_table_has_a_test():
    documented = table_rows(DOC.read_text())
    tested = sorted(
        int(m.group(1))
        for name in dir(sys.modules[__name__])
        if (m := re.match(r"test_row_(\d+)_", name))
    )
    assert len(documented) >= 50
    assert len(documented) == len(set(documented)), "a row number is used twice"
    assert documented == list(range(1, len(documented) + 1)), "rows are numbered 1, 2, 3..."
    assert documented == tested


def test_row_69_simulate_with_a_negative_seed(command_line, script):
    status, err = command_line("launch", "--simulate", "--seed", "-5", str(script))
    assert status == 2
    assert "minitf launch: --seed must be a whole number >= 0, got -5" in err
    assert not (script.parent / "ran").exists()


def test_row_70_a_straggler_that_never_ends(command_line, script):
    status, err = command_line(
        "launch", "--simulate", "--straggler", "1=Constant(inf)", str(script)
    )
    assert status == 2
    assert "Constant: seconds must be a finite number of seconds >= 0, got inf" in err
    assert not (script.parent / "ran").exists()


def test_row_71_a_straggler_for_a_worker_that_is_not_there(command_line, script):
    status, err = command_line(
        "launch", "--simulate", "--workers", "2", "--straggler", "5=Constant(1)", str(script)
    )
    assert status == 2
    assert "--straggler names worker 5, but there are 2 workers (0 to 1)" in err
    assert not (script.parent / "ran").exists()


def test_row_72_a_recording_that_cannot_be_written(command_line, script):
    status, err = command_line("launch", "--simulate", "--record", "/proc/nope/x.json", str(script))
    assert status == 2
    assert "minitf launch: cannot write /proc/nope/x.json" in err
    assert not (script.parent / "ran").exists()


@pytest.fixture
def raising_script(tmp_path):
    path = tmp_path / "raises.py"
    path.write_text("def helper(x):\n    raise ValueError(f'bad value {x}')\n\nhelper(3)\n")
    return path


def test_row_73_a_simulated_script_that_raises(command_line, raising_script):
    status, err = command_line("launch", "--simulate", str(raising_script))
    assert status == 1
    assert f"{raising_script} failed on ps:0:" in err
    assert "in helper" in err and "ValueError: bad value 3" in err
    assert "minitf" not in err.replace(str(raising_script), "")  # none of minitf's frames


def test_row_74_a_negative_op_cost():
    from minitf.cluster import SimulatedCluster

    cluster = SimulatedCluster({"worker": 1}, op_cost=lambda op: -1.0)

    def client():
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(x + 1.0, {x: 1.0})

    with pytest.raises(ValueError, match="op_cost gave -1.0 s for op .*a cost is a finite"):
        cluster.run_clients(client)


def test_row_75_replaying_a_file_that_is_not_a_recording(command_line, tmp_path):
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{bad")
    status, err = command_line("step", "--replay", str(garbage))
    assert status == 1
    assert f"minitf step: {garbage} is not a minitf recording" in err
    assert err.count("\n") == 1


def test_row_76_stepping_a_simulated_script_that_raises(command_line, raising_script):
    status, err = command_line(
        "step", "--simulate", "--ps", "1", "--workers", "2", str(raising_script)
    )
    assert status == 1
    assert f"{raising_script} failed on ps:0:" in err and "ValueError: bad value 3" in err


def test_row_77_a_breakpoint_that_matches_nothing(command_line):
    from minitf.examples import sync_mlp

    status, err = command_line(
        "step", "--simulate", "--ps", "1", "--workers", "2", "--break", "NoSuchOp",
        sync_mlp.__file__, "--", "--steps", "2",
    )  # fmt: skip
    assert status == 1
    assert "minitf step: no op matched --break NoSuchOp before the run ended" in err


def test_row_78_a_stepped_script_that_dies_before_its_server(raising_script):
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "step", "--ps", "1", "--workers", "2",
         "--break", "x", str(raising_script)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "minitf step: the script exited on" in last and "before its server started" in last


def test_row_79_until_a_pattern_that_names_no_op():
    from minitf.examples import sync_mlp
    from minitf.stepper import SimulatedStepper

    stepper = SimulatedStepper(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, ["--steps", "2"], breaks=["ApplyGradient"]
    )
    try:
        moves = stepper.state()["moves"]
        with pytest.raises(ValueError, match="no op or task matches 'TakeGradeint'"):
            stepper.until("TakeGradeint")
        assert stepper.state()["moves"] == moves
    finally:
        stepper.close()


def test_row_80_next_on_a_task_that_cannot_move():
    from minitf.stepper import HeldScheduler, Stepper

    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.float32, name="q")
        taken = q.dequeue(name="take")
        with tf.Session(scheduler=HeldScheduler()) as sess:
            stepper = Stepper.for_session(sess)

            def run():
                with contextlib.suppress(tf.errors.CancelledError):  # closed while it waits
                    sess.run(taken)

            runner = threading.Thread(target=run, daemon=True)
            runner.start()
            assert [stepper.next()["op"] for _ in range(2)] == ["q", "take"]  # it waits
            moves = stepper.state()["moves"]
            with pytest.raises(ValueError) as info:
                stepper.next("localhost:0", wait=0.2)
            assert re.fullmatch(
                r"localhost:0 cannot move now: take waits for queue \S*q holds 0, needs 1",
                str(info.value),
            )
            assert stepper.state()["moves"] == moves
            sess.close()
            runner.join(10)


def test_row_82_an_assert_that_fails_stops_what_depends_on_it():
    with tf.Graph().as_default():
        v = tf.Variable(5.0)
        x = tf.placeholder(tf.float32, [])
        with tf.control_dependencies([tf.Assert(x > 0, [x])]):
            update = v.assign(x)
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[-1\]"):
                sess.run(update, {x: -1.0})
            assert sess.run(v) == 5.0


def test_row_83_assert_equal_of_known_unequal_values():
    with tf.Graph().as_default() as g:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            tf.assert_equal(tf.constant([1, 2]), [1, 3])
        assert str(info.value).startswith(
            "Condition x == y did not hold element-wise:\nx (Const:0) = \n[1 2]"
        )
        assert not [op for op in g.get_operations() if op.type == "Assert"]


def test_row_84_assert_rank_of_a_known_wrong_rank():
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError) as info:
            tf.assert_rank(tf.constant([1.0, 2.0]), 2)
        assert str(info.value) == ".  Tensor Const:0 must have rank 2.  Received rank 1, shape (2,)"
        assert not [op for op in g.get_operations() if op.type == "Assert"]


def test_row_85_a_py_func_result_of_the_wrong_dtype():
    with tf.Graph().as_default():
        out = tf.py_func(lambda: 3.5, [], tf.float32)
        with tf.Session() as sess:
            with pytest.raises(
                tf.errors.InvalidArgumentError,
                match=r"0-th value returned by pyfunc_\d+ is double, but expects float",
            ):
                sess.run(out)
            assert sess.run(tf.constant(1.0)) == 1.0


@pytest.mark.timeout(60)
def test_row_86_a_py_func_on_a_task_of_another_process():
    from minitf.runtime.distributed.launcher import LocalCluster

    with tf.Graph().as_default(), LocalCluster({"ps": 1}, output=None) as cluster:
        with tf.device("/job:ps/task:0"):
            out = tf.py_func(lambda: np.float32(1), [], tf.float32)
            other = tf.constant(2.0)
        with tf.Session(cluster.target("ps", 0)) as sess:
            with pytest.raises(
                tf.errors.InvalidArgumentError, match=r"callback pyfunc_\d+ is not found"
            ):
                sess.run(out)
            assert sess.run(other + 1.0) == 3.0


def test_row_87_a_case_predicate_that_is_not_bool():
    with tf.Graph().as_default():
        built = []
        with pytest.raises(TypeError, match=r"pred must be Tensor of type bool: Const:0"):
            tf.case([(tf.constant(1), lambda: built.append(1) or tf.constant(1))])
        assert built == []


# -- TensorArray ------------------------------------------------------------------------------


def _foo(**kwargs):
    kwargs.setdefault("size", 3)
    return tf.TensorArray(tf.float32, tensor_array_name="foo", **kwargs)


def test_row_88_writing_a_tensor_array_index_twice():
    with tf.Graph().as_default(), tf.Session() as sess:
        ta = _foo()
        with raises(
            tf.errors.InvalidArgumentError,
            "TensorArray foo_",
            ": Could not write to TensorArray index 2 because it has already been written to.",
            "[[node TensorArrayWrite_1/TensorArrayWriteV3]]",
        ):
            sess.run(ta.write(2, 3.0).write(2, 3.0).flow)
        once = ta.write(2, 3.0)
        assert sess.run(once.read(2)) == 3.0
        assert sess.run(once.read(2)) == 3.0  # a new step, a new array


def test_row_89_reading_a_tensor_array_index_twice():
    with tf.Graph().as_default(), tf.Session() as sess:
        for clear in (True, False):
            w = _foo(clear_after_read=clear).write(0, 5.0)
            first = w.read(0)
            with tf.control_dependencies([first]):
                again = w.read(0)
            if clear:
                with raises(
                    tf.errors.InvalidArgumentError,
                    ": Could not read index 0 twice because it was cleared after a previous "
                    "read (perhaps try setting clear_after_read = false?).",
                ):
                    sess.run(again)
            else:
                assert sess.run([first, again]) == [5.0, 5.0]


def test_row_90_reading_a_tensor_array_index_never_written():
    with tf.Graph().as_default(), tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            ": Could not read from TensorArray index 1.  Furthermore, the element shape is not "
            "fully defined: <unknown>.",
        ):
            sess.run(_foo(infer_shape=False).write(0, [[4.0, 5.0]]).read(1))
        np.testing.assert_array_equal(sess.run(_foo().write(0, [[4.0, 5.0]]).read(1)), [[0, 0]])


def test_row_91_writing_past_the_end_of_a_tensor_array():
    with tf.Graph().as_default(), tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            ": Tried to write to index 3 but array is not resizeable and size is: 3",
        ):
            sess.run(_foo().write(3, 3.0).flow)
        assert sess.run(_foo(dynamic_size=True).write(3, 3.0).size()) == 4


def test_row_92_writing_a_string_to_a_float_tensor_array():
    with tf.Graph().as_default(), tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "TensorArray dtype is float but Op is trying to write dtype string.",
        ):
            sess.run(_foo().write(0, "wrong").flow)


def test_row_93_a_write_whose_static_shape_differs_from_the_first():
    with tf.Graph().as_default() as g:
        w = _foo().write(0, 3.0)
        with raises(ValueError, "Inconsistent shapes: saw (1,) but expected ()"):
            w.write(1, [3.0])
        assert [op.type for op in g.get_operations()].count("TensorArrayWriteV3") == 1


def test_row_94_a_fed_write_whose_shape_differs_from_the_first():
    with tf.Graph().as_default(), tf.Session() as sess:
        a = tf.placeholder_with_default([1.0], [None])
        b = tf.placeholder_with_default([1.0, 2.0], [None])
        with raises(
            tf.errors.InvalidArgumentError,
            ": Could not write to TensorArray index 1 because the value shape is [2] which is "
            "incompatible with the TensorArray's inferred element shape: [1] (consider setting "
            "infer_shape=False).",
        ):
            sess.run(_foo().write(0, a).write(1, b).flow)
        sess.run(_foo(infer_shape=False).write(0, a).write(1, b).flow)


def test_row_95_stacking_elements_of_different_shapes():
    with tf.Graph().as_default(), tf.Session() as sess:
        w = _foo(infer_shape=False).write(0, [3.0]).write(1, [4.0, 1.0]).write(2, [])
        with raises(
            tf.errors.InvalidArgumentError,
            "TensorArray has inconsistent shapes.  Index 0 has shape: [1] but index 1 has shape: "
            "[2]",
        ):
            sess.run(w.stack())
        np.testing.assert_array_equal(sess.run(w.concat()), [3.0, 4.0, 1.0])


def test_row_96_gradients_through_a_tensor_array_under_another_name():
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0, 3.0])
        r = _foo().unstack(x).read(0)
        with raises(ValueError, "Expected op/tensor name to start with gradients", "grads/"):
            tf.gradients(r, x, name="grads")
        assert "TensorArrayGradV3" not in op_types(g)
        (grad,) = tf.gradients(r, x, name="gradients_mine")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(grad), [1.0, 0.0, 0.0])


# -- recurrent networks ----------------------------------------------------------------------


def test_row_97_static_rnn_without_initial_state_or_dtype():
    with tf.Graph().as_default():
        with raises(ValueError, "If no initial_state is provided, dtype must be specified"):
            tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(2), [tf.zeros([1, 3])])
        assert tf.global_variables() == []


def test_row_98_static_rnn_given_one_tensor_instead_of_a_list():
    with tf.Graph().as_default():
        with raises(TypeError, "inputs must be a sequence"):
            tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(2), tf.zeros([4, 1, 3]), dtype=tf.float32)
        assert tf.global_variables() == []


def test_row_99_static_rnn_with_an_unknown_input_depth():
    with tf.Graph().as_default():
        with raises(
            ValueError,
            "Input size (dimension 0 of inputs) must be accessible via shape inference, "
            "but saw value None.",
        ):
            tf.nn.static_rnn(
                tf.nn.rnn_cell.GRUCell(2),
                [tf.placeholder(tf.float32, [2, None])],
                dtype=tf.float32,
            )
        assert tf.global_variables() == []


def test_row_100_an_rnn_cell_fed_integers():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicLSTMCell(4)
        state = cell.zero_state(2, tf.float32)
        with raises(
            ValueError,
            "RNN cell only supports floating point inputs, but saw dtype: <dtype: 'int32'>",
        ):
            cell(tf.zeros([2, 3], tf.int32), state)
        assert tf.global_variables() == []


def test_row_101_multi_rnn_cell_of_tuple_states_without_state_is_tuple():
    with raises(
        ValueError,
        "Some cells return tuples of states, but the flag state_is_tuple is not set.  "
        "State sizes are: [LSTMStateTuple(c=2, h=2)]",
    ):
        tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)


def test_row_102_reverse_sequence_with_a_length_past_the_sequence():
    with tf.Graph().as_default():
        lengths = tf.placeholder(tf.int32, [2])
        y = tf.reverse_sequence([[1, 2, 3], [4, 5, 6]], lengths, seq_axis=1)
        with tf.Session() as sess:
            with raises(tf.errors.InvalidArgumentError, "seq_lens(1) > input.dims(1)"):
                sess.run(y, {lengths: [1, 4]})
            np.testing.assert_array_equal(sess.run(y, {lengths: [1, 3]}), [[1, 2, 3], [6, 5, 4]])


# -- record files and readers ------------------------------------------------------------------


def two_records(tmp_path, flip: int | None = None, keep: int | None = None) -> str:
    """A TFRecord file of b"123" (bytes 0-18, data at 12) and b"4567", maybe damaged."""
    path = str(tmp_path / "records")
    with tf.python_io.TFRecordWriter(path) as writer:
        writer.write(b"123")
        writer.write(b"4567")
    data = bytearray(Path(path).read_bytes()[:keep])
    if flip is not None:
        data[flip] ^= 1
    Path(path).write_bytes(data)
    return path


def iterate(path) -> list[bytes]:
    got = []
    with contextlib.suppress(tf.errors.DataLossError):
        for record in tf.python_io.tf_record_iterator(path):
            got.append(record)
    return got


def test_row_103_a_corrupted_record(tmp_path):
    with raises(tf.errors.DataLossError, "corrupted record at 12"):
        list(tf.python_io.tf_record_iterator(two_records(tmp_path, flip=12)))
    with raises(tf.errors.DataLossError, "corrupted record at 31"):
        list(tf.python_io.tf_record_iterator(two_records(tmp_path, flip=31)))
    assert iterate(two_records(tmp_path, flip=31)) == [b"123"]


def test_row_104_a_truncated_record(tmp_path):
    with raises(tf.errors.DataLossError, "truncated record at 0"):
        list(tf.python_io.tf_record_iterator(two_records(tmp_path, keep=14)))
    assert iterate(two_records(tmp_path, keep=19 + 14)) == [b"123"]
    assert list(tf.python_io.tf_record_iterator(two_records(tmp_path, keep=19 + 5))) == [b"123"]


def reader_and_queue(sess, reader, names):
    queue = tf.FIFOQueue(9, tf.string, shapes=())
    sess.run(queue.enqueue_many([names]))
    sess.run(queue.close())
    return reader.read(queue)


def test_row_105_a_reader_on_a_corrupted_record(tmp_path):
    path = str(tmp_path / "f")
    with tf.python_io.TFRecordWriter(path) as writer:
        writer.write(b"Record 0 of file 0")  # 16 + 18 bytes
        writer.write(b"Record 1 of file 0")
    data = bytearray(Path(path).read_bytes())
    data[34 + 12] ^= 1
    Path(path).write_bytes(data)
    with tf.Graph().as_default(), tf.Session() as sess:
        reader = tf.TFRecordReader()
        _, value = reader_and_queue(sess, reader, [path])
        assert sess.run(value) == b"Record 0 of file 0"
        for _ in range(2):
            with raises(tf.errors.DataLossError, "corrupted record at 46"):
                sess.run(value)
        assert sess.run(reader.num_records_produced()) == 1


def test_row_106_a_reader_on_a_missing_file(tmp_path):
    good = str(tmp_path / "good")
    with tf.python_io.TFRecordWriter(good) as writer:
        writer.write(b"kept")
    missing = str(tmp_path / "nope")
    with tf.Graph().as_default(), tf.Session() as sess:
        _, value = reader_and_queue(sess, tf.TFRecordReader(), [missing, good])
        with raises(tf.errors.NotFoundError, f"{missing}; No such file or directory"):
            sess.run(value)
        assert sess.run(value) == b"kept"  # the next file
        _, whole = reader_and_queue(sess, tf.WholeFileReader(), [missing, good])
        for _ in range(2):  # the missing file stays in progress
            with raises(tf.errors.NotFoundError, "nope; No such file or directory"):
                sess.run(whole)


def test_row_107_writing_to_a_closed_writer(tmp_path):
    path = str(tmp_path / "f")
    writer = tf.python_io.TFRecordWriter(path)
    writer.write(b"kept")
    writer.close()
    with raises(tf.errors.FailedPreconditionError, "Writer is closed."):
        writer.write(b"x")
    assert list(tf.python_io.tf_record_iterator(path)) == [b"kept"]


def test_row_108_restoring_a_state_that_does_not_parse():
    with tf.Graph().as_default(), tf.Session() as sess:
        reader = tf.IdentityReader(name="name")
        key, _ = reader_and_queue(sess, reader, ["X", "Y"])
        assert sess.run(key) == b"X"
        state = sess.run(reader.serialize_state())
        message = "Could not parse state for IdentityReader 'name'"
        with raises(tf.errors.InvalidArgumentError, message):
            sess.run(reader.restore_state(state[1:]))
        assert sess.run(reader.num_records_produced()) == 0  # reset
        assert sess.run(key) == b"Y"


def test_row_109_a_queue_of_numbers():
    with tf.Graph().as_default(), tf.Session() as sess:
        numbers = tf.FIFOQueue(9, tf.int32, shapes=())
        sess.run(numbers.enqueue_many([[1, 2]]))
        with raises(tf.errors.InvalidArgumentError, "Expected queue with single string component"):
            sess.run(tf.IdentityReader().read(numbers))
        assert sess.run(numbers.size()) == 1


def _example(**features) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _floats(*values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def test_row_110_a_required_feature_missing_from_a_single_example():
    with tf.Graph().as_default():
        record = tf.placeholder(tf.string, [])
        out = tf.parse_single_example(record, {"x": tf.FixedLenFeature([], tf.float32)})
        with tf.Session() as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "Feature: x (data type: float) is required but could not be found.",
            ):
                sess.run(out["x"], {record: _example()})
            assert sess.run(out["x"], {record: _example(x=_floats(2.5))}) == 2.5


def _parse_two_floats(batch):
    with tf.Graph().as_default():
        records = tf.placeholder(tf.string, [None])
        out = tf.parse_example(records, {"x": tf.FixedLenFeature([2], tf.float32)})
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(out["x"], {records: batch})
            good = sess.run(out["x"], {records: [_example(x=_floats(1, 2))]})
    np.testing.assert_array_equal(good, [[1, 2]])
    return str(info.value)


def test_row_111_a_feature_of_another_type():
    ints = tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2]))
    message = _parse_two_floats([_example(x=_floats(1, 2)), _example(x=ints)])
    assert (
        "Name: <unknown>, Key: x, Index: 1.  Data types don't match. Data type: int64 but "
        "expected type: float" in message
    )


def test_row_112_a_feature_of_another_length():
    message = _parse_two_floats([_example(x=_floats(1, 2, 3))])
    assert (
        "Name: <unknown>, Key: x, Index: 0.  Number of float values != expected.  Values size: 3 "
        "but output shape: [2]" in message
    )


def test_row_113_a_fixed_len_feature_without_a_shape():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "Missing shape for feature x. Received feature=FixedLenFeature("):
            tf.parse_example([b""], {"x": tf.FixedLenFeature(None, tf.float32)})
        assert "ParseExample" not in op_types(g)


def test_row_114_a_csv_record_with_too_few_fields():
    with tf.Graph().as_default():
        records = tf.placeholder(tf.string, [None])
        columns = tf.decode_csv(records, [[1], [2]])
        with tf.Session() as sess:
            with raises(tf.errors.InvalidArgumentError, "Expect 2 fields but have 1 in record 1"):
                sess.run(columns, {records: ["1,2", "3"]})
            assert [c.tolist() for c in sess.run(columns, {records: ["1,2", "3,"]})] == [
                [1, 3],
                [2, 2],
            ]


def test_row_115_a_csv_field_that_is_not_a_number():
    with tf.Graph().as_default():
        records = tf.placeholder(tf.string, [None])
        columns = tf.decode_csv(records, [[1.0], [0]])
        with tf.Session() as sess:
            with raises(
                tf.errors.InvalidArgumentError, "Field 1 in record 0 is not a valid int32: 234a"
            ):
                sess.run(columns, {records: ["0.2,234a"]})
            assert sess.run(columns, {records: ["0.5,7"]})[1].tolist() == [7]


def test_row_116_decode_raw_of_strings_of_different_lengths():
    with tf.Graph().as_default():
        data = tf.placeholder(tf.string, [None])
        numbers = tf.decode_raw(data, tf.int16)
        with tf.Session() as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "DecodeRaw requires input strings to all be the same size, but element 1 has "
                "size 3 != 4",
            ):
                sess.run(numbers, {data: [b"\x01\x02\x03", b"\x05\x06\x07\x08"]})
            assert sess.run(numbers, {data: [b"\x01\x02"]}).tolist() == [[0x0201]]


# -- input pipelines ------------------------------------------------------------------------


def test_row_117_count_up_to_past_its_limit():
    w = tf.Variable(0, name="w")
    count = w.count_up_to(3)
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert [sess.run(count) for _ in range(3)] == [0, 1, 2]
        with raises(tf.errors.OutOfRangeError, "Reached limit of 3", "[[node CountUpTo]]"):
            sess.run(count)
        assert sess.run(w) == 3


def test_row_118_count_up_to_of_a_vector():
    v = tf.Variable([1, 2])
    with raises(
        ValueError,
        "Shape must be rank 0 but is rank 1 for 'CountUpTo' (op: 'CountUpTo') with input "
        "shapes: [2].",
    ):
        tf.count_up_to(v, 3)
    assert "CountUpTo" not in op_types(tf.get_default_graph())


@pytest.mark.parametrize("build", [tf.train.limit_epochs, tf.train.input_producer])
def test_row_119_zero_epochs(build):
    with raises(ValueError, "num_epochs must be > 0 not 0."):
        build(tf.constant([1, 2]), num_epochs=0)
    assert not tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) and not tf.local_variables()


def test_row_120_input_producer_of_an_unknown_shape():
    with raises(
        ValueError,
        "Either `input_tensor` must have a fully defined shape or `element_shape` must be "
        "specified",
    ):
        tf.train.input_producer(tf.placeholder(tf.float32, None))
    assert not tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    queue = tf.train.input_producer(tf.placeholder(tf.float32, None), element_shape=[4])
    assert queue.shapes == [tf.TensorShape([4])]


def test_row_121_string_input_producer_of_an_empty_list():
    with raises(ValueError, "string_input_producer requires a non-null input tensor"):
        tf.train.string_input_producer([])
    assert "FIFOQueueV2" not in op_types(tf.get_default_graph())


def test_row_122_a_pipeline_without_its_local_variables_initialized():
    queue = tf.train.range_input_producer(4, num_epochs=1, shuffle=False)
    dequeue = queue.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with raises(tf.errors.OutOfRangeError):
            sess.run(dequeue)
        with raises(
            tf.errors.FailedPreconditionError,
            "Attempting to use uninitialized value input_producer/limit_epochs/epochs",
        ):
            coord.join(threads, stop_grace_period_secs=10)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert sess.run(queue.dequeue_many(4)).tolist() == [0, 1, 2, 3]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_row_123_batch_of_a_tensor_of_unknown_rank():
    with raises(ValueError, "Cannot infer Tensor's rank"):
        tf.train.batch([tf.placeholder(tf.float32)], batch_size=2)
    assert "FIFOQueueV2" not in op_types(tf.get_default_graph())


def test_row_124_batch_of_a_tensor_of_unknown_size():
    with raises(ValueError, "All shapes must be fully defined"):
        tf.train.batch([tf.placeholder(tf.float32, [None])], batch_size=2)
    assert "FIFOQueueV2" not in op_types(tf.get_default_graph())
    batched = tf.train.batch([tf.placeholder(tf.float32, [None])], batch_size=2, shapes=[[3]])
    assert batched.shape.as_list() == [2, 3]


def test_row_125_a_keep_input_vector_without_enqueue_many():
    with raises(ValueError, "`keep_input` cannot be a vector when `enqueue_many=False`."):
        tf.train.maybe_batch([tf.zeros(5)], keep_input=tf.constant([True, False]), batch_size=1)
    assert "FIFOQueueV2" not in op_types(tf.get_default_graph())


def test_row_126_batch_join_of_inputs_of_two_dtypes():
    with raises(TypeError, "Expected types to be consistent: int32 vs. int64."):
        tf.train.batch_join([[tf.constant(1)], [tf.constant(1, tf.int64)]], batch_size=8)
    assert "FIFOQueueV2" not in op_types(tf.get_default_graph())


# -- more queues ------------------------------------------------------------------------------


def test_row_127_dequeue_many_from_a_closed_shuffle_queue_with_too_few():
    with tf.Graph().as_default() as g:
        q = tf.RandomShuffleQueue(10, 2, tf.float32, shapes=[()], name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue_many([[1.0, 2.0, 3.0]]))
            sess.run(q.close())
            with raises(
                tf.errors.OutOfRangeError,
                "RandomShuffleQueue '_",
                "is closed and has insufficient elements (requested 5, current size 3)",
                "[[node q_DequeueMany]]",
            ):
                sess.run(q.dequeue_many(5))
            assert queue_size(sess, q) == 3
            assert sorted(sess.run(q.dequeue_up_to(5))) == [1.0, 2.0, 3.0]


def test_row_128_min_after_dequeue_not_below_the_capacity():
    with tf.Graph().as_default() as g:
        q = tf.RandomShuffleQueue(5, 5, tf.float32, name="q")
        ok = tf.RandomShuffleQueue(5, 4, tf.float32, name="ok")
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "min_after_dequeue 5 must be < capacity 5",
                "[[node q]]",
            ):
                sess.run(q.size())
            assert queue_size(sess, ok) == 0
            assert not [r for _, _, r in sess.resource_mgr.items() if r.name.endswith("_q")]


def test_row_129_dequeue_many_from_a_shuffle_queue_without_shapes():
    with tf.Graph().as_default() as g:
        q = tf.RandomShuffleQueue(10, 0, tf.float32, name="q")
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue_many([[1.0, 2.0]]))
            with raises(
                tf.errors.InvalidArgumentError,
                "RandomShuffleQueue's DequeueMany and DequeueUpTo require the components to "
                "have specified shapes.",
                "[[node q_DequeueMany]]",
            ):
                sess.run(q.dequeue_many(2))
            assert sorted([sess.run(q.dequeue()), sess.run(q.dequeue())]) == [1.0, 2.0]


def test_row_130_a_shared_shuffle_queue_with_other_seeds():
    with tf.Graph().as_default() as g:
        q1 = tf.RandomShuffleQueue(10, 0, tf.float32, seed=1, shared_name="shared", name="q1")
        q2 = tf.RandomShuffleQueue(10, 0, tf.float32, seed=2, shared_name="shared", name="q2")
        q3 = tf.RandomShuffleQueue(10, 0, tf.float32, shared_name="shared", name="q3")
        with tf.Session(graph=g) as sess:
            sess.run(q1.enqueue(1.0))
            with raises(
                tf.errors.InvalidArgumentError,
                "Shared queue 'shared' has random seeds (87654321, 1) but requested seeds are "
                "(87654321, 2).",
                "[[node q2]]",
            ):
                sess.run(q2.size())
            assert queue_size(sess, q3) == 1


def test_row_131_a_padding_queue_without_a_list_of_shapes():
    for shapes in (None, (None,)):
        with tf.Graph().as_default() as g:
            with raises(ValueError, "When providing partial shapes, a list of shapes must be"):
                tf.PaddingFIFOQueue(10, tf.int32, shapes=shapes)
            assert g.get_operations() == []


def test_row_132_a_padding_queue_with_a_shape_missing():
    with tf.Graph().as_default() as g:
        with raises(
            ValueError,
            "Shapes must be provided for all components, but received 2 dtypes and 1 shapes.",
        ):
            tf.PaddingFIFOQueue(10, [tf.int32, tf.float32], [[None]])
        assert g.get_operations() == []


def test_row_133_a_value_that_does_not_fit_a_partial_shape():
    with tf.Graph().as_default() as g:
        q = tf.PaddingFIFOQueue(10, tf.float32, [[None, 3]], name="q")
        p = tf.placeholder(tf.float32)
        put = q.enqueue([p])
        with tf.Session(graph=g) as sess:
            sess.run(put, {p: np.ones((1, 3))})
            with raises(
                tf.errors.InvalidArgumentError,
                "Shape mismatch in tuple component 0. Expected [?,3], got [2,4]",
                "[[node q_enqueue]]",
            ):
                sess.run(put, {p: np.zeros((2, 4))})
            assert queue_size(sess, q) == 1
            sess.run(put, {p: np.zeros((5, 3))})
            assert queue_size(sess, q) == 2


def test_row_134_a_priority_queue_without_shapes():
    with tf.Graph().as_default() as g:
        with raises(TypeError, "Expected list for 'shapes' argument to 'priority_queue_v2' Op"):
            tf.PriorityQueue(10, [tf.string])
        assert g.get_operations() == []
        assert tf.PriorityQueue(10, [tf.string], shapes=[()]).dtypes == [tf.int64, tf.string]


def test_row_135_a_priority_that_is_not_an_int64():
    with tf.Graph().as_default() as g:
        q = tf.PriorityQueue(10, [tf.string], shapes=[()], name="q")
        before = op_types(g)
        with raises(TypeError, "Expected int64, got 1.5 of type 'float' instead."):
            q.enqueue((1.5, "a"))
        assert op_types(g) == before
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue((1, "a")))
            assert queue_size(sess, q) == 1


def test_row_136_a_priority_queue_element_without_its_priority():
    with tf.Graph().as_default() as g:
        q = tf.PriorityQueue(10, [tf.string], shapes=[()], name="q")
        before = op_types(g)
        with raises(ValueError, "Queue 'q' has 2 components but the element to enqueue has 1"):
            q.enqueue("a")
        assert op_types(g) == before


def test_row_137_a_priority_that_is_not_a_scalar():
    with tf.Graph().as_default() as g:
        q = tf.PriorityQueue(10, [tf.string], shapes=[()], name="q")
        p = tf.placeholder(tf.int64)
        put = q.enqueue((p, "a"))
        with tf.Session(graph=g) as sess:
            sess.run(put, {p: 3})
            with raises(
                tf.errors.InvalidArgumentError,
                "Shape mismatch in tuple component 0. Expected [], got [2]",
                "[[node q_enqueue]]",
            ):
                sess.run(put, {p: [1, 2]})
            assert queue_size(sess, q) == 1


def test_row_138_a_loop_variable_whose_shape_changes():
    def body(i, m):
        return i + 1, tf.concat([m, m], 0)

    with raises(ValueError, "Input tensor 'ones:0' enters the loop with shape (2, 2)", "(4, 2)"):
        tf.while_loop(lambda i, m: i < 3, body, [0, tf.ones([2, 2])])
    invariants = [tf.TensorShape([]), tf.TensorShape([None, 2])]
    _, m = tf.while_loop(lambda i, m: i < 3, body, [0, tf.ones([2, 2])], invariants)
    with tf.Session() as sess:
        assert sess.run(m).shape == (16, 2)


def test_row_139_a_loop_condition_that_is_not_a_bool():
    with raises(TypeError, "Input 'input' of 'LoopCond' Op has type int32", "type of bool."):
        tf.while_loop(lambda i: i, lambda i: i + 1, [0])
    r = tf.while_loop(lambda i: i < 2, lambda i: i + 1, [0])
    with tf.Session() as sess:
        assert sess.run(r) == 2


def test_row_140_a_loop_body_that_returns_another_structure():
    with raises(ValueError, "The two structures don't have the same nested structure."):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [0, 1])
    r = tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1, j), [0, 1])
    with tf.Session() as sess:
        assert sess.run(r) == (3, 1)


def test_row_141_a_tensor_of_a_loop_used_outside_it():
    out = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    inner = tf.get_default_graph().get_tensor_by_name("while/add:0")
    with raises(ValueError, "Cannot use 'while/add' as input to 'Add'", "is in a while loop."):
        tf.add(inner, 1)
    with tf.Session() as sess:
        assert sess.run(tf.add(out, 1)) == 4


def test_row_142_a_shape_invariant_that_does_not_fit():
    def cond(i):
        return tf.size(i) < 3

    with raises(ValueError, "The shape invariant specified for Const:0 is not compatible"):
        tf.while_loop(cond, lambda i: i, [tf.constant([1, 2])], [tf.TensorShape([3])])


def test_row_143_dynamic_rnn_without_initial_state_or_dtype():
    with tf.Graph().as_default():
        x = tf.zeros([2, 4, 3])
        with raises(ValueError, "If there is no initial_state, you must give a dtype."):
            tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(2), x)
        assert tf.global_variables() == []
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(2), x, dtype=tf.float32)


def test_row_144_dynamic_rnn_inputs_without_a_time_axis():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(2)
        with raises(ValueError, "Shape (4, 2) must have rank at least 3"):
            tf.nn.dynamic_rnn(cell, tf.zeros([2, 4]), dtype=tf.float32)
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 1, 4]), dtype=tf.float32)


def test_row_145_dynamic_rnn_sequence_length_not_a_vector():
    with tf.Graph().as_default():
        cell, x = tf.nn.rnn_cell.BasicRNNCell(2), tf.zeros([2, 4, 3])
        with raises(ValueError, "sequence_length must be a vector of length batch_size", "(1, 2)"):
            tf.nn.dynamic_rnn(cell, x, sequence_length=[[4, 4]], dtype=tf.float32)
        tf.nn.dynamic_rnn(cell, x, sequence_length=[4, 4], dtype=tf.float32)


def test_row_146_dynamic_rnn_sequence_length_of_another_batch_size():
    with tf.Graph().as_default():
        lengths = tf.placeholder(tf.int32, [None])
        outputs, _ = tf.nn.dynamic_rnn(
            tf.nn.rnn_cell.BasicRNNCell(2), tf.ones([2, 4, 3]), lengths, dtype=tf.float32
        )
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with raises(
                tf.errors.InvalidArgumentError,
                "Expected shape for Tensor rnn/sequence_length:0 is",
                "[2]",
                "but saw shape:",
                "[3]",
            ):
                sess.run(outputs, {lengths: [1, 2, 3]})
            assert sess.run(outputs, {lengths: [1, 2]}).shape == (2, 4, 2)


def test_row_147_dynamic_rnn_inputs_with_different_time_steps():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        a, b = tf.zeros([2, 4, 3]), tf.zeros([2, 3, 3])
        with raises(ValueError, "Time steps is not the same for all the elements in the input"):
            tf.nn.dynamic_rnn(cell, (a, b), dtype=tf.float32)


def test_row_148_dropout_wrapper_keep_prob_out_of_range():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        with raises(ValueError, "Parameter output_keep_prob must be between 0 and 1: 1"):
            tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=1.5)
        tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=0.5)


def test_row_149_dropout_wrapper_variational_recurrent():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        with raises(NotImplementedError, "variational_recurrent=True", "not implemented"):
            tf.nn.rnn_cell.DropoutWrapper(cell, variational_recurrent=True, dtype=tf.float32)
        with raises(ValueError, "When variational_recurrent=True, dtype must be provided"):
            tf.nn.rnn_cell.DropoutWrapper(cell, variational_recurrent=True)


def test_row_150_reverse_an_axis_twice():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "axis 0 specified more than once."):
            tf.reverse(tf.zeros([2, 3]), [0, -2])
        assert "ReverseV2" not in op_types(g)


# -- shuffled batches -----------------------------------------------------------------------


def test_row_151_shuffle_batch_with_no_more_capacity_than_min_after_dequeue():
    x = tf.constant(1.0)
    with raises(ValueError, "capacity 10 must be bigger than min_after_dequeue 10."):
        tf.train.shuffle_batch([x], batch_size=2, capacity=10, min_after_dequeue=10)
    assert "RandomShuffleQueueV2" not in op_types(tf.get_default_graph())
    assert not tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    batched = tf.train.shuffle_batch([x], batch_size=2, capacity=11, min_after_dequeue=10)
    assert batched.shape.as_list() == [2]


def test_row_152_shuffle_batch_join_with_less_capacity_than_min_after_dequeue():
    with tf.Graph().as_default() as g:
        b = tf.train.shuffle_batch_join(
            [[tf.constant(1.0)]], batch_size=2, capacity=5, min_after_dequeue=10
        )
        with tf.Session(graph=g) as sess:
            with raises(
                tf.errors.InvalidArgumentError,
                "min_after_dequeue 10 must be < capacity 5",
                "[[node shuffle_batch_join/random_shuffle_queue]]",
            ):
                sess.run(b)
            assert not list(sess.resource_mgr.items())
            assert sess.run(tf.constant(3.0) * 2) == 6.0


# -- loops over rows: map_fn, scan, fold -----------------------------------------------------


def test_row_153_map_fn_over_a_scalar():
    with raises(ValueError, "elems must be a 1+ dimensional Tensor, not a scalar"):
        tf.map_fn(lambda x: x, 1)
    with tf.Session() as sess:
        assert list(sess.run(tf.map_fn(lambda x: x, tf.constant([1])))) == [1]


def test_row_154_map_fn_whose_fn_returns_another_dtype():
    x = tf.constant([1, 2])
    wrong = tf.map_fn(lambda e: tf.cast(e, tf.float32), x)
    right = tf.map_fn(lambda e: tf.cast(e, tf.float32), x, dtype=tf.float32)
    with tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "TensorArray dtype is int32 but Op is trying to write dtype float",
            "map/while/TensorArrayWrite/TensorArrayWriteV3",
        ):
            sess.run(wrong)
        assert list(sess.run(right)) == [1.0, 2.0]


def test_row_155_map_fn_whose_fn_returns_another_structure():
    x = tf.constant([1, 2])
    with raises(ValueError, "The two structures don't have the same nested structure."):
        tf.map_fn(lambda e: (e, -e), x)
    pos, neg = tf.map_fn(lambda e: (e, -e), x, dtype=(tf.int32, tf.int32))
    with tf.Session() as sess:
        assert [list(v) for v in sess.run([pos, neg])] == [[1, 2], [-1, -2]]


def test_row_156_foldl_of_no_rows_without_an_initializer():
    empty = tf.constant([], tf.float32)
    with tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "Tried to read from index 0 but array size is: 0",
            "foldl/TensorArrayReadV3",
        ):
            sess.run(tf.foldl(tf.add, empty))
        assert sess.run(tf.foldl(tf.add, empty, initializer=0.0)) == 0.0


def test_row_157_map_fn_over_a_sparse_tensor():
    st = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
    with raises(TypeError, "To perform a map on the values of a sparse tensor use either"):
        tf.map_fn(lambda x: x, st)


def test_row_158_gradients_of_a_complex_tensor_without_grad_ys():
    c = tf.constant([1 + 2j], dtype=tf.complex64)
    message = "Gradients of complex tensors must set grad_ys (y.dtype = tf.complex64)"
    with raises(TypeError, message):
        tf.gradients(c * c, c)
    i = tf.constant([3, 4])
    (g,) = tf.gradients(i, i)
    with tf.Session() as sess:
        assert list(sess.run(g)) == [1, 1]


# -- summaries ------------------------------------------------------------------------------


def test_row_159_a_vector_to_summary_scalar():
    summary = tf.summary.scalar("loss", tf.constant([1.0, 2.0]))
    fine = tf.summary.scalar("mean", tf.reduce_mean(tf.constant([1.0, 2.0])))
    with tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "tags and values not the same shape: [] != [2] (tag 'loss')",
        ):
            sess.run(summary)
        assert tf.Summary.FromString(sess.run(fine)).value[0].simple_value == 1.5


def test_row_160_a_nan_or_an_infinity_in_a_histogram():
    x = tf.placeholder(tf.float32)
    histogram = tf.summary.histogram("w", x)
    with tf.Session() as sess:
        with raises(tf.errors.InvalidArgumentError, "Nan in summary histogram for: w"):
            sess.run(histogram, {x: [1.0, np.nan]})
        with raises(tf.errors.InvalidArgumentError, "Infinity in summary histogram for: w"):
            sess.run(histogram, {x: [-np.inf]})
        assert tf.Summary.FromString(sess.run(histogram, {x: [1.0]})).value[0].histo.num == 1


def test_row_161_an_image_summary_of_a_3d_tensor():
    image = tf.zeros([3, 3, 1])
    bad = tf.summary.image("im", image)
    good = tf.summary.image("batch", tf.expand_dims(image, 0))
    with tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "Tensor must be 4-D with last dim 1, 3, or 4, not [3,3,1]",
        ):
            sess.run(bad)
        assert tf.Summary.FromString(sess.run(good)).value[0].tag == "batch/image/0"


def test_row_162_merging_two_values_with_one_tag():
    s = tf.summary.scalar("loss", 1.0)
    merged = tf.summary.merge([s, s])
    with tf.Session() as sess:
        with raises(tf.errors.InvalidArgumentError, "Duplicate tag loss found in summary inputs"):
            sess.run(merged)
        assert [v.tag for v in tf.Summary.FromString(sess.run(s)).value] == ["loss"]
    assert tf.summary.scalar("loss", 2.0).op.name == "loss_1"


def test_row_163_a_text_summary_of_a_number():
    with tf.Graph().as_default() as g:
        with raises(
            ValueError, "Expected tensor Const:0 to have dtype string, got <dtype: 'float32'>"
        ):
            tf.summary.text("note", tf.constant(1.0))
        assert "TensorSummaryV2" not in op_types(g)
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == []


def test_row_164_a_dense_layer_named_twice_without_reuse():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2, name="d")
    with raises(ValueError, "Variable d/kernel already exists, disallowed"):
        tf.layers.dense(x, 2, name="d")
    tf.layers.dense(x, 2, name="d", reuse=True)
    assert [v.name for v in tf.global_variables()] == ["d/kernel:0", "d/bias:0"]


def test_row_165_a_dense_layer_on_a_rank_1_input():
    with raises(ValueError, "expected min_ndim=2, found ndim=1"):
        tf.layers.dense(tf.ones([3]), 2)
    assert tf.global_variables() == []


def test_row_166_fused_batch_norm_on_a_2d_input():
    with raises(ValueError, "fused=True only support 4D input tensors"):
        tf.layers.batch_normalization(tf.ones([2, 3]), fused=True)
    assert tf.global_variables() == []


def test_row_167_conv2d_with_unknown_channels():
    with raises(ValueError, "The channel dimension of the inputs should be defined"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [5, 7, 9, None]), 32, 3)
    assert tf.global_variables() == []


def test_row_168_reading_a_missing_file(tmp_path):
    path = tmp_path / "missing.txt"
    with raises(tf.errors.NotFoundError, f"{path}; No such file or directory"):
        tf.gfile.GFile(str(path)).read()
    assert not tf.gfile.Exists(str(path))


def test_row_169_copying_onto_an_existing_file(tmp_path):
    a, b = str(tmp_path / "a.txt"), str(tmp_path / "b.txt")
    for path, text in [(a, "new"), (b, "old")]:
        with tf.gfile.GFile(path, "w") as f:
            f.write(text)
    for move in (tf.gfile.Copy, tf.gfile.Rename):
        with raises(tf.errors.AlreadyExistsError, "file already exists"):
            move(a, b)
    assert tf.gfile.GFile(b).read() == "old"
    tf.gfile.Copy(a, b, overwrite=True)
    assert tf.gfile.GFile(b).read() == "new"


def test_row_170_resizing_by_area_or_bicubic():
    images = np.zeros((1, 2, 2, 1), np.float32)
    with tf.Graph().as_default() as g:
        for method in (tf.image.ResizeMethod.AREA, tf.image.ResizeMethod.BICUBIC):
            with raises(ValueError, "(BICUBIC or AREA) is not implemented in minitf"):
                tf.image.resize_images(images, [3, 3], method)
        assert "ResizeArea" not in op_types(g) and "ResizeBicubic" not in op_types(g)
        assert tf.image.resize_images(images, [3, 3]).shape.as_list() == [1, 3, 3, 1]


def test_row_171_loss_weights_that_do_not_broadcast():
    with tf.Graph().as_default() as g:
        logits = tf.constant(np.eye(3, dtype=np.float32))
        with raises(
            ValueError,
            "weights can not be broadcast to values. values.rank=1. weights.rank=2.",
        ):
            tf.losses.softmax_cross_entropy(np.eye(3), logits, weights=np.ones([2, 2]))
        assert g.get_collection(tf.GraphKeys.LOSSES) == []
        loss = tf.losses.softmax_cross_entropy(np.eye(3), logits, weights=[1.0, 2.0, 3.0])
        assert g.get_collection(tf.GraphKeys.LOSSES) == [loss]


def test_row_172_an_unknown_reduction():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "Invalid Reduction Key mean."):
            tf.losses.compute_weighted_loss([1.0, 2.0], reduction="mean")
        assert g.get_operations() == []
        loss = tf.losses.compute_weighted_loss([1.0, 3.0], reduction=tf.losses.Reduction.MEAN)
        with tf.Session() as sess:
            assert sess.run(loss) == 2.0


def test_row_173_auc_of_a_prediction_outside_the_unit_interval():
    with tf.Graph().as_default():
        predictions = tf.placeholder(tf.float32, [2])
        auc, update_op = tf.metrics.auc([0, 1], predictions)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with raises(tf.errors.InvalidArgumentError, "predictions must be in [0, 1]"):
                sess.run(update_op, {predictions: [0.5, 1.5]})
            assert sess.run(auc) == 0.0
            assert sess.run(update_op, {predictions: [0.25, 0.75]}) == pytest.approx(1.0, abs=1e-5)


def test_row_174_auc_of_an_unknown_curve():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "Curve must be either ROC or PR. Curve XY is unknown."):
            tf.metrics.auc([0, 1], [0.5, 1.0], curve="XY")
        assert g.get_collection(tf.GraphKeys.METRIC_VARIABLES) == []


# -- the Supervisor ---------------------------------------------------------------------------


def test_row_175_a_non_chief_supervisor_with_an_unplaced_variable():
    with tf.Graph().as_default() as g:
        tf.Variable(1.0, name="v")
        with raises(ValueError, "When using replicas, all Variables must have their device set"):
            tf.train.Supervisor(is_chief=False)
        assert not g.finalized
    with tf.Graph().as_default(), tf.device("/job:ps/task:0"):
        tf.Variable(1.0, name="v")
        assert not tf.train.Supervisor(is_chief=False).is_chief


def test_row_176_summary_computed_without_a_summary_writer():
    with tf.Graph().as_default():
        summ = tf.summary.scalar("c1", tf.constant(1.0))
        sv = tf.train.Supervisor(logdir=None)
        sess = sv.prepare_or_wait_for_session("")
        with raises(RuntimeError, "Writing a summary requires a summary writer."):
            sv.summary_computed(sess, sess.run(summ))
        assert not sv.should_stop()
        sv.stop()


def test_row_177_standard_services_on_a_non_chief():
    with tf.Graph().as_default():
        sv = tf.train.Supervisor(is_chief=False)
        sess = sv.prepare_or_wait_for_session("")
        with raises(RuntimeError, "Only chief supervisor can start standard services."):
            sv.start_standard_services(sess)
        assert sess.run(tf.get_default_graph().get_tensor_by_name(sv.ready_op.name)).size == 0
        sv.stop()


def test_row_178_reading_an_iterator_before_its_initializer():
    iterator = tf.data.Dataset.range(3).make_initializable_iterator()
    next_element = iterator.get_next()
    with tf.Session() as sess:
        with raises(
            tf.errors.FailedPreconditionError,
            "GetNext() failed because the iterator has not been initialized.",
            "[[node IteratorGetNext]]",
        ):
            sess.run(next_element)
        sess.run(iterator.initializer)
        assert sess.run(next_element) == 0


def test_row_179_an_initializer_for_a_dataset_of_other_types():
    with tf.Graph().as_default() as g:
        iterator = tf.data.Iterator.from_structure((tf.int64, tf.float64), ([None], []))
        dataset = tf.data.Dataset.from_tensors((tf.constant([1, 2, 3]), tf.constant(4.0)))
        with raises(
            TypeError,
            "Expected output types (tf.int64, tf.float64) but got dataset with output types "
            "(tf.int32, tf.float32).",
        ):
            iterator.make_initializer(dataset)
        assert "MakeIterator" not in op_types(g)


def test_row_180_slices_of_components_with_different_first_dimensions():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "Dimensions 4 and 3 are not compatible"):
            tf.data.Dataset.from_tensor_slices((np.zeros(4), np.zeros(3)))
        assert "TensorSliceDataset" not in op_types(g)


def test_row_181_a_batch_of_elements_of_different_shapes():
    dataset = tf.data.Dataset.range(1, 3).map(lambda x: tf.fill(tf.expand_dims(x, 0), x))
    bad = dataset.batch(2).make_one_shot_iterator().get_next()
    good = dataset.padded_batch(2, padded_shapes=[None]).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with raises(
            tf.errors.InvalidArgumentError,
            "Cannot batch tensors with different shapes in component 0. First element had "
            "shape [1] and element 1 had shape [2].",
            "[[node IteratorGetNext]]",
        ):
            sess.run(bad)
        assert sess.run(good).tolist() == [[1, 0], [2, 2]]


def test_row_182_piecewise_constant_with_as_many_values_as_boundaries():
    with tf.Graph().as_default() as g:
        step = tf.train.get_or_create_global_step()
        before = len(g.get_operations())
        with raises(
            ValueError, "The length of boundaries should be 1 less than the length of values"
        ):
            tf.train.piecewise_constant(step, [10, 20], [1.0, 0.5])
        assert len(g.get_operations()) == before
        rate = tf.train.piecewise_constant(step, [10, 20], [1.0, 0.5, 0.1])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(rate) == 1.0


def test_row_183_a_convolution_window_larger_than_its_input():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "Negative dimension size caused by subtracting 3 from 2"):
            tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.zeros([3, 3, 1, 1]), [1, 1, 1, 1], "VALID")
        assert "Conv2D" not in op_types(g)
        same = tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.zeros([3, 3, 1, 1]), [1, 1, 1, 1], "SAME")
        assert same.shape.as_list() == [1, 2, 2, 1]


def test_row_184_a_filter_depth_that_does_not_fit():
    with tf.Graph().as_default() as g:
        with raises(
            ValueError, "Depth of input (2) is not a multiple of input depth of filter (3)"
        ):
            tf.nn.conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([2, 2, 3, 1]), [1, 1, 1, 1], "SAME")
        assert "Conv2D" not in op_types(g)


def test_row_185_a_channels_first_convolution_on_the_cpu():
    x, w = tf.zeros([1, 1, 4, 4]), tf.ones([2, 2, 1, 1])
    bad = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW")
    good = tf.nn.conv2d(tf.transpose(x, [0, 2, 3, 1]), w, [1, 1, 1, 1], "SAME")
    with tf.Session() as sess:
        with raises(
            tf.errors.UnimplementedError,
            "The Conv2D op currently only supports the NHWC tensor format on the CPU. "
            "The op was given the format: NCHW",
        ):
            sess.run(bad)
        np.testing.assert_array_equal(sess.run(good), np.zeros((1, 4, 4, 1)))


def test_row_186_top_k_larger_than_the_last_dimension():
    with tf.Graph().as_default() as g:
        with raises(ValueError, "input must have last dimension >= k = 3 but is 2"):
            tf.nn.top_k([[1.0, 2.0]], 3)
        assert "TopKV2" not in op_types(g)
        k = tf.placeholder(tf.int32, [])
        values, _ = tf.nn.top_k([[1.0, 2.0]], k)
        with tf.Session() as sess:
            with raises(tf.errors.InvalidArgumentError, "input must have at least k columns"):
                sess.run(values, {k: 3})
            np.testing.assert_array_equal(sess.run(values, {k: 1}), [[2.0]])


def test_row_187_sync_easgd_on_a_worker_beyond_num_workers():
    from minitf.cluster import policies

    sgd = tf.train.GradientDescentOptimizer(0.1)
    with raises(
        ValueError,
        "SyncEASGD: worker_index must be in [0, num_workers=4), got 4; it defaults to the "
        "task of the getter's worker_device",
    ):
        policies.SyncEASGD(sgd, 4, policies.EASGDCustomGetter("/job:worker/task:4"), 0.1)
    opt = policies.SyncEASGD(sgd, 5, policies.EASGDCustomGetter("/job:worker/task:4"), 0.1)
    assert opt.worker_index == 4


def test_row_188_easgd_with_a_variable_made_without_the_getter():
    from minitf.cluster import policies

    with tf.Graph().as_default() as g:
        getter = policies.EASGDCustomGetter("/job:worker/task:0")
        v = tf.Variable(1.0, name="v")
        with tf.variable_scope("", custom_getter=getter):
            w = tf.get_variable("w", [], initializer=tf.ones_initializer())
        step = tf.train.get_or_create_global_step()
        opt = policies.AsyncEASGD(tf.train.GradientDescentOptimizer(0.1), getter, 0.1)
        with raises(
            ValueError,
            "EASGD: variable 'v' has no center: make it with tf.get_variable inside "
            "tf.variable_scope('', custom_getter=EASGDCustomGetter(...))",
        ):
            opt.minimize(v * v + w * w, global_step=step)
        assert not [op for op in g.get_operations() if op.name.startswith("async_easgd")]
        opt.minimize(v * v + w * w, global_step=step, var_list=[w])  # only w has a center


def test_row_189_local_response_normalization_of_doubles():
    with tf.Graph().as_default() as g:
        with raises(
            TypeError,
            "Value passed to parameter 'input' has DataType float64 not in list of allowed "
            "values: float16, float32",
        ):
            tf.nn.lrn(tf.zeros([1, 2, 2, 3], tf.float64))
        assert "LRN" not in op_types(g)
        y = tf.nn.lrn(tf.cast(tf.zeros([1, 2, 2, 3], tf.float64), tf.float32))
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), np.zeros((1, 2, 2, 3)))


def test_row_190_optimize_loss_with_an_unknown_optimizer_name():
    w = tf.Variable(1.0)
    step = tf.train.create_global_step()
    with raises(
        ValueError,
        "Optimizer name should be one of [Adagrad, Adam, Ftrl, Momentum, RMSProp, SGD], "
        "you provided Sgd.",
    ):
        tf.contrib.layers.optimize_loss(w * 2.0, step, 0.1, "Sgd")
    train = tf.contrib.layers.optimize_loss(w * 2.0, step, 0.1, "SGD")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w) == pytest.approx(0.8)


def test_row_191_a_sparse_update_of_a_constrained_variable():
    table = tf.Variable(np.ones((3, 2), np.float32), constraint=lambda t: tf.maximum(t, 0.0))
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [0, 2]))
    opt = tf.train.GradientDescentOptimizer(2.0)
    with raises(RuntimeError, "Cannot use a constraint function on a sparse variable."):
        opt.minimize(loss)
    plain = tf.Variable(np.ones((3, 2), np.float32))
    step = opt.minimize(tf.reduce_sum(tf.nn.embedding_lookup(plain, [0, 2])))
    with tf.control_dependencies([step]):
        project = plain.assign(tf.maximum(plain, 0.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(project)
        np.testing.assert_array_equal(sess.run(plain), [[0, 0], [1, 1], [0, 0]])


def test_row_192_run_metadata_written_twice_under_one_tag(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(tf.RunMetadata(), "step_1")
    with raises(ValueError, "The provided tag was already used for this event type"):
        writer.add_run_metadata(tf.RunMetadata(), "step_1")
    writer.add_run_metadata(tf.RunMetadata(), "step_2")
    writer.close()
    (path,) = tmp_path.iterdir()
    tags = [
        e.tagged_run_metadata.tag
        for e in tf.train.summary_iterator(str(path))
        if e.HasField("tagged_run_metadata")
    ]
    assert tags == ["step_1", "step_2"]


def test_row_193_a_policys_end_op_before_apply_gradients():
    with tf.Graph().as_default() as g:
        w = tf.Variable(1.0)
        opt = policies.KAsync(tf.train.GradientDescentOptimizer(0.1), 2, 3)
        before = len(g.get_operations())
        with raises(ValueError, "release_at_end_op() should be called after apply_gradients()."):
            opt.release_at_end_op(True)
        assert len(g.get_operations()) == before
        opt.minimize(w * w, global_step=tf.train.get_or_create_global_step())
        assert opt.release_at_end_op(True).type == "NoOp"  # a group of the count and the tokens


def test_row_194_a_minitf_ports_that_is_not_a_range(monkeypatch):
    from minitf.runtime.distributed.launcher import LocalCluster

    monkeypatch.setenv("MINITF_PORTS", "abc")
    message = (
        "MINITF_PORTS='abc' is not a range of ports: write LOW-HIGH, e.g. 20000-20999, "
        "with 1 <= LOW <= HIGH <= 65535"
    )
    with raises(ValueError, message):
        LocalCluster({"ps": 1, "worker": 1}, output=None)


@pytest.mark.parametrize(
    "option",
    [
        {"batch_weights": [1.0, 1.0]},
        {"renorm": True},
        {"adjustment": lambda shape: (1.0, 0.0)},
    ],
)
def test_row_195_batch_norm_options_minitf_does_not_have(option):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2, 3])
        before = len(g.get_operations())
        name = next(iter(option))
        with raises(NotImplementedError, f"tf.contrib.layers.batch_norm has no `{name}`"):
            tf.contrib.layers.batch_norm(x, **option)
        assert len(g.get_operations()) == before
        assert tf.global_variables() == []


def test_row_196_batch_norm_with_an_unknown_data_format():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2, 2, 2, 3])
        before = len(g.get_operations())
        with raises(ValueError, "data_format has to be either NCHW or NHWC."):
            tf.contrib.layers.batch_norm(x, data_format="CHWN")
        assert len(g.get_operations()) == before
        assert tf.contrib.layers.batch_norm(x, data_format="NCHW").get_shape() == (2, 2, 2, 3)


def test_row_197_batch_norm_of_an_input_of_unknown_rank():
    with raises(ValueError, "Inputs Placeholder:0 has undefined rank."):
        tf.contrib.layers.batch_norm(tf.placeholder(tf.float32), updates_collections=None)
    with raises(ValueError, "Input has undefined rank"):
        tf.contrib.layers.batch_norm(tf.placeholder(tf.float32))
    assert tf.global_variables() == []


def test_row_198_batch_norm_with_unknown_channels():
    x = tf.placeholder(tf.float32, [5, 3, 3, None])
    with raises(ValueError, "Inputs Placeholder:0 has undefined channels dimension (5, 3, 3, ?)."):
        tf.contrib.layers.batch_norm(x, updates_collections=None)
    assert tf.global_variables() == []
    x.set_shape([5, 3, 3, 4])
    tf.contrib.layers.batch_norm(x, updates_collections=None)
    assert tf.global_variables()[0].get_shape() == (4,)


def test_row_199_arg_scope_of_a_function_not_decorated():
    def my_layer(inputs, padding="VALID"):
        return inputs

    framework = tf.contrib.framework
    with raises(ValueError, "my_layer is not decorated with @add_arg_scope"):
        with framework.arg_scope([my_layer], padding="SAME"):
            pass
    assert framework.current_arg_scope() == {}
    decorated = framework.add_arg_scope(my_layer)
    with framework.arg_scope([decorated], padding="SAME"):
        assert framework.current_arg_scope() == {decorated._key_op: {"padding": "SAME"}}


def test_row_200_arg_scope_of_a_saved_scope_with_kwargs():
    framework = tf.contrib.framework
    with framework.arg_scope([tf.contrib.layers.conv2d], stride=2) as sc:
        pass
    message = "When attempting to re-use a scope by supplying a dictionary, kwargs must be empty."
    with raises(ValueError, message):
        with framework.arg_scope(sc, padding="SAME"):
            pass
    assert framework.current_arg_scope() == {}


def test_row_201_arg_scope_of_one_function_not_a_list():
    framework = tf.contrib.framework
    with raises(TypeError, "list_ops_or_scope must either be a list/tuple or reused scope"):
        with framework.arg_scope(tf.contrib.layers.conv2d, padding="SAME"):
            pass
    assert framework.current_arg_scope() == {}


def test_row_202_batch_norm_zero_debias_with_a_tensor_is_training():
    x = tf.placeholder(tf.float32, [2, 3])
    is_training = tf.placeholder(tf.bool, [])
    before = len(tf.get_default_graph().get_operations())
    with raises(NotImplementedError, "zero_debias_moving_mean only with a Python bool is_training"):
        tf.contrib.layers.batch_norm(x, zero_debias_moving_mean=True, is_training=is_training)
    assert len(tf.get_default_graph().get_operations()) == before
    train = tf.contrib.layers.batch_norm(x, zero_debias_moving_mean=True, scope="bn")
    evaluate = tf.contrib.layers.batch_norm(x, is_training=False, scope="bn", reuse=True)
    assert train.get_shape() == evaluate.get_shape() == (2, 3)
