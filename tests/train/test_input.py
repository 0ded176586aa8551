"""tf.train.limit_epochs and the input producers: ports of TF's input_test.py.

Expected values are those of TF's own tests (tensorflow/python/training/
input_test.py: the order of unshuffled producers, the counts of epochs, the
OutOfRangeError at the end) and the names TF 1.x gives the ops (read from
TF's graph for the same calls). The queue runners run in real threads,
started by ``tf.train.start_queue_runners``; every join is bounded and
nothing sleeps.
"""

import collections
import itertools

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0  # seconds: a bound for threads that end at once on a healthy run


def join_all(threads) -> None:
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads), "a queue runner thread did not end"


def start(sess, coord=None):
    """Initializes global and local variables and starts the queue runners."""
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    return tf.train.start_queue_runners(sess, coord)


def assert_queue_gives_then_ends(queue, expected) -> None:
    """Runs the runners; one dequeue_many gives ``expected``, then a dequeue is out of range."""
    dequeue_many = queue.dequeue_many(len(expected))
    dequeue = queue.dequeue()
    with tf.Session() as sess:
        threads = start(sess)
        np.testing.assert_array_equal(sess.run(dequeue_many), expected)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(dequeue)
        join_all(threads)


def assert_each_epoch_is_a_permutation_and_all_are_equally_likely(
    epoch_key, last_fetch, permutations, num_epochs
) -> None:
    """Runs the runners; ``epoch_key(sess)`` reads one epoch, which must be one of ``permutations``.

    Then the next ``last_fetch`` is out of range, and TF's uniformity check holds.
    """
    frequency = collections.Counter({key: 0 for key in permutations})
    with tf.Session() as sess:
        threads = start(sess)
        for _ in range(num_epochs):
            key = epoch_key(sess)
            assert key in frequency  # the order changes within an epoch only
            frequency[key] += 1
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(last_fetch)
        join_all(threads)
    assert_about_uniform(frequency, num_epochs)


def assert_about_uniform(frequency, trials):
    """TF's check: every outcome within 40% of its expected count."""
    expected = trials / len(frequency)
    for key, count in frequency.items():
        assert expected * 0.6 < count < expected * 1.4, (key, dict(frequency))


# -- limit_epochs ---------------------------------------------------------------------------


def test_limit_epochs_without_a_limit_is_the_tensor_itself():
    seven = tf.constant(7)
    assert tf.train.limit_epochs(seven) is seven
    with tf.Session() as sess:
        assert [sess.run(seven) for _ in range(20)] == [7] * 20


def test_limit_epochs_gives_the_tensor_n_times_then_out_of_range():
    love_me = tf.constant("Love Me")
    love_me_two_times = tf.train.limit_epochs(love_me, num_epochs=2)
    assert love_me_two_times.op.name == "limit_epochs"
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(love_me_two_times) == b"Love Me"
        assert sess.run(love_me_two_times) == b"Love Me"
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(love_me_two_times)


def test_limit_epochs_counts_in_a_local_variable_that_must_be_initialized():
    limited = tf.train.limit_epochs(tf.constant(1), num_epochs=3)
    (epochs,) = tf.local_variables()
    assert epochs.op.name == "limit_epochs/epochs" and epochs.dtype == tf.int64_ref
    assert epochs not in tf.global_variables() and epochs not in tf.trainable_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())  # not enough: epochs is local
        with pytest.raises(tf.errors.FailedPreconditionError, match="limit_epochs/epochs"):
            sess.run(limited)


@pytest.mark.parametrize("num_epochs", [0, -1])
def test_limit_epochs_needs_a_positive_count(num_epochs):
    with pytest.raises(ValueError, match=f"num_epochs must be > 0 not {num_epochs}."):
        tf.train.limit_epochs(tf.constant(1), num_epochs)


# -- input_producer -------------------------------------------------------------------------


def test_input_producer_without_shuffle_gives_the_rows_num_epochs_times():
    input_tensor = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    queue = tf.train.input_producer(input_tensor, num_epochs=2, shuffle=False)
    assert_queue_gives_then_ends(queue, input_tensor * 2)


def test_input_producer_takes_the_row_shape_from_element_shape():
    input_value = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    input_tensor = tf.placeholder_with_default(input_value, shape=None)
    queue = tf.train.input_producer(input_tensor, element_shape=[4], num_epochs=2, shuffle=False)
    assert queue.shapes == [tf.TensorShape([4])]
    assert_queue_gives_then_ends(queue, input_value * 2)


def test_input_producer_needs_a_fully_defined_row_shape():
    with pytest.raises(ValueError, match="fully defined shape or `element_shape` must be"):
        tf.train.input_producer(tf.placeholder(tf.float32, None))
    with pytest.raises(ValueError, match="fully defined shape"):
        tf.train.input_producer(tf.placeholder(tf.float32, [None, None]))


