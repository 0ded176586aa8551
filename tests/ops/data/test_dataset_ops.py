"""Ports of TF 1.15's dataset tests (tensorflow/python/data/kernel_tests) and small cases
of the same kind: the expected values are computed with numpy from the same components,
as TF's tests do, or written out by hand (a padded batch, a range)."""

import numpy as np
import pytest

import minitf as tf


def run_all(next_element):
    """Every element ``next_element`` gives in a new session, until OutOfRangeError."""
    out = []
    with tf.Session() as sess:
        while True:
            try:
                out.append(sess.run(next_element))
            except tf.errors.OutOfRangeError:
                return out


def test_from_tensor_slices_gives_each_row_then_out_of_range():
    # from_tensor_slices_test.testFromTensorSlices
    components = (
        np.tile(np.array([[1], [2], [3], [4]]), 20),
        np.tile(np.array([[12], [13], [14], [15]]), 22),
        np.array([37.0, 38.0, 39.0, 40.0]),
    )
    dataset = tf.data.Dataset.from_tensor_slices(components)
    assert [s.as_list() for s in dataset.output_shapes] == [[20], [22], []]
    got = run_all(dataset.make_one_shot_iterator().get_next())
    assert len(got) == 4
    for i, element in enumerate(got):
        for component, value in zip(components, element):
            np.testing.assert_array_equal(component[i], value)


def test_from_tensor_slices_of_a_dict():
    # from_tensor_slices_test.testFromTensorSlicesWithDict
    components = {"foo": [1, 2, 3], "bar": [[4.0], [5.0], [6.0]]}
    dataset = tf.data.Dataset.from_tensor_slices(components)
    assert dataset.output_types == {"foo": tf.int32, "bar": tf.float32}
    assert dataset.output_shapes["foo"].as_list() == []
    assert dataset.output_shapes["bar"].as_list() == [1]
    got = run_all(tf.compat.v1.data.make_one_shot_iterator(dataset).get_next())
    assert [g["foo"] for g in got] == [1, 2, 3]
    assert [g["bar"].tolist() for g in got] == [[4.0], [5.0], [6.0]]


def test_from_tensor_slices_with_different_first_dimensions_is_refused():
    with pytest.raises(ValueError, match="Dimensions 4 and 3 are not compatible"):
        tf.data.Dataset.from_tensor_slices((np.zeros(4), np.zeros(3)))


def test_from_tensors_gives_one_element():
    # from_tensors_test.testFromTensors
    components = (np.array(1), np.array([1, 2, 3]), np.array(37.0))
    got = run_all(tf.data.Dataset.from_tensors(components).make_one_shot_iterator().get_next())
    assert len(got) == 1
    for component, value in zip(components, got[0]):
        np.testing.assert_array_equal(component, value)


def _map_batch_components():
    return (
        np.arange(7),
        np.array([[1, 2, 3]]) * np.arange(7)[:, np.newaxis],
        np.array(37.0) * np.arange(7),
    )


