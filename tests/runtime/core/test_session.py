"""Tests for minitf.runtime.core.session: ``tf.Session`` fetches, feeds, errors and defaults.

Expected values and messages follow TF1's ``client/session.py`` and the facts
pinned by TF's ``client/session_test.py``; numbers are computed by hand.
"""

import collections
import re
import threading

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

Pair = collections.namedtuple("Pair", ["first", "second"])


def _fail_if_run():
    """A placeholder: running it without a feed raises InvalidArgumentError."""
    return tf.placeholder(tf.float32, shape=[], name="must_not_run")


# -- fetch structures ----------------------------------------------------------------------


def test_run_a_single_tensor_returns_a_numpy_value():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        out = sess.run(a)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])


def test_scalar_fetch_is_a_numpy_scalar_of_the_tensor_dtype():
    with tf.Session() as sess:
        f = sess.run(tf.constant(2.5))
        i = sess.run(tf.constant(7))
    assert isinstance(f, np.float32) and f == 2.5
    assert isinstance(i, np.int32) and i == 7


def test_fetch_list_and_tuple_keep_their_type():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.Session() as sess:
        as_list = sess.run([a, b])
        as_tuple = sess.run((a, b))
    assert type(as_list) is list and as_list == [1.0, 2.0]
    assert type(as_tuple) is tuple and as_tuple == (1.0, 2.0)


def test_fetch_namedtuple_keeps_its_type():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.Session() as sess:
        out = sess.run(Pair(a, b))
    assert type(out) is Pair
    assert out.first == 1.0 and out.second == 2.0


def test_fetch_dict_and_ordered_dict_keep_type_and_keys():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.Session() as sess:
        plain = sess.run({"a": a, "b": b})
        ordered = sess.run(collections.OrderedDict([("b", b), ("a", a)]))
    assert type(plain) is dict and plain == {"a": 1.0, "b": 2.0}
    assert type(ordered) is collections.OrderedDict
    assert list(ordered.items()) == [("b", 2.0), ("a", 1.0)]


def test_fetch_nested_structures():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    op = tf.no_op()
    with tf.Session() as sess:
        out = sess.run({"x": [a, (b, {"y": c})], "p": Pair(a, op), "z": []})
    assert out == {"x": [1.0, (2.0, {"y": 3.0})], "p": Pair(1.0, None), "z": []}
    assert type(out["x"][1]) is tuple
    assert type(out["p"]) is Pair


def test_fetch_by_tensor_name_and_by_op_name():
    tf.constant(5.0, name="x")
    with tf.Session() as sess:
        assert sess.run("x:0") == 5.0
        assert sess.run("x") is None
        assert sess.run(["x:0", "x"]) == [5.0, None]


def test_duplicate_fetches_are_all_filled():
    a = tf.constant(4.0, name="a")
    with tf.Session() as sess:
        assert sess.run([a, a, "a:0", (a,)]) == [4.0, 4.0, 4.0, (4.0,)]


def test_fetching_ops_gives_none():
    a = tf.constant(1.0)
    noop = tf.no_op()
    grouped = tf.group(a, noop)
    with tf.Session() as sess:
        assert sess.run(noop) is None
        assert sess.run(grouped) is None
        assert sess.run([noop, a]) == [None, 1.0]


def test_fetching_a_variable_gives_its_value():
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_fetch_none_raises_type_error():
    a = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Fetch argument None has invalid type"):
            sess.run(None)
        with pytest.raises(TypeError, match="Fetch argument None has invalid type"):
            sess.run([a, None])


def test_fetch_of_an_unsupported_type_raises_type_error():
    tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="has invalid type"):
            sess.run(12)


