"""Specification tests for ``tf.get_variable`` and ``tf.variable_scope`` (TF 1.15 rules)."""

import inspect

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _initializer(name):
    """An initializer from tf.*, or from minitf.ops.state.init_ops before it is exported."""
    fn = getattr(tf, name, None)
    if fn is None:
        from minitf.ops.state import init_ops

        fn = getattr(init_ops, name)
    return fn


def _const_init(value):
    return _initializer("constant_initializer")(value)


def _scope_name(name=None):
    """The name scope that a name_scope opened here would get."""
    with tf.name_scope(name or "probe") as scope:
        return scope


# -- names --------------------------------------------------------------------------------


def test_get_variable_full_names_under_nested_scopes():
    with tf.variable_scope("root"):
        with tf.variable_scope("towerA"):
            va = tf.get_variable("v", [1])
        with tf.variable_scope("foo"):
            with tf.variable_scope("bar"):
                vb = tf.get_variable("v", [1])
    top = tf.get_variable("v", [1])
    assert va.name == "root/towerA/v:0"
    assert vb.name == "root/foo/bar/v:0"
    assert top.name == "v:0"
    assert va.op.type == "VariableV2"


def test_scope_name_and_name_scope_of_ops():
    with tf.variable_scope("tower4") as tower:
        assert tower.name == "tower4"
        assert _scope_name("scope") == "tower4/scope/"
    with tf.variable_scope("tower5"):
        with tf.variable_scope("bar") as bar:
            assert bar.name == "tower5/bar"
            assert _scope_name("scope") == "tower5/bar/scope/"


def test_reopened_scope_gets_a_new_name_scope_but_keeps_variable_names():
    with tf.variable_scope("foo"):
        v = tf.get_variable("v", [1])
        c1 = tf.constant(1.0, name="c")
    with tf.variable_scope("foo", reuse=True):
        v2 = tf.get_variable("v", [1])
        c2 = tf.constant(1.0, name="c")
    assert v2 is v
    assert v.name == "foo/v:0"
    assert c1.name == "foo/c:0"
    assert c2.name == "foo_1/c:0"


def test_get_variable_ignores_the_name_scope():
    with tf.name_scope("ns"):
        v = tf.get_variable("v", [1])
        c = tf.constant(1.0, name="c")
    assert v.name == "v:0"
    assert c.name == "ns/c:0"


def test_variable_scope_inside_name_scope():
    with tf.name_scope("outer_ns"):
        with tf.variable_scope("tower"):
            v = tf.get_variable("w", [])
            assert _scope_name("scope2") == "outer_ns/tower/scope2/"
    assert v.name == "tower/w:0"


def test_reentering_a_scope_object_acts_like_another_scope_of_that_name():
    # TF 1.15 variable_scope_test.testVarScopeNameScope.
    with tf.name_scope("ns1"):
        with tf.variable_scope("tower") as tower:
            assert _scope_name("scope2") == "ns1/tower/scope2/"
        with tf.variable_scope(tower):
            assert _scope_name("scope2") == "ns1/tower_1/scope2/"
        with tf.variable_scope("tower"):
            assert _scope_name("scope2") == "ns1/tower_2/scope2/"


def test_reentering_a_scope_object_keeps_its_variable_scope_and_original_name_scope():
    # TF 1.15 variable_scope_test.testVarScopeOriginalNameScope / testVarScope.
    with tf.name_scope("scope1"):
        with tf.variable_scope("tower") as tower:
            assert tower.original_name_scope == "scope1/tower/"
    with tf.name_scope("scope2"):
        with tf.variable_scope(tower) as tower1:
            assert tower1.name == "tower"
            assert tower1.original_name_scope == "scope1/tower/"
            assert _scope_name("foo") == "scope2/tower/foo/"
            assert tf.get_variable("w", []).name == "tower/w:0"


def test_reentering_an_outer_scope_object_inside_another_scope():
    with tf.variable_scope("tower4") as tower:
        pass
    with tf.variable_scope("tower6"):
        with tf.variable_scope(tower, reuse=True) as shared:
            assert shared.name == "tower4"
            assert _scope_name("scope") == "tower6/tower4/scope/"


def test_reentering_root_scope():
    root = tf.get_variable_scope()
    with tf.name_scope("ns3"):
        with tf.variable_scope(root):
            assert _scope_name("scope2") == "ns3/scope2/"
            assert tf.get_variable("w", []).name == "w:0"