def test_input_producer_ops_have_tf_names_and_its_runner_is_collected():
    queue = tf.train.input_producer([[1, 2], [3, 4]], num_epochs=2)
    assert queue.name == "input_producer/FIFOQueueV2"
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert runner.queue is queue
    assert [op.name for op in runner.enqueue_ops] == ["input_producer/FIFOQueueV2_EnqueueMany"]
    assert runner.close_op.name == "input_producer/FIFOQueueV2_Close"
    assert runner.cancel_op.name == "input_producer/FIFOQueueV2_Close_1"
    types = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert types["input_producer/RandomShuffle"] == "RandomShuffle"
    assert types["input_producer/limit_epochs/CountUpTo"] == "CountUpTo"
    assert types["input_producer/limit_epochs/epochs"] == "VariableV2"


def test_input_producer_runs_its_cancel_op_on_a_stop_request():
    # The cancel op given counts its runs and closes the queue (found by its
    # shared name), so that an enqueue waiting on the full queue ends too.
    cancelled = tf.Variable(0, name="cancelled")
    twin = tf.FIFOQueue(32, tf.int32, shapes=[[1]], shared_name="rows")
    cancel_op = tf.group(tf.assign_add(cancelled, 1), twin.close(cancel_pending_enqueues=True))
    queue = tf.train.input_producer([[1]], shared_name="rows", cancel_op=cancel_op)
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert runner.cancel_op is cancel_op
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = start(sess, coord)
        assert sess.run(queue.dequeue()).tolist() == [1]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)
        assert sess.run(cancelled) == 1
        assert sess.run(queue.is_closed())


# -- string_input_producer ------------------------------------------------------------------


def test_string_input_producer_without_shuffle_repeats_the_strings_in_order():
    strings = [b"to", b"be", b"or", b"not", b"to", b"be"]
    queue = tf.train.string_input_producer(strings, num_epochs=3, shuffle=False)
    assert_queue_gives_then_ends(queue, strings * 3)


def test_string_input_producer_shuffles_within_each_epoch_evenly():
    strings = [b"a", b"b", b"c"]
    num_epochs = 600
    queue = tf.train.string_input_producer(
        strings, num_epochs=num_epochs, shuffle=True, seed=271828
    )
    dequeue_many = queue.dequeue_many(len(strings))
    assert_each_epoch_is_a_permutation_and_all_are_equally_likely(
        lambda sess: b"".join(sess.run(dequeue_many)),
        queue.dequeue(),
        [b"".join(p) for p in itertools.permutations(strings)],
        num_epochs,
    )


def test_string_input_producer_refuses_an_empty_python_list():
    with pytest.raises(ValueError, match="string_input_producer requires a non-null input tensor"):
        tf.train.string_input_producer([])


def test_string_input_producer_of_an_empty_tensor_fails_its_runner_and_closes_the_queue():
    # TF's testNullString: the Assert fails in the runner's thread, the
    # coordinator stops, the cancel op closes the queue, the dequeue is out of range.
    queue = tf.train.string_input_producer(tf.constant([], dtype=tf.string))
    dequeue = queue.dequeue()
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = start(sess, coord)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(dequeue)
        with pytest.raises(tf.errors.InvalidArgumentError, match="requires a non-null input"):
            coord.join(threads, stop_grace_period_secs=WAIT)


def test_string_input_producer_names_its_queue_input_producer_and_shares_it():
    queue = tf.train.string_input_producer([b"a"], shared_name="SHARED_NAME_XYZ", name="Q")
    assert queue.name == "Q"
    assert queue.queue_ref.op.get_attr("shared_name") == "SHARED_NAME_XYZ"
    assert tf.train.string_input_producer([b"a"]).name == "input_producer"
    types = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert types["input_producer/Assert/Assert"] == "Assert"  # TF's run-time check
    assert types["input_producer/Identity"] == "Identity"
    assert tf.train.string_input_producer([b"a"], capacity=7).queue_ref.op.get_attr("capacity") == 7


def test_string_input_producer_serves_dequeues_built_while_it_runs():
    # TF's testConstructionRace: new dequeue ops are added while the runner runs.
    strings = [b"to", b"be", b"or", b"not", b"to", b"be"]
    queue = tf.train.string_input_producer(strings, shuffle=False)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for _ in range(2):
            for string in strings:
                assert sess.run(queue.dequeue()) == string
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)


# -- range_input_producer -------------------------------------------------------------------


def test_range_input_producer_without_shuffle_counts_up_each_epoch():
    queue = tf.train.range_input_producer(5, num_epochs=3, shuffle=False)
    assert_queue_gives_then_ends(queue, list(range(5)) * 3)


def test_range_input_producer_shuffles_within_each_epoch_evenly():
    num_epochs = 200
    queue = tf.train.range_input_producer(2, num_epochs=num_epochs, shuffle=True, seed=314159)
    dequeue_many = queue.dequeue_many(2)
    assert_each_epoch_is_a_permutation_and_all_are_equally_likely(
        lambda sess: tuple(sess.run(dequeue_many).tolist()),
        queue.dequeue(),
        [(0, 1), (1, 0)],
        num_epochs,
    )