def test_fetch_from_another_graph_raises_value_error():
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    tf.constant(2.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run(other)


def test_fetch_of_an_unknown_name_raises_value_error():
    tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("nope:0")
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("nope")


# -- feeds ---------------------------------------------------------------------------------


def test_feed_by_tensor_and_by_name():
    p = tf.placeholder(tf.float32, shape=[2], name="p")
    y = tf.identity(p)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {p: [1.0, 2.0]}), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(y, {"p:0": [3.0, 4.0]}), [3.0, 4.0])


def test_fed_lists_are_converted_to_the_tensor_dtype():
    p = tf.placeholder(tf.float32, shape=[None])
    with tf.Session() as sess:
        out = sess.run(tf.identity(p), {p: [1, 2, 3]})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_feeding_an_intermediate_tensor_skips_its_producers():
    p = _fail_if_run()
    mid = p + 1.0
    out = mid + mid
    with tf.Session() as sess:
        assert sess.run(out, {mid: 3.0}) == 6.0


def test_feeding_an_intermediate_tensor_does_not_run_side_effects_upstream():
    v = tf.Variable(0.0)
    bumped = tf.identity(tf.assign_add(v, 1.0))
    out = bumped + 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(out, {bumped: 10.0}) == 11.0
        assert sess.run(v) == 0.0
        assert sess.run(out) == 2.0
        assert sess.run(v) == 1.0


def test_fetching_a_fed_tensor_returns_the_fed_value():
    p = tf.placeholder(tf.float32, shape=[])
    mid = p + 1.0
    with tf.Session() as sess:
        assert sess.run(mid, {mid: 42.0}) == 42.0


def test_feed_of_the_wrong_shape_raises_tf_value_error():
    p = tf.placeholder(tf.float32, shape=[2], name="p")
    with tf.Session() as sess:
        expected = "Cannot feed value of shape (3,) for Tensor 'p:0', which has shape '(2,)'"
        with pytest.raises(ValueError, match=re.escape(expected)):
            sess.run(p, {p: [1.0, 2.0, 3.0]})


def test_a_feed_is_checked_against_the_shape_the_tensor_has_at_that_run():
    # TF1's Session.run checks each feed against the tensor's static shape when
    # it runs: a set_shape after a first run refines what the next run accepts.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        doubled = x * 2.0
        with tf.Session() as sess:
            two_rows = np.ones((2, 3), np.float32)
            np.testing.assert_array_equal(sess.run(doubled, {x: two_rows}), 2 * two_rows)
            x.set_shape([4, 3])
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 3\)"):
                sess.run(doubled, {x: two_rows})
            four_rows = np.full((4, 3), 0.5, np.float32)
            np.testing.assert_array_equal(sess.run(doubled, {x: four_rows}), np.ones((4, 3)))


def test_feed_of_an_overflowing_python_int_raises_type_error():
    p = tf.placeholder(tf.int32, shape=[], name="p")
    with tf.Session() as sess:
        with pytest.raises(
            TypeError,
            match=re.escape(
                "Type of feed value 2147483648 with type <class 'int'> is not compatible "
                "with Tensor type"
            ),
        ):
            sess.run(p, {p: 2**31})
        assert sess.run(p, {p: 2**31 - 1}) == 2**31 - 1


def test_feeding_a_tensor_raises_type_error():
    p = tf.placeholder(tf.float32, shape=[])
    c = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="The value of a feed cannot be a tf.Tensor object"):
            sess.run(p, {p: c})


def test_feeding_a_non_feedable_tensor_raises_value_error():
    c = tf.constant(1.0)
    tf.get_default_graph().prevent_feeding(c)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(c, {c: 2.0})


def test_two_keys_for_the_same_tensor_the_last_one_wins():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    with tf.Session() as sess:
        assert sess.run(tf.identity(p), {p: 1.0, "p:0": 2.0}) == 2.0