def test_auxiliary_name_scope_false_opens_no_name_scope():
    with tf.variable_scope("scope", auxiliary_name_scope=False) as scope:
        assert scope.original_name_scope == ""
        assert tf.get_variable("w", []).name == "scope/w:0"
        assert tf.constant([], name="c").name == "c:0"


# -- default_name uniquification -----------------------------------------------------------


def test_default_name_is_uniquified():
    with tf.variable_scope(None, default_name="default"):
        a = tf.get_variable("w", [])
    with tf.variable_scope(None, default_name="default"):
        b = tf.get_variable("w", [])
    assert (a.name, b.name) == ("default/w:0", "default_1/w:0")


def test_default_name_counts_scopes_opened_by_name():
    with tf.variable_scope("layer"):
        pass
    with tf.variable_scope(None, default_name="layer") as scope:
        assert scope.name == "layer_1"


def test_default_names_with_interleaved_substring_scopes():
    # TF 1.15 variable_scope_test.testVarOpScopeUniqueNamesInterleavedSubstringScopes.
    names = []
    for default in ("defaultScope1", "defaultScope1", "defaultScope", "defaultScope1"):
        with tf.variable_scope(None, default):
            with tf.variable_scope(None, "layer"):
                names.append(tf.get_variable("w", []).name)
    assert names == [
        "defaultScope1/layer/w:0",
        "defaultScope1_1/layer/w:0",
        "defaultScope/layer/w:0",
        "defaultScope1_2/layer/w:0",
    ]


def test_default_names_restart_when_the_parent_scope_is_reentered():
    # TF 1.15 variable_scope_test.testVarOpScopeReuse: the second pass over "outer"
    # finds the same default-named sub-scope, which is what makes reuse work.
    with tf.variable_scope("outer") as outer:
        with tf.variable_scope(None, "default"):
            w = tf.get_variable("w", [])
    with tf.variable_scope(outer, reuse=True):
        with tf.variable_scope(None, "default"):
            w2 = tf.get_variable("w", [])
    assert w.name == "outer/default/w:0"
    assert w2 is w


def test_default_name_with_reuse_true_raises_valueerror():
    with pytest.raises(ValueError):
        with tf.variable_scope(None, "default", reuse=True):
            pass


def test_variable_scope_needs_a_name_or_default_name():
    with pytest.raises(ValueError):
        with tf.variable_scope(None):
            pass


def test_variable_scope_rejects_other_name_types():
    with pytest.raises(TypeError):
        with tf.variable_scope(3):
            pass


# -- reuse ---------------------------------------------------------------------------------


def test_creating_an_existing_variable_without_reuse_raises_valueerror():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [1])
    with tf.variable_scope("foo"):
        with pytest.raises(ValueError) as info:
            tf.get_variable("v", [1])
    assert str(info.value).startswith(
        "Variable foo/v already exists, disallowed. Did you mean to set reuse=True or "
        "reuse=tf.AUTO_REUSE in VarScope?"
    )


def test_reusing_a_missing_variable_raises_valueerror():
    with tf.variable_scope("foo", reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("missing", [1])
    assert str(info.value) == (
        "Variable foo/missing does not exist, or was not created with tf.get_variable(). "
        "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
    )


def test_reuse_returns_the_same_object():
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [2])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("v", [2]) is v
        assert tf.get_variable("v") is v


def test_tf_variable_is_not_visible_to_get_variable():
    with tf.variable_scope("s"):
        tf.Variable(1.0, name="v")
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("v", [])


def test_auto_reuse_creates_then_reuses():
    def make():
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            return tf.get_variable("v", [1])

    v1 = make()
    v2 = make()
    assert v1 is v2
    assert v1.name == "auto/v:0"
    assert len(tf.global_variables()) == 1


def test_reuse_variables_switches_the_current_scope():
    with tf.variable_scope("s") as scope:
        v = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert scope.reuse is True
        assert tf.get_variable("v", [1]) is v
        with pytest.raises(ValueError):
            tf.get_variable("w", [1])


def test_get_variable_scope_reuse_variables():
    with tf.variable_scope("bar"):
        tf.get_variable("v", [])
        tf.get_variable_scope().reuse_variables()
        with pytest.raises(ValueError):
            tf.get_variable("w", [1])
    assert tf.get_variable_scope().reuse is False


def test_reuse_is_inherited_by_sub_scopes_and_cannot_be_undone():
    with tf.variable_scope("a"):
        with tf.variable_scope("b"):
            v = tf.get_variable("v", [])
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope("b") as b:
            assert b.reuse is True
            assert tf.get_variable("v", []) is v
        with tf.variable_scope("b", reuse=False) as b2:
            assert b2.reuse is True