@pytest.mark.parametrize("count, batch_size", [(28, 14), (14, 8), (3, 7), (1, 8)])
def test_batch_of_a_mapped_repeated_dataset(count, batch_size):
    # batch_test.testBatchDataset (drop_remainder=False)
    components = _map_batch_components()
    dataset = (
        tf.data.Dataset.from_tensor_slices(components)
        .map(lambda x, y, z: (tf.square(x), tf.square(y), tf.square(z)))
        .repeat(count)
        .batch(batch_size)
    )
    assert [s.as_list() for s in dataset.output_shapes] == [[None], [None, 3], [None]]
    got = run_all(dataset.make_one_shot_iterator().get_next())
    total = 7 * count
    assert len(got) == -(-total // batch_size)
    for i, batch in enumerate(got):
        rows = [(i * batch_size + j) % 7 for j in range(min(batch_size, total - i * batch_size))]
        for component, value in zip(components, batch):
            np.testing.assert_array_equal(component[rows] ** 2, value)


def test_batch_drops_the_remainder_and_knows_the_batch_size():
    dataset = tf.data.Dataset.range(10).batch(4, drop_remainder=True)
    assert dataset.output_shapes.as_list() == [4]
    got = run_all(dataset.make_one_shot_iterator().get_next())
    assert [g.tolist() for g in got] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batch_of_elements_of_different_shapes_fails_at_run_time():
    dataset = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill(tf.expand_dims(x, 0), x))
    next_element = dataset.batch(2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors"):
            sess.run(next_element)


def test_padded_batch_pads_to_the_longest_in_each_batch():
    # padded_batch_test: elements [x] * x padded with -1
    dataset = tf.data.Dataset.range(1, 6).map(lambda x: tf.fill(tf.expand_dims(x, 0), x))
    batched = dataset.padded_batch(
        2, padded_shapes=[None], padding_values=tf.constant(-1, tf.int64)
    )
    assert batched.output_shapes.as_list() == [None, None]
    got = run_all(batched.make_one_shot_iterator().get_next())
    assert [g.tolist() for g in got] == [
        [[1, -1], [2, 2]],
        [[3, 3, 3, -1], [4, 4, 4, 4]],
        [[5, 5, 5, 5, 5]],
    ]


def test_padded_batch_to_a_fixed_shape():
    dataset = tf.data.Dataset.range(1, 3).map(lambda x: tf.fill(tf.expand_dims(x, 0), x))
    got = run_all(dataset.padded_batch(2, padded_shapes=[4]).make_one_shot_iterator().get_next())
    assert [g.tolist() for g in got] == [[[1, 0, 0, 0], [2, 2, 0, 0]]]


def test_range_take_skip_repeat():
    # range_test, take_test, skip_test, repeat_test
    def values(dataset):
        return [int(v) for v in run_all(dataset.make_one_shot_iterator().get_next())]

    assert values(tf.data.Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(tf.data.Dataset.range(2, 5)) == [2, 3, 4]
    assert values(tf.data.Dataset.range(2, 10, 3)) == [2, 5, 8]
    assert values(tf.data.Dataset.range(10, 2, -3)) == [10, 7, 4]
    assert values(tf.data.Dataset.range(10).take(3)) == [0, 1, 2]
    assert values(tf.data.Dataset.range(10).take(-1)) == list(range(10))
    assert values(tf.data.Dataset.range(10).take(0)) == []
    assert values(tf.data.Dataset.range(10).skip(7)) == [7, 8, 9]
    assert values(tf.data.Dataset.range(10).skip(-1)) == []
    assert values(tf.data.Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(tf.data.Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(tf.data.Dataset.range(3).prefetch(2)) == [0, 1, 2]


def test_zip_of_a_nest_of_datasets_stops_at_the_shortest():
    # zip_test.testZipDataset
    dataset = tf.data.Dataset.zip(
        (tf.data.Dataset.range(3), {"b": tf.data.Dataset.from_tensor_slices([4.0, 5.0])})
    )
    assert dataset.output_types == (tf.int64, {"b": tf.float32})
    got = run_all(dataset.make_one_shot_iterator().get_next())
    assert [(int(a), float(d["b"])) for a, d in got] == [(0, 4.0), (1, 5.0)]


def test_map_returning_a_dict_and_a_constant():
    # map_test: a map_func may build ops of its own and return any structure
    dataset = tf.data.Dataset.range(3).map(lambda x: {"x": x * 2, "one": tf.constant(1.0)})
    assert dataset.output_types == {"x": tf.int64, "one": tf.float32}
    got = run_all(dataset.make_one_shot_iterator().get_next())
    assert [(int(g["x"]), float(g["one"])) for g in got] == [(0, 1.0), (2, 1.0), (4, 1.0)]


def test_map_with_num_parallel_calls_keeps_the_order():
    dataset = tf.data.Dataset.range(6).map(lambda x: x + 10, num_parallel_calls=4)
    got = run_all(dataset.make_one_shot_iterator().get_next())
    assert [int(v) for v in got] == list(range(10, 16))


def _shuffled(seed, buffer_size, epochs, graph_seed=None):
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        dataset = tf.data.Dataset.range(10).shuffle(buffer_size, seed=seed).repeat(epochs)
        got = [int(v) for v in run_all(dataset.make_one_shot_iterator().get_next())]
    return [got[i * 10 : (i + 1) * 10] for i in range(epochs)]


def test_shuffle_is_a_permutation_same_for_a_seed_and_new_each_epoch():
    # shuffle_test.testShuffleDataset: same seed, same order; each epoch reshuffled
    first = _shuffled(seed=37, buffer_size=10, epochs=2)
    assert all(sorted(epoch) == list(range(10)) for epoch in first)
    assert first == _shuffled(seed=37, buffer_size=10, epochs=2)
    assert first[0] != first[1]
    assert first != _shuffled(seed=38, buffer_size=10, epochs=2)
    assert _shuffled(None, 10, 1, graph_seed=5) == _shuffled(None, 10, 1, graph_seed=5)


def test_shuffle_without_reshuffling_repeats_the_order():
    with tf.Graph().as_default():
        dataset = (
            tf.data.Dataset.range(10).shuffle(10, seed=3, reshuffle_each_iteration=False).repeat(2)
        )
        got = [int(v) for v in run_all(dataset.make_one_shot_iterator().get_next())]
    assert got[:10] == got[10:] and sorted(got[:10]) == list(range(10))


def test_shuffle_with_a_buffer_of_one_keeps_the_order():
    got = _shuffled(seed=1, buffer_size=1, epochs=1)
    assert got == [list(range(10))]


def test_a_mapped_pipeline_exports_and_imports_with_its_graph():
    # the map function's body is an attr of plain data: it exports like any attr
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.range(5).map(lambda v: v * 3 + 1)
        dataset.make_initializable_iterator().get_next()
        meta_graph = tf.train.export_meta_graph()
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta_graph)
        with tf.Session() as sess:
            sess.run(g.get_operation_by_name("MakeIterator"))
            got = [sess.run(g.get_tensor_by_name("IteratorGetNext:0")) for _ in range(5)]
    assert got == [1, 4, 7, 10, 13]


def test_initializing_again_makes_the_shuffled_dataset_anew():
    # a new ShuffleDataset per run of the initializer: its seeds start over
    dataset = tf.data.Dataset.range(10).shuffle(10, seed=7).repeat(2)
    iterator = dataset.make_initializable_iterator()
    next_element = iterator.get_next()
    orders = []
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(iterator.initializer)
            orders.append([int(sess.run(next_element)) for _ in range(20)])
    assert orders[0] == orders[1]
    assert orders[0][:10] != orders[0][10:]


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: d.batch(0), "Batch size must be greater than zero."),
        (lambda d: d.padded_batch(-1, []), "Batch size must be greater than zero."),
        (lambda d: d.shuffle(0), "buffer_size must be greater than zero."),
        (lambda d: tf.data.Dataset.range(0, 3, 0), "step must be a non-zero integer."),
    ],
)
def test_sizes_must_be_positive(make, words):
    # batch_test / shuffle_test: the dataset op fails when the initializer runs it
    iterator = make(tf.data.Dataset.range(3)).make_initializable_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=words):
            sess.run(iterator.initializer)