def test_a_key_fed_before_is_checked_again_on_every_run():
    # The second and later feeds of a key take a shorter path: the checks still hold.
    p = tf.placeholder(tf.float32, shape=[None, 2], name="p")
    doubled = p * 2.0
    with tf.Session() as sess:
        first = np.array([[1.0, 2.0]], np.float32)
        np.testing.assert_array_equal(sess.run(doubled, {p: first}), [[2.0, 4.0]])
        three = np.ones((3, 2), np.float32)
        np.testing.assert_array_equal(sess.run(doubled, {p: three}), np.full((3, 2), 2.0))
        expected = "Cannot feed value of shape (1, 3) for Tensor 'p:0', which has shape '(?, 2)'"
        with pytest.raises(ValueError, match=re.escape(expected)):
            sess.run(doubled, {p: np.ones((1, 3), np.float32)})
        ints = np.array([[1, 2]], np.int64)  # another dtype: converted, as the first time
        np.testing.assert_array_equal(sess.run(doubled, {p: ints}), [[2.0, 4.0]])
        assert sess.run(doubled, {p: first, "p:0": three}).shape == (3, 2)  # the last one wins
        tf.get_default_graph().prevent_feeding(p)
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(doubled, {p: first})


def test_a_kept_fetch_structure_is_mapped_again_when_the_graph_changes():
    a = tf.constant(1.0, name="a")
    with tf.Session() as sess:
        assert sess.run({"x": [a, a], 0: (a,)}) == {"x": [1.0, 1.0], 0: (1.0,)}
        b = tf.constant(2.0, name="b")
        assert sess.run({"x": [a, b], 0: (b,)}) == {"x": [1.0, 2.0], 0: (2.0,)}
        assert sess.run({"x": [a, "b:0"], 1: [b.op]}) == {"x": [1.0, 2.0], 1: [None]}


def test_fetching_an_unfetchable_op_raises_value_error():
    c = tf.constant(1.0, name="hidden")
    tf.get_default_graph().prevent_fetching(c.op)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="'hidden' has been marked as not fetchable"):
            sess.run(c)


def test_a_fetch_that_ran_before_is_refused_once_it_is_marked_unfetchable():
    c = tf.constant(1.0, name="hidden")
    d = tf.constant(2.0, name="shown")
    with tf.Session() as sess:
        assert sess.run([c, d]) == [1.0, 2.0]
        assert sess.run([c, d]) == [1.0, 2.0]  # the same list: its mapping is kept
        tf.get_default_graph().prevent_fetching(c.op)
        with pytest.raises(ValueError, match="'hidden' has been marked as not fetchable"):
            sess.run([c, d])
        assert sess.run((d, "shown:0")) == (2.0, 2.0)


def test_a_kept_fetch_of_a_variable_reads_its_value_now():
    v = tf.Variable(1.0)
    bump = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run([bump.op, v])[1] for _ in range(3)] == [2.0, 3.0, 4.0]


def test_feed_key_of_an_unknown_name_raises_type_error():
    p = tf.placeholder(tf.float32, shape=[])
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(p, {"nope:0": 1.0})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(p, {p.op: 1.0})


def test_feed_value_that_cannot_be_converted_raises_value_error():
    p = tf.placeholder(tf.float32, shape=[])
    with tf.Session() as sess:
        with pytest.raises(ValueError):
            sess.run(p, {p: "not a number"})


def test_missing_placeholder_feed_raises_invalid_argument_naming_it():
    x = tf.placeholder(tf.float32, shape=[2], name="x")
    y = tf.identity(x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y)
    assert "You must feed a value for placeholder tensor 'x'" in info.value.message
    assert info.value.op is x.op


# -- variables and devices -----------------------------------------------------------------