def test_scope_object_reuse_rules():
    # TF 1.15 variable_scope_test.testVarScopeObjectReuse.
    with tf.variable_scope("jump", reuse=True) as scope:
        vs = scope
    with tf.variable_scope(vs) as jump:
        assert jump.reuse
    with tf.variable_scope(vs, reuse=False) as jump_no_reuse:
        assert jump_no_reuse.reuse
    with tf.variable_scope("jump2", reuse=False) as scope:
        vs = scope
    with tf.variable_scope(vs) as jump:
        assert not jump.reuse
    with tf.variable_scope(vs, reuse=True) as jump_reuse:
        assert jump_reuse.reuse


def test_shape_mismatch_on_reuse_raises_valueerror():
    with tf.variable_scope("s"):
        tf.get_variable("v", [1])
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("v", [2])
    message = str(info.value)
    assert message.startswith("Trying to share variable s/v, but specified shape")
    assert "and found shape" in message


def test_dtype_mismatch_on_reuse_raises_valueerror():
    with tf.variable_scope("s"):
        tf.get_variable("v", [1])
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(
            ValueError, match="Trying to share variable s/v, but specified dtype int32"
        ):
            tf.get_variable("v", [1], dtype=tf.int32)


def test_dtype_mismatch_message_names_the_found_ref_dtype():
    # TF formats found_var.dtype.name, which is "float32_ref" for a ref variable.
    tf.get_variable("v", [1])
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("v", [1], dtype=tf.int32)
    assert str(info.value) == (
        "Trying to share variable v, but specified dtype int32 and found dtype float32_ref."
    )


# -- initializers and dtypes -----------------------------------------------------------------


def test_constant_tensor_initializer_with_shape_raises_valueerror():
    init = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("u", [2], initializer=init)


def test_tensor_initializer_gives_shape_and_dtype():
    v = tf.get_variable("v", initializer=tf.constant([1, 2, 3]))
    assert v.dtype.base_dtype == tf.int32
    assert v.shape.as_list() == [3]
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3])


def test_python_value_initializer_with_dtype():
    v = tf.get_variable("v4", initializer=4, dtype=tf.int32)
    w = tf.get_variable("w4", initializer=np.array([1, 2, 3]), dtype=tf.int64)
    assert w.dtype.base_dtype == tf.int64
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v) == 4
        np.testing.assert_array_equal(sess.run(w), [1, 2, 3])


def test_tensor_initializer_dtype_must_match_explicit_dtype():
    init = tf.constant(1, dtype=tf.int32)
    with pytest.raises(ValueError, match="don't match"):
        tf.get_variable("s", initializer=init, dtype=tf.float64)


def test_new_variable_needs_a_fully_defined_shape():
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("v", [None, 2])
    with pytest.raises(ValueError):
        tf.get_variable("w")


def test_explicit_callable_initializer():
    v = tf.get_variable("v", [2, 3], initializer=_const_init(0.5))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), np.full((2, 3), 0.5, np.float32))


def test_initializer_callable_receives_shape_and_dtype():
    seen = {}

    def init(shape, dtype=None, partition_info=None):
        seen.update(shape=list(shape), dtype=dtype, partition_info=partition_info)
        return tf.constant(np.arange(6, dtype=np.float64).reshape(2, 3))

    v = tf.get_variable("v", [2, 3], dtype=tf.float64, initializer=init)
    assert seen == {"shape": [2, 3], "dtype": tf.float64, "partition_info": None}
    assert v.dtype == tf.float64_ref


def test_default_initializer_is_glorot_uniform_for_floats():
    fan_in, fan_out = 20, 30
    v = tf.get_variable("w", [fan_in, fan_out])
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    with tf.Session() as sess:
        sess.run(v.initializer)
        value = sess.run(v)
    assert value.dtype == np.float32
    assert np.all(np.abs(value) <= limit)
    # A uniform draw over [-limit, limit] spreads over the interval.
    assert value.max() > 0.8 * limit and value.min() < -0.8 * limit
    assert abs(value.std() - limit / np.sqrt(3.0)) < 0.1 * limit


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.bool])
def test_default_initializer_is_zeros_for_ints_and_bools(dtype):
    v = tf.get_variable("v", [3, 4], dtype=dtype)
    with tf.Session() as sess:
        sess.run(v.initializer)
        value = sess.run(v)
    np.testing.assert_array_equal(value, np.zeros((3, 4), dtype=dtype.as_numpy_dtype))


