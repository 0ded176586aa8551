"""Specification tests for ``tf.Variable`` (ref and resource) and the variable collections."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


# -- graph structure ----------------------------------------------------------------------


def test_ref_variable_op_type_dtype_and_shape():
    v = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert v.op.type == "VariableV2"
    assert v.dtype == tf.float32_ref
    assert v.dtype.base_dtype == tf.float32
    assert v.shape.as_list() == [2, 3]
    assert v.get_shape().as_list() == [2, 3]
    assert v.op.get_attr("dtype") == tf.float32
    assert v.op.get_attr("shape").as_list() == [2, 3]


def test_default_variable_names_are_uniquified():
    a = tf.Variable(0.0)
    b = tf.Variable(1.0)
    c = tf.Variable(2.0, name="w")
    d = tf.Variable(3.0, name="w")
    assert (a.name, b.name, c.name, d.name) == ("Variable:0", "Variable_1:0", "w:0", "w_1:0")
    assert a.op.name == "Variable"


def test_variable_names_follow_name_scopes():
    with tf.name_scope("layer"):
        v = tf.Variable(1.0, name="w")
        u = tf.Variable(1.0)
    assert v.name == "layer/w:0"
    assert u.name == "layer/Variable:0"


def test_initializer_is_an_assign_colocated_with_the_variable():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    init = v.initializer
    assert init.type == "Assign"
    assert init.name == "v/Assign"
    assert init.inputs[0].op is v.op
    assert init.inputs[1] is v.initial_value
    assert init.colocation_groups() == [b"loc:@v"]
    assert init.device == v.device == v.op.device


def test_read_snapshot_is_an_identity_named_read():
    v = tf.Variable([1.0, 2.0], name="v")
    snap = v.value()
    assert snap.op.type == "Identity"
    assert snap.name == "v/read:0"
    assert snap.dtype == tf.float32
    assert snap.op.inputs[0].op is v.op


def test_converting_a_variable_gives_its_read_snapshot():
    v = tf.Variable(1.0, name="v")
    assert tf.convert_to_tensor(v) is v.value()


def test_variable_in_control_dependencies_block_does_not_get_them():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        v = tf.Variable(2.0)
    assert v.initializer.control_inputs == []
    assert v.value().op.control_inputs == []
    assert v.op.control_inputs == []


def test_assign_is_colocated_with_the_variable_under_another_device():
    # TF creates every op with a ref input colocated with that input (op_def_library).
    with tf.device("/job:ps"):
        v = tf.Variable(0, name="v")
    with tf.device("/job:worker/task:7"):
        assign = v.assign(1)
    assert assign.op.colocation_groups() == [b"loc:@v"]
    assert assign.device == v.device


def test_repr_names_tensor_shape_and_ref_dtype():
    v = tf.Variable(np.zeros((5, 5), np.float32), name="noop")
    assert repr(v) == "<tf.Variable 'noop:0' shape=(5, 5) dtype=float32_ref>"


def test_variable_is_not_iterable():
    v = tf.Variable([0.0, 1.0])
    with pytest.raises(TypeError, match="not iterable"):
        iter(v)


# -- initial values -----------------------------------------------------------------------


def test_initial_value_none_raises_valueerror():
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tf.Variable()
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tf.Variable(None)


def test_initial_value_forms_give_the_same_values():
    value = [[-42.0], [133.7]]
    from_list = tf.Variable(value)
    from_array = tf.Variable(np.array(value, dtype=np.float32))
    from_tensor = tf.Variable(tf.constant(value))
    from_callable = tf.Variable(lambda: tf.constant(value), dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in (from_list, from_array, from_tensor, from_callable):
            assert v.shape.as_list() == [2, 1]
            got = sess.run(v)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, np.array(value, dtype=np.float32))


def test_callable_initial_value_is_built_in_an_initializer_scope_colocated_with_variable():
    with tf.device("/cpu:0"):
        v = tf.Variable(lambda: tf.constant(42.0), name="v1")
    assert v.initial_value.op.name.startswith("v1/Initializer/")
    assert v.initial_value.op.colocation_groups() == [b"loc:@v1"]
    assert v.op.colocation_groups() == [b"loc:@v1"]


def test_dtype_argument_converts_python_initial_values():
    v = tf.Variable(1, dtype=tf.float32)
    w = tf.Variable([1, 2], dtype=tf.float64)
    i = tf.Variable(3)
    assert v.dtype == tf.float32_ref
    assert w.dtype == tf.float64_ref
    assert i.dtype == tf.int32_ref
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run([v, w, i])
    assert out[0].dtype == np.float32 and out[0] == 1.0
    assert out[1].dtype == np.float64
    np.testing.assert_array_equal(out[1], [1.0, 2.0])
    assert out[2].dtype == np.int32 and out[2] == 3


def test_dtype_argument_does_not_cast_a_tensor_of_another_dtype():
    with pytest.raises(ValueError):
        tf.Variable(tf.constant(1), dtype=tf.float32)


def test_initial_value_of_unknown_shape_needs_validate_shape_false():
    p = tf.placeholder(tf.float32)
    with pytest.raises(ValueError, match="shape"):
        tf.Variable(p)
    v = tf.Variable(p, validate_shape=False)
    assert v.shape.ndims is None


# -- collections ----------------------------------------------------------------------------


def test_collections_argument_must_be_a_list_tuple_or_set():
    with pytest.raises(
        ValueError,
        match="collections argument to Variable constructor must be a list, tuple, or set",
    ):
        tf.Variable(1.0, collections="my_collection")


def test_trainable_and_collection_membership():
    x = tf.Variable(2.0)
    y = tf.Variable(2.0, trainable=False)
    z = tf.Variable(2.0, trainable=True)
    t = tf.Variable(
        2.0, collections=[tf.GraphKeys.TRAINABLE_VARIABLES, tf.GraphKeys.GLOBAL_VARIABLES]
    )
    assert tf.global_variables() == [x, y, z, t]
    assert tf.trainable_variables() == [x, z, t]
    assert tf.local_variables() == []
    assert x.trainable and not y.trainable


def test_local_collection_variable_is_not_global_but_still_trainable_by_default():
    # TF adds TRAINABLE_VARIABLES whenever trainable is True, whatever `collections` says.
    v = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    w = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
    assert tf.local_variables() == [v, w]
    assert tf.global_variables() == []
    assert tf.trainable_variables() == [v]


def test_custom_collection_only():
    v = tf.Variable(1.0, collections=["mine"], trainable=False)
    assert tf.get_collection("mine") == [v]
    assert tf.global_variables() == []


def test_global_variables_scope_filter():
    with tf.name_scope("a"):
        va = tf.Variable(1.0)
    with tf.name_scope("b"):
        vb = tf.Variable(1.0)
    assert tf.global_variables("a") == [va]
    assert tf.trainable_variables("b") == [vb]


# -- initialization and reading -------------------------------------------------------------


def test_reading_an_uninitialized_variable_fails_naming_it():
    v = tf.Variable(1.0, name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(v)
    assert "Attempting to use uninitialized value weights" in str(info.value)


def test_eval_in_default_and_explicit_session():
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(v.eval(), [1.0, 2.0])
        np.testing.assert_array_equal(v.eval(session=sess), [1.0, 2.0])


def test_is_variable_initialized_before_and_after():
    v = tf.Variable(1.0)
    inited = tf.is_variable_initialized(v)
    assert inited.dtype == tf.bool
    with tf.Session() as sess:
        assert not sess.run(inited)
        sess.run(v.initializer)
        assert sess.run(inited)


def test_initialized_value_before_and_after_initialization():
    v = tf.Variable([1.0, 2.0])
    iv = v.initialized_value()
    with tf.Session() as sess:
        # TF 1.15: a cond on is_variable_initialized: the initial value, v untouched.
        np.testing.assert_array_equal(sess.run(iv), [1.0, 2.0])
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v)
        sess.run(v.initializer)
        sess.run(v.assign([5.0, 6.0]))
        np.testing.assert_array_equal(sess.run(iv), [5.0, 6.0])


def test_initialized_value_initializes_a_dependent_variable():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(v.initialized_value() + 10.0, name="w")
    assert w.shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(w), [11.0, 12.0])
        sess.run(v.initializer)
        sess.run(v.assign([3.0, 4.0]))
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(w), [13.0, 14.0])


def test_initialized_value_ignores_enclosing_control_dependencies():
    c = tf.constant(1.0)
    v = tf.Variable(2.0)
    with tf.control_dependencies([c]):
        iv = v.initialized_value()
    assert c.op not in iv.op.control_inputs


def test_read_value_is_a_new_read_that_sees_assignments():
    v = tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assign = v.assign(7.0)
        with tf.control_dependencies([assign]):
            after = v.read_value()
        assert after is not v.value()
        assert after.dtype == tf.float32
        assert sess.run(after) == 7.0


def test_load_writes_a_value_without_adding_ops():
    v = tf.Variable(np.zeros((5, 5), np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        count = len(tf.get_default_graph().get_operations())
        v.load(np.ones((5, 5), np.float32))
        assert len(tf.get_default_graph().get_operations()) == count
        np.testing.assert_array_equal(v.eval(), np.ones((5, 5), np.float32))
        v.load(np.full((5, 5), 2.0, np.float32), session=sess)
        np.testing.assert_array_equal(sess.run(v), np.full((5, 5), 2.0))


def test_load_without_a_session_raises_valueerror():
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="session"):
        v.load(2.0)


# -- assignment ----------------------------------------------------------------------------


def test_assign_methods_return_refs_that_evaluate_to_the_new_value():
    var = tf.Variable(0.0)
    plus_one = var.assign_add(1.0)
    minus_two = var.assign_sub(2.0)
    four = var.assign(4.0)
    assert plus_one.dtype == tf.float32_ref
    assert (plus_one.op.type, minus_two.op.type, four.op.type) == (
        "AssignAdd",
        "AssignSub",
        "Assign",
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(var) == 0.0
        assert sess.run(plus_one) == 1.0
        assert sess.run(var) == 1.0
        assert sess.run(minus_two) == -1.0
        assert sess.run(var) == -1.0
        assert sess.run(four) == 4.0
        assert sess.run(var) == 4.0


def test_assign_functions_match_the_methods():
    var = tf.Variable([1, 2, 3])
    with tf.Session() as sess:
        sess.run(var.initializer)
        np.testing.assert_array_equal(sess.run(tf.assign(var, [4, 5, 6])), [4, 5, 6])
        np.testing.assert_array_equal(sess.run(tf.assign_add(var, [1, 1, 1])), [5, 6, 7])
        np.testing.assert_array_equal(sess.run(tf.assign_sub(var, [5, 5, 5])), [0, 1, 2])
        np.testing.assert_array_equal(sess.run(var), [0, 1, 2])


def test_assign_add_accumulates_across_runs():
    var = tf.Variable(np.float32(0.5))
    inc = var.assign_add(0.25)
    with tf.Session() as sess:
        sess.run(var.initializer)
        for _ in range(4):
            sess.run(inc)
        assert sess.run(var) == np.float32(1.5)


def test_assign_read_value_false_returns_the_op():
    var = tf.Variable(1.0)
    op = var.assign(2.0, read_value=False)
    assert isinstance(op, tf.Operation)
    assert op.type == "Assign"


def test_assign_with_name():
    var = tf.Variable(1.0)
    assert var.assign(2.0, name="set_two").op.name == "set_two"


def test_static_shape_mismatch_in_assign_raises_valueerror_naming_shapes():
    var = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError) as info:
        var.assign([1.0, 2.0, 3.0])
    message = str(info.value)
    assert ("[2]" in message or "(2,)" in message) and ("[3]" in message or "(3,)" in message)


def test_runtime_shape_mismatch_in_assign_raises_invalidargumenterror():
    var = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.float32, [None])
    assign = tf.assign(var, p)
    with tf.Session() as sess:
        sess.run(var.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(assign, {p: [1.0, 2.0, 3.0]})
        assert "Assign requires shapes of both tensors to match. lhs shape= [2] rhs shape= [3]" in (
            str(info.value)
        )
        np.testing.assert_array_equal(sess.run(var), [1.0, 2.0])


def test_validate_shape_false_allows_the_shape_to_change():
    var = tf.Variable([1.0, 2.0], validate_shape=False)
    assert var.shape.ndims is None
    grow = tf.assign(var, [1.0, 2.0, 3.0], validate_shape=False)
    with tf.Session() as sess:
        sess.run(var.initializer)
        np.testing.assert_array_equal(sess.run(var), [1.0, 2.0])
        sess.run(grow)
        np.testing.assert_array_equal(sess.run(var), [1.0, 2.0, 3.0])


def test_assign_converts_python_values_to_the_variable_dtype():
    var = tf.Variable(0.0)
    with tf.Session() as sess:
        sess.run(var.initializer)
        sess.run(var.assign(3))
        out = sess.run(var)
    assert out.dtype == np.float32 and out == 3.0


def test_assign_of_a_tensor_with_another_dtype_raises_typeerror():
    # TF's op_def_library turns the conversion failure into a TypeError naming the input.
    var = tf.Variable(0.0)
    with pytest.raises(
        TypeError,
        match="Input 'value' of 'Assign' Op has type int32 that does not match type float32",
    ):
        var.assign(tf.constant(1))


# -- report_uninitialized_variables and initializers ----------------------------------------


def test_report_uninitialized_variables_names_as_bytes_in_order():
    v = tf.Variable([1, 2], name="v")
    w = tf.Variable([3, 4], name="w")
    uninit = tf.report_uninitialized_variables()
    assert uninit.dtype == tf.string
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(uninit), np.array([b"v", b"w"], dtype=object))
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(uninit), np.array([b"v"], dtype=object))
        sess.run(v.initializer)
        assert sess.run(uninit).size == 0


def test_report_uninitialized_variables_with_var_list_and_scoped_names():
    with tf.name_scope("s"):
        v = tf.Variable(1.0, name="v")
    w = tf.Variable(1.0, name="w")
    only_v = tf.report_uninitialized_variables([v])
    everything = tf.report_uninitialized_variables([w, v])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(only_v), np.array([b"s/v"], dtype=object))
        np.testing.assert_array_equal(sess.run(everything), np.array([b"w", b"s/v"], dtype=object))


def test_report_uninitialized_variables_includes_local_variables():
    g = tf.Variable(1.0, name="g")
    loc = tf.Variable(1.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    uninit = tf.report_uninitialized_variables()
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(uninit), np.array([b"g", b"loc"], dtype=object))
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(uninit), np.array([b"loc"], dtype=object))
        sess.run(tf.local_variables_initializer())
        assert sess.run(uninit).size == 0
    del g, loc


def test_report_uninitialized_variables_without_variables_is_empty():
    uninit = tf.report_uninitialized_variables()
    with tf.Session() as sess:
        assert sess.run(uninit).size == 0


def test_variables_initializer_of_empty_list_is_a_no_op():
    op = tf.variables_initializer([])
    assert op.type == "NoOp"
    assert op.name == "init"
    with tf.Session() as sess:
        sess.run(op)


def test_global_variables_initializer_groups_the_initializers():
    v = tf.Variable(1.0)
    w = tf.Variable(2.0)
    init = tf.global_variables_initializer()
    assert init.type == "NoOp"
    assert init.name == "init"
    assert set(init.control_inputs) == {v.initializer, w.initializer}
    with tf.Session() as sess:
        sess.run(init)
        assert sess.run([v, w]) == [1.0, 2.0]


def test_local_variables_initializer_only_touches_local_variables():
    g = tf.Variable(1.0)
    loc = tf.Variable(2.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(loc) == 2.0
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(g)


def test_assert_variables_initialized():
    assert tf.assert_variables_initialized() is None
    v = tf.Variable([1, 2])
    check = tf.assert_variables_initialized([v])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(check)
        sess.run(v.initializer)
        sess.run(check)


# -- state lives in the session ---------------------------------------------------------------


def test_two_sessions_on_one_graph_have_independent_values():
    v = tf.Variable(1.0)
    s1, s2 = tf.Session(), tf.Session()
    try:
        s1.run(v.initializer)
        with pytest.raises(tf.errors.FailedPreconditionError):
            s2.run(v)
        s2.run(v.assign(5.0))
        assert s1.run(v) == 1.0
        s1.run(v.assign_add(1.0))
        assert (s1.run(v), s2.run(v)) == (2.0, 5.0)
    finally:
        s1.close()
        s2.close()


def test_values_of_a_closed_session_are_gone():
    v = tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.assign(3.0))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v)


# -- operators -------------------------------------------------------------------------------


def test_add_operators_on_variables():
    v = tf.Variable([2.0])
    add = v + 1.0
    radd = 1.0 + v
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(add), [3.0])
        np.testing.assert_array_equal(sess.run(radd), [3.0])


def test_arithmetic_operators_on_variables():
    v = tf.Variable([2.0, -3.0])
    exprs = {
        "mul": (v * v, np.array([4.0, 9.0])),
        "rmul": (10.0 * v, np.array([20.0, -30.0])),
        "neg": (-v, np.array([-2.0, 3.0])),
        "sub": (v - 1.0, np.array([1.0, -4.0])),
        "rsub": (1.0 - v, np.array([-1.0, 4.0])),
    }
    with tf.Session() as sess:
        sess.run(v.initializer)
        for name, (t, expected) in exprs.items():
            np.testing.assert_allclose(sess.run(t), expected, err_msg=name)


def test_indexing_a_variable():
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = tf.Variable(value)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v[0]), value[0])
        np.testing.assert_array_equal(sess.run(v[1:, 2]), value[1:, 2])


def test_matmul_operator_on_variables():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    m = np.array([[0.5], [-1.0]], np.float32)
    v = tf.Variable(a)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(v @ tf.constant(m)), a @ m)


# -- resource variables --------------------------------------------------------------------


def test_resource_variable_ops_and_dtype():
    v = tf.Variable([1.0, 2.0], use_resource=True, name="r")
    assert isinstance(v, tf.Variable)
    assert v.op.type == "VarHandleOp"
    assert v.dtype == tf.float32
    assert v.shape.as_list() == [2]
    assert v.name == "r:0"
    assert v.initializer.type == "AssignVariableOp"
    assert v.value().op.type == "ReadVariableOp"


def test_resource_variable_initializer_and_read_names():
    v = tf.Variable(1.0, use_resource=True, name="r")
    assert v.initializer.name == "r/Assign"
    # The graph element (what sess.run(v) fetches) is the read made with the
    # variable; value() makes a new ReadVariableOp per call, as TF 1.15's does.
    assert v._as_graph_element().name == "r/Read/ReadVariableOp:0"
    assert v.value().op.type == "ReadVariableOp"
    assert v.value() is not v.value()


def test_resource_variable_assignments():
    var = tf.Variable(0.0, use_resource=True)
    plus_one = var.assign_add(1.0)
    minus_two = var.assign_sub(2.0)
    four = var.assign(4.0)
    with tf.Session() as sess:
        sess.run(var.initializer)
        assert sess.run(var) == 0.0
        assert sess.run(plus_one) == 1.0
        assert sess.run(minus_two) == -1.0
        assert sess.run(four) == 4.0
        assert sess.run(var) == 4.0


def test_resource_variable_uninitialized_read_fails():
    v = tf.Variable(1.0, use_resource=True, name="rv")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v)
        assert not sess.run(tf.is_variable_initialized(v))
        sess.run(v.initializer)
        assert sess.run(tf.is_variable_initialized(v))


def test_resource_variable_in_collections_and_uninitialized_report():
    v = tf.Variable(1.0, use_resource=True, name="rv")
    assert tf.global_variables() == [v]
    assert tf.trainable_variables() == [v]
    uninit = tf.report_uninitialized_variables()
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(uninit), np.array([b"rv"], dtype=object))
        sess.run(tf.global_variables_initializer())
        assert sess.run(uninit).size == 0


def test_a_variable_rebuilt_from_its_variable_def_uses_the_same_ops():
    v = tf.Variable([1.0, 2.0], name="v")
    r = tf.Variable([3.0], name="r", use_resource=True)
    again = tf.Variable(variable_def=v.to_proto())
    again_r = tf.Variable.from_proto(r.to_proto())
    assert again.op is v.op and again.initializer is v.initializer and again.name == "v:0"
    assert isinstance(again_r, type(r)) and again_r.handle is r.handle
    with tf.Session() as sess:
        sess.run(again.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        sess.run(again_r.initializer)
        np.testing.assert_array_equal(sess.run(r), [3.0])
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.Variable(1.0, variable_def=v.to_proto())
    assert v.to_proto(export_scope="elsewhere") is None