def test_range_input_producer_shared_name_and_tf_names():
    queue = tf.train.range_input_producer(5, shared_name="SHARED_NAME_XYZ", name="Q")
    assert queue.queue_ref.op.get_attr("shared_name") == "SHARED_NAME_XYZ"
    queue = tf.train.range_input_producer(5)
    assert queue.name == "input_producer"
    (_, runner) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert [op.name for op in runner.enqueue_ops] == ["input_producer/input_producer_EnqueueMany"]


def test_the_same_seed_gives_the_same_epochs_in_two_graphs():
    def first_epochs(seed):
        with tf.Graph().as_default():
            queue = tf.train.range_input_producer(10, seed=seed)
            with tf.Session() as sess:
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(sess, coord)
                got = sess.run(queue.dequeue_many(30)).tolist()
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=WAIT)
        for epoch in range(3):
            assert sorted(got[10 * epoch : 10 * epoch + 10]) == list(range(10))
        return got

    assert first_epochs(7) == first_epochs(7)
    assert first_epochs(7) != first_epochs(8)


# -- slice_input_producer -------------------------------------------------------------------


def test_slice_input_producer_without_shuffle_gives_matching_slices_in_order():
    source_strings = [b"Alpha", b"Beta", b"Delta", b"Gamma"]
    source_ints = [2, 3, 5, 7]
    slices = tf.train.slice_input_producer(
        [source_strings, source_ints], num_epochs=3, shuffle=False
    )
    with tf.Session() as sess:
        threads = start(sess)
        output = [sess.run(slices) for _ in range(len(source_strings) * 3)]
        out_strings, out_ints = zip(*output)
        assert list(out_strings) == source_strings * 3
        assert list(out_ints) == source_ints * 3
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(slices)
        join_all(threads)


def test_slice_input_producer_shuffles_whole_slices_within_each_epoch_evenly():
    num_epochs = 1200
    slices = tf.train.slice_input_producer(
        [["A", "B", "D", "G"], [7, 3, 5, 2]], num_epochs=num_epochs, shuffle=True, seed=161803
    )

    def one_epoch(sess):
        return b",".join(s + str(i).encode() for s, i in (sess.run(slices) for _ in range(4)))

    assert_each_epoch_is_a_permutation_and_all_are_equally_likely(
        one_epoch,
        slices,
        [b",".join(p) for p in itertools.permutations([b"A7", b"B3", b"D5", b"G2"])],
        num_epochs,
    )


def test_slice_input_producer_names_shapes_and_shared_name():
    slices = tf.train.slice_input_producer(
        [tf.zeros([4, 2, 3]), tf.zeros([4], tf.int32)], shared_name="SHARED_NAME_XYZ", name="sip"
    )
    assert [s.shape.as_list() for s in slices] == [[2, 3], []]
    assert [s.op.name for s in slices] == ["sip/GatherV2", "sip/GatherV2_1"]
    dequeue = slices[0].op.inputs[1].op
    assert dequeue.name == "sip/input_producer_Dequeue"
    queue_op = dequeue.inputs[0].op
    assert queue_op.name == "sip/input_producer"
    assert queue_op.get_attr("shared_name") == "SHARED_NAME_XYZ"


def test_slice_input_producer_needs_a_tensor():
    with pytest.raises(ValueError, match="Expected at least one tensor in slice_input_producer"):
        tf.train.slice_input_producer([])


def fraction_of(summary_tensor, sess) -> dict:
    """The tags and values of a scalar summary, read from its serialized Summary."""
    summary = tf.Summary.FromString(sess.run(summary_tensor))
    return {v.tag: v.simple_value for v in summary.value}


@pytest.mark.parametrize(
    "make",
    [
        lambda: tf.train.string_input_producer(["a", "b", "c"], shuffle=False),
        lambda: tf.train.range_input_producer(3, shuffle=False),
    ],  # fmt: skip
)
def test_producers_add_tfs_fullness_summary_of_size_over_capacity(make):
    make()
    (summary,) = tf.get_collection(tf.GraphKeys.SUMMARIES)
    assert summary.op.name == "input_producer/fraction_of_32_full"
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    with tf.Session() as sess:
        assert fraction_of(summary, sess) == {"input_producer/fraction_of_32_full": 0.0}
        sess.run(runner.enqueue_ops[0])  # one epoch: 3 rows
        assert fraction_of(summary, sess) == {"input_producer/fraction_of_32_full": 3 / 32}


def test_input_producer_adds_a_summary_only_when_named():
    tf.train.input_producer(tf.constant([[1, 2]]), capacity=8)
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == []
    with tf.name_scope("outer"):
        tf.train.input_producer(tf.constant([[1, 2]]), capacity=8, summary_name="how_full")
    (summary,) = tf.get_collection(tf.GraphKeys.SUMMARIES)
    assert summary.op.name == "outer/input_producer/how_full"