def test_get_variable_with_ref_dtype():
    v = tf.get_variable("v", shape=[3, 4], dtype=tf.float32)
    w = tf.get_variable("w", shape=[5, 6], dtype=v.dtype)
    assert w.dtype == tf.float32_ref


def test_scope_initializer_is_inherited_and_restored():
    init = _const_init(0.3)
    with tf.variable_scope("tower0") as tower:
        with tf.variable_scope("foo", initializer=init):
            v = tf.get_variable("v", [])
            with tf.variable_scope("child"):
                c = tf.get_variable("c", [])
        with tf.variable_scope(tower, initializer=init):
            w = tf.get_variable("w", [])
    with tf.variable_scope("bar"):
        assert tf.get_variable_scope().initializer is None
        tf.get_variable_scope().set_initializer(init)
        u = tf.get_variable("u", [])
    assert tf.get_variable_scope().initializer is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for var in (v, c, w, u):
            np.testing.assert_allclose(sess.run(var), 0.3)


def test_scope_dtype_default():
    with tf.variable_scope("tower2") as tower:
        with tf.variable_scope("foo", dtype=tf.float16):
            v = tf.get_variable("v", [], initializer=_const_init(1.0))
        with tf.variable_scope(tower, dtype=tf.float64):
            w = tf.get_variable("w", [], initializer=_const_init(1.0))
    assert v.dtype.base_dtype == tf.float16
    assert w.dtype.base_dtype == tf.float64


def test_scope_use_resource_default():
    with tf.variable_scope("r", use_resource=True):
        v = tf.get_variable("v", [], initializer=_const_init(1.0))
    assert v.op.type == "VarHandleOp"
    assert v.dtype == tf.float32


# -- collections, local variables, regularizers -----------------------------------------------


def test_trainable_and_collections_arguments():
    a = tf.get_variable("a", [])
    b = tf.get_variable("b", [], trainable=False)
    c = tf.get_variable("c", [], collections=["mine"])
    assert tf.global_variables() == [a, b]
    assert tf.trainable_variables() == [a, c]
    assert tf.get_collection("mine") == [c]


def test_get_local_variable():
    with tf.variable_scope("outer") as outer:
        with tf.variable_scope(outer, "default", []):
            local = tf.get_local_variable("w", [], collections=["foo"])
    assert local.name == "outer/w:0"
    assert local in tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES)
    assert local in tf.get_collection("foo")
    assert local not in tf.trainable_variables()
    assert local not in tf.global_variables()
    with tf.variable_scope(outer, "default", reuse=True):
        assert tf.get_local_variable("w", []) is local


def test_get_local_variable_has_the_signature_of_get_variable():
    params = list(inspect.signature(tf.get_variable).parameters)
    local_params = list(inspect.signature(tf.get_local_variable).parameters)
    assert local_params == params


def test_regularizer_adds_to_regularization_losses():
    def reg(v):
        return v + 0.1

    with tf.variable_scope("tower3", regularizer=reg):
        tf.get_variable("v", [], initializer=_const_init(0.3))
        tf.get_variable("x", [], initializer=_const_init(0.3), regularizer=tf.no_regularizer)
    tf.get_variable("w", [], initializer=_const_init(0.5), regularizer=reg)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert losses[0].op.name.startswith("tower3/v/Regularizer/")
    with tf.variable_scope("tower3", reuse=True):
        tf.get_variable("v", [])
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(losses), [0.4, 0.6], rtol=1e-6)


# -- custom getters --------------------------------------------------------------------------


def test_custom_getter_must_be_callable():
    with pytest.raises(ValueError, match="not callable"):
        with tf.variable_scope("scope0", custom_getter=3):
            tf.get_variable("name0", [])
    with pytest.raises(ValueError, match="not callable"):
        tf.get_variable("name1", [], custom_getter=3)


def test_custom_getter_receives_getter_name_and_keywords():
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append((name, args, kwargs))
        return getter(name, *args, **kwargs)

    with tf.variable_scope("scope", custom_getter=getter):
        v = tf.get_variable("v", [1], trainable=False, collections=["mine"])
    assert v.name == "scope/v:0"
    (name, args, kwargs) = calls[0]
    assert name == "scope/v"
    assert args == ()
    assert kwargs["shape"] == [1] or list(kwargs["shape"]) == [1]
    assert kwargs["trainable"] is False
    assert kwargs["collections"] == ["mine"]
    assert kwargs["reuse"] is False
    assert kwargs["dtype"] == tf.float32
    for key in ("initializer", "regularizer", "caching_device", "partitioner",
                "validate_shape", "use_resource", "constraint"):  # fmt: skip
        assert key in kwargs