def test_uninitialized_variable_raises_failed_precondition_naming_it():
    v = tf.Variable([1.0, 2.0], name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(v.value())
    assert "Attempting to use uninitialized value weights" in info.value.message
    assert info.value.op is v.value().op


def test_fetching_an_uninitialized_variable_raises_failed_precondition():
    v = tf.Variable([1.0, 2.0], name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(v)


@pytest.mark.parametrize("device", ["/job:ps/task:0", "/device:GPU:0"])
def test_unavailable_device_raises_invalid_argument(device):
    with tf.device(device):
        a = tf.constant(1.0, name="placed")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device") as info:
            sess.run(a)
    assert info.value.op is a.op


@pytest.mark.parametrize("device", ["/job:ps/task:0", "/device:GPU:0"])
def test_allow_soft_placement_runs_on_an_available_device(device):
    with tf.device(device):
        a = tf.constant(1.0)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        assert sess.run(a) == 1.0


@pytest.mark.parametrize("device", ["/cpu:0", "/job:localhost", "/job:localhost/replica:0/task:0"])
def test_local_devices_are_available(device):
    with tf.device(device):
        a = tf.constant(1.0)
    with tf.Session() as sess:
        assert sess.run(a) == 1.0


def test_fetched_arrays_are_writable_copies():
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        read = sess.run(v.value())
        assert first.flags.writeable and read.flags.writeable
        first[0] = 100.0
        read[1] = 200.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_changing_a_fed_array_after_the_run_does_not_change_the_result():
    p = tf.placeholder(tf.float32, shape=[2])
    fed = np.array([1.0, 2.0], np.float32)
    with tf.Session() as sess:
        out = sess.run(tf.identity(p), {p: fed})
    fed[0] = -1.0
    np.testing.assert_array_equal(out, [1.0, 2.0])


# -- session lifetime, defaults ------------------------------------------------------------


def test_run_on_a_closed_session_raises_runtime_error():
    a = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session"):
        sess.run(a)


def test_run_on_an_empty_graph_raises_runtime_error():
    with tf.Session() as sess:
        with pytest.raises(RuntimeError, match="The Session graph is empty"):
            sess.run([])


def test_session_graph_argument_must_be_a_graph():
    with pytest.raises(TypeError, match="graph must be a tf.Graph"):
        tf.Session(graph=123)


def test_session_uses_the_default_graph_when_none_is_given():
    g = tf.Graph()
    with g.as_default():
        sess = tf.Session()
    try:
        assert sess.graph is g
    finally:
        sess.close()


def test_with_session_sets_default_graph_and_session():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(3.0)
    outer_graph = tf.get_default_graph()
    assert tf.get_default_session() is None
    with tf.Session(graph=g) as sess:
        assert tf.get_default_graph() is g
        assert tf.get_default_session() is sess
        assert c.eval() == 3.0
    assert tf.get_default_graph() is outer_graph
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_tensor_eval_and_operation_run_use_the_default_session():
    v = tf.Variable(1.0)
    p = tf.placeholder(tf.float32, shape=[])
    y = p + 1.0
    with tf.Session() as sess:
        v.initializer.run()
        assert v.eval() == 1.0
        assert y.eval(feed_dict={p: 2.0}) == 3.0
        assert y.eval({p: 4.0}, session=sess) == 5.0


def test_eval_and_run_without_a_default_session_raise_value_error():
    c = tf.constant(1.0)
    op = tf.no_op()
    with pytest.raises(
        ValueError, match="Cannot evaluate tensor using `eval\\(\\)`: No default session"
    ):
        c.eval()
    with pytest.raises(
        ValueError, match="Cannot execute operation using `run\\(\\)`: No default session"
    ):
        op.run()


def test_eval_in_a_session_of_another_graph_raises_value_error():
    c = tf.constant(1.0)
    with tf.Graph().as_default():
        tf.constant(2.0)
        with tf.Session() as other:
            with pytest.raises(ValueError, match="graph is different from the session's graph"):
                c.eval(session=other)
            with pytest.raises(ValueError, match="graph is different from the session's graph"):
                c.eval()


def test_as_default_does_not_close_the_session():
    c = tf.constant(2.0)
    sess = tf.Session()
    try:
        with sess.as_default():
            assert tf.get_default_session() is sess
            assert c.eval() == 2.0
        assert tf.get_default_session() is None
        assert sess.run(c) == 2.0
    finally:
        sess.close()


def test_default_session_is_per_thread():
    tf.constant(1.0)
    seen = {}
    with tf.Session() as sess:
        thread = threading.Thread(target=lambda: seen.update(s=tf.get_default_session()))
        thread.start()
        thread.join(timeout=10)
        assert tf.get_default_session() is sess
    assert not thread.is_alive()
    assert seen == {"s": None}


def test_interactive_session_installs_itself_as_default():
    c = tf.constant(6.0)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert c.eval() == 6.0
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_make_callable_runs_fetches_with_positional_feeds():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    q = tf.placeholder(tf.float32, shape=[], name="q")
    total = p + q
    noop = tf.no_op()
    with tf.Session() as sess:
        run = sess.make_callable([total, noop], feed_list=[p, "q:0"])
        assert run(1.0, 2.0) == [3.0, None]
        assert run(10.0, 20.0) == [30.0, None]
        single = sess.make_callable(total, [p, q])
        assert single(2.0, 2.0) == 4.0


def test_make_callable_without_feeds():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(inc.op)
        assert step() is None
        step()
        assert sess.run(v) == 2.0


def test_a_callable_checks_its_session_its_feeds_and_a_recording_on_every_call():
    # The runner walks a straight plan itself; it must still do what run() does.
    x = tf.placeholder(tf.float32, shape=[2], name="x")
    doubled = x * 2.0
    sess = tf.Session()
    run = sess.make_callable(doubled, [x])
    fed = np.array([1.0, 2.5], np.float32)
    np.testing.assert_array_equal(run(fed), [2.0, 5.0])
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        run(np.zeros(3, np.float32))
    token = sess.start_recording()
    run(fed)
    stats, _ = sess.stop_recording(token)
    names = [n.node_name for d in stats.dev_stats for n in d.node_stats]
    assert doubled.op.name in names
    # A graph that changed under the runner: the same signature, a new plan.
    tf.constant(0.0, name="later")
    np.testing.assert_array_equal(run(fed), [2.0, 5.0])
    result = run(fed)
    result[0] = -1.0  # the caller owns what it fetched
    np.testing.assert_array_equal(run(fed), [2.0, 5.0])
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        run(fed)


def test_a_callable_checks_what_it_is_fed_as_run_does_on_its_quick_lanes():
    # Arrays of the placeholder's dtype and shape, and Python ints for an
    # integer scalar, skip the general conversion; everything else takes it.
    x = tf.placeholder(tf.float32, shape=[2], name="x")
    n = tf.placeholder(tf.int32, shape=[], name="n")
    out = x * tf.cast(n, tf.float32)
    with tf.Session() as sess:
        run = sess.make_callable(out, [x, n])
        fed = np.array([1.0, 2.5], np.float32)
        np.testing.assert_array_equal(run(fed, 3), [3.0, 7.5])
        np.testing.assert_array_equal(run([1, 2], np.int32(-2)), [-2.0, -4.0])
        np.testing.assert_array_equal(run(fed, True), [1.0, 2.5])  # a bool, converted
        assert fed.flags.writeable  # the caller's array is untouched
        with pytest.raises(TypeError, match="not compatible with Tensor type"):
            run(fed, 2**31)  # out of int32's range
        np.testing.assert_array_equal(run(fed, 2**31 - 1), fed * np.float32(2**31 - 1))
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            run(np.zeros(3, np.float32), 1)
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            run(fed, np.array([1, 2], np.int32))
        tf.get_default_graph().prevent_feeding(n)
        with pytest.raises(ValueError, match="may not be fed"):
            run(fed, 3)
        tf.get_default_graph().prevent_feeding(x)
        with pytest.raises(ValueError, match="may not be fed"):
            run(fed, np.int32(3))


def test_a_callable_with_a_feed_list_passes_options_and_run_metadata_on_to_run():
    # TF's function made with a feed_list calls run(fetches, feed_dict, **kwargs).
    x = tf.placeholder(tf.float32, shape=[], name="x")
    doubled = tf.multiply(x, 2.0, name="doubled")
    with tf.Session() as sess:
        run = sess.make_callable(doubled, [x])
        metadata = tf.RunMetadata()
        full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        assert run(1.5, options=full, run_metadata=metadata) == 3.0
        names = {n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats}
        assert "doubled" in names
        with pytest.raises(TypeError, match="unexpected keyword 'feed_dict'"):
            run(1.5, feed_dict={x: 2.0})
        with pytest.raises(TypeError, match="unexpected keyword 'option'"):
            run(1.5, option=full)
        bare = sess.make_callable(doubled)  # no feed_list, no accept_options
        with pytest.raises(TypeError, match="accept_options=True"):
            bare(options=full)


def test_a_callable_without_a_feed_list_takes_no_values_and_options_only_when_asked():
    c = tf.multiply(tf.Variable(2.0), 2.0, name="c")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(TypeError, match="takes no feed values \\(1 given\\)"):
            sess.make_callable(c)(1.0)
        traced = sess.make_callable(c, accept_options=True)
        metadata = tf.RunMetadata()
        # TF's template takes options and run_metadata by position too.
        assert traced(tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), metadata) == 4.0
        assert {n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats} >= {"c"}
        with pytest.raises(TypeError, match="multiple values for 'options'"):
            traced(tf.RunOptions(), options=tf.RunOptions())
        with pytest.raises(TypeError, match="must be a list or tuple"):
            sess.make_callable(c, feed_list=c)


def test_a_callable_feeds_its_values_to_feed_list_as_zip_pairs_them():
    # TF feeds dict(zip(feed_list, values)): missing values leave the last
    # tensors unfed, extra values are not used.
    x = tf.placeholder(tf.float32, shape=[], name="x")
    y = tf.placeholder_with_default(10.0, shape=[], name="y")
    total = x + y
    with tf.Session() as sess:
        run = sess.make_callable(total, [x, y])
        assert run(1.0, 2.0) == 3.0
        assert run(1.0) == 11.0  # y keeps its default
        assert run(1.0, 2.0, 99.0) == 3.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="x"):
            run()