def test_the_pipeline_is_drawn_with_the_graph():
    from minitf.viz.dot import graph_dot

    with tf.device("/job:ps/task:0"):
        dataset = tf.data.Dataset.range(4).map(lambda v: v + 1).batch(2)
        iterator = dataset.make_initializable_iterator()
    iterator.get_next()
    dot = graph_dot(tf.get_default_graph())
    for name in ["RangeDataset", "MapDataset", "BatchDatasetV2", "Iterator", "MakeIterator"]:
        assert f'"{name}" [label="{name}' in dot
    assert '"IteratorGetNext"' in dot


def test_map_captures_tensors_of_the_outer_graph():
    # map_test: a map_func may use tensors of the pipeline's graph; a placeholder is fed
    # when the initializer runs (iterator_test's parameterized initializer)
    scale = tf.constant(3, tf.int64)
    offset = tf.placeholder(tf.int64, [])
    dataset = tf.data.Dataset.range(4).map(lambda v: (v * scale + offset, scale))
    assert list(dataset._variant_tensor.op.inputs[1:]) == [scale, offset]
    iterator = dataset.make_initializable_iterator()
    next_element = iterator.get_next()
    with tf.Session() as sess:
        for fed in (10, 100):
            sess.run(iterator.initializer, {offset: fed})
            got = [sess.run(next_element) for _ in range(4)]
            assert got == [(v * 3 + fed, 3) for v in range(4)]


def test_a_map_function_with_an_op_that_waits_is_refused():
    def dequeue_one(v):
        queue = tf.FIFOQueue(1, tf.int64, shapes=[[]])
        return v + queue.dequeue()

    iterator = tf.data.Dataset.range(2).map(dequeue_one).make_initializable_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="cannot run in a Dataset.map"):
            sess.run(iterator.initializer)