def test_custom_getter_is_called_with_keyword_arguments_only():
    # TF calls custom_getter(**custom_getter_kwargs): getter and name are keywords too,
    # and synchronization/aggregation are passed along.
    seen = {}

    def getter(**kwargs):
        seen.update(kwargs)
        true_getter = kwargs.pop("getter")
        return true_getter(**kwargs)

    with tf.variable_scope("scope", custom_getter=getter):
        v = tf.get_variable("v", [1])
    assert v.name == "scope/v:0"
    assert seen["name"] == "scope/v"
    assert "synchronization" in seen and "aggregation" in seen


def test_custom_getter_sees_reuse():
    def getter(getter, *args, **kwargs):
        var = getter(*args, **kwargs)
        return tf.identity(var, name="reused" if kwargs["reuse"] else "not_reused")

    with tf.variable_scope("scope", custom_getter=getter) as scope:
        v = tf.get_variable("v", [1])
    with tf.variable_scope(scope, reuse=True):
        v2 = tf.get_variable("v", [1])
    assert v.name == "not_reused:0"
    assert v2.name == "reused:0"


def test_custom_getter_can_change_collections_and_device():
    def getter(getter, name, *args, **kwargs):
        kwargs["collections"] = ["moved"]
        kwargs["trainable"] = False
        with tf.device("/job:ps/task:1"):
            return getter(name, *args, **kwargs)

    with tf.variable_scope("s", custom_getter=getter):
        v = tf.get_variable("v", [2])
    assert tf.get_collection("moved") == [v]
    assert tf.global_variables() == []
    assert tf.trainable_variables() == []
    assert tf.DeviceSpec.from_string(v.device) == tf.DeviceSpec.from_string("/job:ps/task:1")


def test_identity_custom_getter_has_no_side_effects():
    called = [0]

    def getter(getter, *args, **kwargs):
        called[0] += 1
        return getter(*args, **kwargs)

    with tf.variable_scope("scope", custom_getter=getter) as scope:
        v = tf.get_variable("v", [1])
    with tf.variable_scope(scope, reuse=True):
        v2 = tf.get_variable("v", [1])
    with tf.variable_scope("new_scope") as new_scope:
        v3 = tf.get_variable("v3", [1])
    with tf.variable_scope(new_scope, reuse=True, custom_getter=getter):
        v4 = tf.get_variable("v3", [1])
    assert v is v2 and v3 is v4
    assert called[0] == 3


def test_getter_that_creates_two_variables_and_sums_them():
    def getter(getter, name, *args, **kwargs):
        g0 = getter(f"{name}/0", *args, **kwargs)
        g1 = getter(f"{name}/1", *args, **kwargs)
        with tf.name_scope("custom_getter"):
            return g0 + g1

    with tf.variable_scope("scope", custom_getter=getter):
        v = tf.get_variable("v", [1, 2, 3])
    assert v.shape.as_list() == [1, 2, 3]
    names = [var.name for var in tf.trainable_variables()]
    assert names == ["scope/v/0:0", "scope/v/1:0"]
    assert v.name == "custom_getter/add:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        parts, total = sess.run([tf.trainable_variables(), v])
    np.testing.assert_allclose(total, parts[0] + parts[1], rtol=1e-6)


def test_nested_custom_getters_compose_inner_wrapping_outer():
    calls = []

    def tagging(tag):
        def getter(getter, name, *args, **kwargs):
            calls.append(tag)
            return getter(f"{name}/{tag}", *args, **kwargs)

        return getter

    with tf.variable_scope("a", custom_getter=tagging("outer")):
        with tf.variable_scope("b", custom_getter=tagging("inner")):
            v = tf.get_variable("v", [])
    assert calls == ["inner", "outer"]
    assert v.name == "a/b/v/inner/outer:0"


def test_get_variable_custom_getter_replaces_the_scope_getter():
    # TF 1.15 VariableScope.get_variable: "if custom_getter is None: custom_getter =
    # self._custom_getter"; an explicit getter is used instead of the scope's.
    calls = []

    def tagging(tag):
        def getter(getter, name, *args, **kwargs):
            calls.append(tag)
            return getter(name, *args, **kwargs)

        return getter

    with tf.variable_scope("a", custom_getter=tagging("scope")):
        tf.get_variable("v", [], custom_getter=tagging("argument"))
    assert calls == ["argument"]