def test_a_callable_with_an_operation_timeout_still_times_out_its_waits():
    q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    config = tf.ConfigProto(operation_timeout_in_ms=50)
    with tf.Session(config=config) as sess:
        take = sess.make_callable(q.dequeue())
        with pytest.raises(tf.errors.DeadlineExceededError):
            take()


def test_run_accepts_options_and_run_metadata():
    a = tf.constant(1.0)
    with tf.Session() as sess:
        out = sess.run(a, options=tf.RunOptions(timeout_in_ms=10000), run_metadata=tf.RunMetadata())
    assert out == 1.0


def test_concurrent_runs_on_one_session_give_correct_results():
    p = tf.placeholder(tf.float32, shape=[3])
    y = tf.reshape(p + p, [3, 1])
    results = {}
    errors = []
    with tf.Session() as sess:

        def worker(k):
            try:
                outs = []
                for i in range(50):
                    value = np.full(3, k * 1000 + i, np.float32)
                    outs.append(np.array_equal(sess.run(y, {p: value}), 2 * value.reshape(3, 1)))
                results[k] = outs
            except Exception as e:  # noqa: BLE001 - handed back to the test thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert sorted(results) == [0, 1, 2, 3]
    assert all(all(outs) for outs in results.values())


def test_state_persists_across_runs_and_is_per_session():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as first:
        first.run(v.initializer)
        first.run(inc)
        first.run(inc)
        assert first.run(v) == 2.0
        with tf.Session() as second:
            second.run(v.initializer)
            assert second.run(v) == 0.0
        assert first.run(v) == 2.0
