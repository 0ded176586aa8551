"""tf.contrib.framework.arg_scope: a port of contrib's ``arg_scope_test.py``, and the
contrib layers TF decorates with ``add_arg_scope``."""

import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

framework = tf.contrib.framework
add_arg_scope = framework.add_arg_scope
arg_scope = framework.arg_scope


@add_arg_scope
def func1(*args, **kwargs):
    return (args, kwargs)


@add_arg_scope
def func2(*args, **kwargs):
    return (args, kwargs)


@add_arg_scope
def func3(args, a=None, b=1, c=2):
    """Some cool doc string."""
    return (args, a, b, c)


def _key(op):
    return op._key_op


def test_empty_arg_scope():
    with arg_scope([]) as sc:
        assert sc == {}


def test_clear_arg_scope():
    scope = {_key(func1): {"a": 1, "b": None, "c": [1]}}
    with arg_scope([func1], a=1, b=None, c=[1]) as sc1:
        assert sc1 == scope
        with arg_scope({}) as sc2:
            assert sc2 == {}
            assert func1(0) == ((0,), {})
        with arg_scope([]) as current:
            assert current == scope
    assert framework.current_arg_scope() == {}


def test_non_decorated_function_raises():
    def my_func(t, a=None):
        return (t, a)

    with pytest.raises(ValueError, match=r"my_func is not decorated with @add_arg_scope"):
        with arg_scope([my_func], a=1):
            pass
    assert not framework.has_arg_scope(my_func)
    assert framework.has_arg_scope(func3)


def test_not_a_list_or_dict_raises():
    with pytest.raises(TypeError, match="must either be a list/tuple or reused scope"):
        with arg_scope(func1, a=1):
            pass


def test_dict_with_kwargs_raises():
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with arg_scope({}, a=1):
            pass


def test_unexpected_arg_raises_type_error_at_the_call():
    with pytest.raises(TypeError):
        with arg_scope([func3], d=1):
            func3(1)


def test_arg_scoped_arguments_and_docstring():
    assert framework.arg_scoped_arguments(func3) == ("a", "b", "c")
    assert func3.__doc__ == "Some cool doc string."
    assert func3.__name__ == "func3"


def test_redefined_functions_get_their_own_arguments():
    # arg_scope_test.testAddArgScopeRaceCondition.
    for _ in range(4):

        @add_arg_scope
        def func4(a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8):
            pass

        assert framework.arg_scoped_arguments(func4) == tuple("abcdefgh")


def test_current_arg_scope_nested():
    expected = {_key(func1): {"a": 1, "b": None, "c": [1]}, _key(func2): {"b": 2, "d": [2]}}
    with arg_scope([func1], a=1, b=None, c=[1]):
        with arg_scope([func2], b=2, d=[2]) as scope:
            assert scope == expected
            assert framework.current_arg_scope() is scope


def test_reuse_arg_scope_nested():
    with arg_scope([func1], a=1, b=None, c=[1]) as scope1:
        with arg_scope([func2], b=2, d=[2]) as scope2:
            pass
    with arg_scope(scope1):
        with arg_scope([]) as current:
            assert current == {_key(func1): {"a": 1, "b": None, "c": [1]}}
    with arg_scope(scope2):
        with arg_scope([]) as current:
            assert current == {
                _key(func1): {"a": 1, "b": None, "c": [1]},
                _key(func2): {"b": 2, "d": [2]},
            }


@pytest.mark.parametrize("ops", [[func1], (func1,)])
def test_simple_arg_scope(ops):
    with arg_scope(ops, a=1, b=None, c=[1]):
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})


def test_call_kwargs_override_the_scope():
    with arg_scope([func1], a=1, b=None, c=[1]):
        assert func1(0, b=2) == ((0,), {"a": 1, "b": 2, "c": [1]})


def test_nested_arg_scope_merges_and_inner_wins():
    with arg_scope([func1], a=1, b=None, c=[1]):
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
        with arg_scope([func1], b=2):
            assert func1(0) == ((0,), {"a": 1, "b": 2, "c": [1]})
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})


def _saved_scope():
    with arg_scope([func1], a=1, b=None, c=[1]) as sc:
        return sc


def test_saved_scope_created_outside_replaces_the_current_one():
    scope = _saved_scope()
    with arg_scope([func1], b=2, d=10):
        with arg_scope(scope):
            assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})


def test_saved_scope_created_inside_inherits():
    with arg_scope([func1], b=2, d=10):
        with arg_scope(_saved_scope()):
            assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1], "d": 10})


def test_shared_and_partially_shared_arg_scope():
    with arg_scope([func1, func2], a=1, b=None):
        with arg_scope([func1], c=[1]):
            with arg_scope([func2], d=[2]):
                assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
                assert func2(1) == ((1,), {"a": 1, "b": None, "d": [2]})


def test_the_stack_is_popped_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with arg_scope([func1], a=1):
            raise RuntimeError("boom")
    assert framework.current_arg_scope() == {}


@pytest.mark.parametrize(
    "name",
    ["fully_connected", "conv2d", "convolution2d", "max_pool2d", "avg_pool2d", "dropout"],
)
def test_contrib_layers_are_decorated(name):
    layer = getattr(tf.contrib.layers, name)
    assert framework.has_arg_scope(layer)
    assert "outputs_collections" in framework.arg_scoped_arguments(layer)
    assert framework.has_arg_scope(tf.contrib.layers.flatten)
    assert framework.has_arg_scope(tf.contrib.layers.batch_norm)


def test_arg_scope_sets_layer_arguments():
    # layers_test's arg_scope cases: the scope's padding, the call's own stride.
    images = tf.zeros([2, 8, 8, 3])
    with arg_scope([tf.contrib.layers.conv2d], padding="VALID", activation_fn=None):
        with arg_scope([tf.contrib.layers.conv2d, tf.contrib.layers.max_pool2d], stride=2):
            net = tf.contrib.layers.conv2d(images, 4, [3, 3], scope="conv1")
            same = tf.contrib.layers.conv2d(images, 4, [3, 3], stride=1, padding="SAME")
            pooled = tf.contrib.layers.max_pool2d(images, [2, 2])
    assert net.get_shape().as_list() == [2, 3, 3, 4]
    assert net.op.type != "Relu"
    assert same.get_shape().as_list() == [2, 8, 8, 4]
    assert pooled.get_shape().as_list() == [2, 4, 4, 3]
    # conv2d and convolution2d are one function, so one scope entry.
    with arg_scope([tf.contrib.layers.convolution2d], num_outputs=5):
        assert tf.contrib.layers.conv2d(images, kernel_size=1).get_shape()[-1] == 5
