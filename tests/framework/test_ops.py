"""Tests for minitf.framework.ops: Graph, Operation, Tensor and the construction contexts.

Expected values come from the semantics spec (sections 2.1-2.3, TF-verified
examples), TF1's documented behaviour and the facts pinned by TF's
``framework/ops_test.py``.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.framework import ops

pytestmark = pytest.mark.timeout(60)


def _run_in_thread(fn):
    """Runs ``fn`` in a new thread; returns its result (or re-raises its exception)."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test thread
            out["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "worker thread did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


# -- unique names --------------------------------------------------------------------------


def test_repeated_op_names_get_counter_suffixes():
    a = tf.constant(1.0)
    b = a + a
    c = a + a
    d = a + a
    assert a.op.name == "Const"
    assert (b.op.name, c.op.name, d.op.name) == ("add", "add_1", "add_2")


def test_explicit_names_are_made_unique_too():
    assert tf.constant(1.0, name="x").op.name == "x"
    assert tf.constant(1.0, name="x").op.name == "x_1"


def test_unique_name_collisions_are_case_insensitive():
    assert tf.constant(1.0, name="Foo").op.name == "Foo"
    assert tf.constant(1.0, name="foo").op.name == "foo_1"
    assert tf.constant(1.0, name="FOO").op.name == "FOO_2"


def test_unique_name_skips_names_taken_with_an_explicit_suffix():
    assert tf.constant(1.0, name="c_1").op.name == "c_1"
    assert tf.constant(1.0, name="c").op.name == "c"
    assert tf.constant(1.0, name="c").op.name == "c_2"


def test_graph_unique_name_marks_and_peeks():
    g = tf.Graph()
    assert g.unique_name("foo") == "foo"
    assert g.unique_name("foo") == "foo_1"
    assert g.unique_name("foo", mark_as_used=False) == "foo_2"
    assert g.unique_name("foo", mark_as_used=False) == "foo_2"
    assert g.unique_name("foo") == "foo_2"
    assert g.unique_name("foo") == "foo_3"


def test_unique_name_includes_the_current_scope():
    g = tf.Graph()
    with g.name_scope("outer"):
        assert g.unique_name("op") == "outer/op"
        assert g.unique_name("op") == "outer/op_1"


def test_name_ending_in_slash_is_used_verbatim():
    with tf.name_scope("block") as scope:
        c = tf.constant(1.0)
        out = tf.identity(c, name=scope)
    assert c.op.name == "block/Const"
    assert out.op.name == "block"


def test_duplicate_verbatim_name_raises_value_error():
    tf.no_op(name="fixed/")
    with pytest.raises(ValueError, match="Duplicate node name in graph: 'fixed'"):
        tf.no_op(name="fixed/")


@pytest.mark.parametrize("bad", ["_starts_with_underscore", "has space", "-dash", "a!b"])
def test_invalid_op_names_raise_value_error(bad):
    with pytest.raises(ValueError, match="is not a valid node name"):
        tf.constant(1.0, name=bad)


def test_underscore_op_name_is_valid_inside_a_scope():
    with tf.name_scope("s"):
        op = tf.no_op(name="_x")
    assert op.name == "s/_x"


# -- name scopes ---------------------------------------------------------------------------


def test_name_scopes_nest_and_are_made_unique():
    with tf.name_scope("a") as a_scope:
        with tf.name_scope("b") as b_scope:
            c = tf.constant(1.0)
    with tf.name_scope("a") as a1_scope:
        d = tf.constant(1.0)
    assert (a_scope, b_scope, a1_scope) == ("a/", "a/b/", "a_1/")
    assert c.op.name == "a/b/Const"
    assert d.op.name == "a_1/Const"


def test_name_scope_none_and_empty_reset_to_the_root():
    with tf.name_scope("a"):
        with tf.name_scope(None) as s_none:
            c = tf.constant(1.0)
        with tf.name_scope("") as s_empty:
            d = tf.constant(1.0)
    assert (s_none, s_empty) == ("", "")
    assert c.op.name == "Const"
    assert d.op.name == "Const_1"


def test_name_scope_ending_in_slash_reenters_an_existing_scope():
    with tf.name_scope("a") as scope:
        tf.constant(1.0, name="c")
    with tf.name_scope("x"):
        with tf.name_scope(scope) as again:
            c = tf.constant(1.0, name="c")
        with tf.name_scope("a/") as verbatim:
            d = tf.constant(1.0, name="d")
    assert again == "a/"
    assert verbatim == "a/"
    assert c.op.name == "a/c_1"
    assert d.op.name == "a/d"


def test_name_scope_default_name_and_values():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
    with tf.name_scope(None, "Default", [a]) as scope:
        assert tf.get_default_graph() is g
        b = tf.constant(2.0)
    assert scope == "Default/"
    assert b.graph is g
    assert b.op.name == "Default/Const"


def test_name_scope_with_values_from_two_graphs_raises():
    with tf.Graph().as_default():
        a = tf.constant(1.0)
    with tf.Graph().as_default():
        b = tf.constant(1.0)
    with pytest.raises(ValueError):
        with tf.name_scope("s", values=[a, b]):
            pass


def test_name_scope_without_name_or_default_but_with_values_raises():
    with pytest.raises(ValueError, match="At least one of name"):
        with tf.name_scope(None, None, []):
            pass


def test_get_name_scope():
    g = tf.get_default_graph()
    with tf.name_scope("a"), tf.name_scope("b"):
        assert g.get_name_scope() == "a/b"
    assert g.get_name_scope() == ""


@pytest.mark.parametrize("bad", ["_a", "-a", "a b"])
def test_invalid_root_scope_names_raise_value_error(bad):
    with pytest.raises(ValueError, match="is not a valid scope name"):
        with tf.name_scope(bad):
            pass


def test_underscore_scope_is_valid_below_the_root():
    with tf.name_scope("outer"):
        with tf.name_scope("_inner") as scope:
            pass
    assert scope == "outer/_inner/"


def test_name_scope_is_restored_after_an_exception():
    g = tf.get_default_graph()
    with pytest.raises(KeyError):
        with tf.name_scope("a"):
            raise KeyError("x")
    assert g.get_name_scope() == ""


# -- graph element lookups -----------------------------------------------------------------


def test_get_operation_and_tensor_by_name():
    c = tf.constant(1.0, name="c")
    g = tf.get_default_graph()
    assert g.get_operation_by_name("c") is c.op
    assert g.get_tensor_by_name("c:0") is c
    assert g.as_graph_element("c") is c.op
    assert g.as_graph_element("c:0") is c
    assert g.as_graph_element(c) is c
    assert g.as_graph_element(c.op) is c.op


def test_get_operation_by_name_errors():
    tf.constant(1.0, name="c")
    g = tf.get_default_graph()
    with pytest.raises(TypeError, match="Operation names are strings"):
        g.get_operation_by_name(1)
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        g.get_operation_by_name("missing")
    with pytest.raises(ValueError, match="appears to refer to a Tensor, not a Operation"):
        g.get_operation_by_name("c:0")


def test_get_tensor_by_name_errors():
    tf.constant(1.0, name="c")
    g = tf.get_default_graph()
    with pytest.raises(TypeError, match="Tensor names are strings"):
        g.get_tensor_by_name(1.5)
    with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
        g.get_tensor_by_name("c")
    with pytest.raises(ValueError, match="looks like an \\(invalid\\) Operation name"):
        g.get_tensor_by_name("nothing")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("c:1")
    with pytest.raises(KeyError, match="does not exist in the graph"):
        g.get_tensor_by_name("missing:0")
    with pytest.raises(ValueError, match="looks a like a Tensor name, but is not a valid one"):
        g.get_tensor_by_name("c:zero")


def test_as_graph_element_type_errors():
    c = tf.constant(1.0)
    g = tf.get_default_graph()
    with pytest.raises(TypeError, match="Can not convert a object into a Tensor or Operation"):
        g.as_graph_element(object())
    with pytest.raises(TypeError, match="Can not convert a Operation into a Tensor"):
        g.as_graph_element(c.op, allow_operation=False)
    with pytest.raises(TypeError, match="Can not convert a Tensor into a Operation"):
        g.as_graph_element(c, allow_tensor=False)


def test_as_graph_element_rejects_elements_of_another_graph():
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    g = tf.get_default_graph()
    with pytest.raises(ValueError, match="is not an element of this graph"):
        g.as_graph_element(other)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        g.as_graph_element(other.op)


def test_as_graph_element_of_a_variable_is_its_tensor():
    v = tf.Variable(1.0, name="v")
    elem = tf.get_default_graph().as_graph_element(v)
    assert isinstance(elem, tf.Tensor)
    assert elem.op is v.op


def test_get_operations_in_creation_order():
    a = tf.constant(1.0)
    b = tf.identity(a)
    c = tf.no_op()
    assert tf.get_default_graph().get_operations() == [a.op, b.op, c]


# -- finalize ------------------------------------------------------------------------------


def test_finalized_graph_rejects_new_ops_and_collection_changes():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
    g.finalize()
    assert g.finalized
    with g.as_default():
        with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified"):
            tf.constant(2.0)
    with pytest.raises(RuntimeError, match="Graph is finalized"):
        g.add_to_collection("things", 1)
    assert len(g.get_operations()) == 1


def test_finalized_graph_can_still_be_run():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(3.0)
    g.finalize()
    with tf.Session(graph=g) as sess:
        assert sess.run(c) == 3.0


# -- collections ---------------------------------------------------------------------------


def test_add_and_get_collection():
    tf.add_to_collection("things", 1)
    tf.add_to_collection("things", 2)
    assert tf.get_collection("things") == [1, 2]
    assert tf.get_collection("missing") == []


def test_get_collection_returns_a_copy_and_ref_the_live_list():
    tf.add_to_collection("things", 1)
    copy = tf.get_collection("things")
    copy.append(99)
    assert tf.get_collection("things") == [1]
    ref = tf.get_collection_ref("things")
    ref.append(2)
    assert tf.get_collection("things") == [1, 2]
    assert tf.get_collection_ref("things") is ref


def test_get_collection_ref_creates_an_empty_collection():
    ref = tf.get_collection_ref("fresh")
    assert ref == []
    ref.append("x")
    assert tf.get_collection("fresh") == ["x"]


def test_get_collection_scope_filters_by_name_prefix_regex():
    with tf.name_scope("a"):
        a = tf.constant(1.0, name="x")
    with tf.name_scope("b"):
        b = tf.constant(1.0, name="x")
    for item in (a, b, "no-name-attribute"):
        tf.add_to_collection("mixed", item)
    assert tf.get_collection("mixed", scope="a") == [a]
    assert tf.get_collection("mixed", scope="b/") == [b]
    assert tf.get_collection("mixed", scope="[ab]") == [a, b]
    assert tf.get_collection("mixed") == [a, b, "no-name-attribute"]


def test_get_collection_scope_filters_variables():
    with tf.variable_scope("enc"):
        v1 = tf.Variable(1.0, name="w")
    with tf.variable_scope("dec"):
        v2 = tf.Variable(1.0, name="w")
    keys = tf.GraphKeys.GLOBAL_VARIABLES
    assert tf.get_collection(keys) == [v1, v2]
    assert tf.get_collection(keys, scope="enc") == [v1]
    assert tf.get_collection(keys, scope="dec") == [v2]


def test_add_to_collections_adds_once_per_name():
    tf.add_to_collections(["a", "b", "a"], "item")
    assert tf.get_collection("a") == ["item"]
    assert tf.get_collection("b") == ["item"]
    tf.add_to_collections("c", "solo")
    assert tf.get_collection("c") == ["solo"]


def test_collections_belong_to_their_graph():
    g = tf.Graph()
    g.add_to_collection("things", 1)
    assert tf.get_collection("things") == []
    with g.as_default():
        assert tf.get_collection("things") == [1]
    assert "things" in g.get_all_collection_keys()


def test_get_all_collection_keys_includes_collections_created_by_get_collection_ref():
    tf.get_collection_ref("created_empty")
    assert "created_empty" in tf.get_default_graph().get_all_collection_keys()


def test_clear_collection():
    tf.add_to_collection("things", 1)
    tf.get_default_graph().clear_collection("things")
    assert tf.get_collection("things") == []


# -- the default graph ---------------------------------------------------------------------


def test_as_default_nests_and_restores():
    outer = tf.get_default_graph()
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default() as entered:
        assert entered is g1
        assert tf.get_default_graph() is g1
        with g2.as_default():
            assert tf.get_default_graph() is g2
        assert tf.get_default_graph() is g1
    assert tf.get_default_graph() is outer


def test_new_thread_sees_the_global_default_graph_not_another_threads_as_default():
    global_graph = tf.get_default_graph()
    private = tf.Graph()
    with private.as_default():
        seen = _run_in_thread(tf.get_default_graph)
    assert seen is global_graph
    assert seen is not private


def test_as_default_in_a_thread_does_not_leak_to_the_main_thread():
    main_graph = tf.get_default_graph()
    ready = threading.Event()
    release = threading.Event()
    other = tf.Graph()

    def worker():
        with other.as_default():
            ready.set()
            release.wait(timeout=5)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert ready.wait(timeout=5)
        assert tf.get_default_graph() is main_graph
    finally:
        release.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_reset_default_graph_replaces_the_global_graph():
    before = tf.get_default_graph()
    tf.constant(1.0)
    tf.reset_default_graph()
    after = tf.get_default_graph()
    assert after is not before
    assert after.get_operations() == []


def test_reset_default_graph_inside_as_default_raises_assertion_error():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="Do not use tf.reset_default_graph"):
            tf.reset_default_graph()


# -- Tensor --------------------------------------------------------------------------------


def test_tensor_equality_is_identity_and_tensors_are_hashable():
    a = tf.constant(1.0)
    b = tf.constant(1.0)
    n_ops = len(tf.get_default_graph().get_operations())
    assert a == a
    assert not (a == b)
    assert a != b
    assert not (a != a)
    assert {a: 1, b: 2}[a] == 1
    assert len({a, b, a}) == 2
    assert len(tf.get_default_graph().get_operations()) == n_ops


def test_tensor_bool_raises_type_error():
    a = tf.constant(True)
    with pytest.raises(TypeError, match="Using a `tf.Tensor` as a Python `bool` is not allowed"):
        bool(a)
    with pytest.raises(TypeError):
        if a:
            pass


def test_tensor_iteration_raises_type_error():
    a = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="only iterable when eager execution is enabled"):
        iter(a)
    with pytest.raises(TypeError):
        for _ in a:
            pass


def test_tensor_properties():
    c = tf.constant([[1.0, 2.0]], name="c")
    assert c.name == "c:0"
    assert c.value_index == 0
    assert c.dtype == tf.float32
    assert c.shape.as_list() == [1, 2]
    assert c.get_shape().as_list() == [1, 2]
    assert c.graph is tf.get_default_graph()
    assert c.op.outputs == [c]
    d = tf.identity(c)
    assert c.consumers() == [d.op]


def test_set_shape_refines_and_rejects_incompatible_shapes():
    p = tf.placeholder(tf.float32, shape=[None, 3])
    p.set_shape([2, None])
    assert p.shape.as_list() == [2, 3]
    with pytest.raises(ValueError):
        p.set_shape([4, 3])


# -- Operation -----------------------------------------------------------------------------


def test_operation_node_def_lists_inputs_control_inputs_and_device():
    a = tf.constant(1.0, name="a")
    gate = tf.no_op(name="gate")
    with tf.device("/cpu:0"), tf.control_dependencies([gate]):
        b = tf.identity(a, name="b")
    node_def = b.op.node_def
    assert node_def["name"] == "b"
    assert node_def["op"] == "Identity"
    assert node_def["input"] == ["a", "^gate"]
    assert node_def["device"] == "/device:CPU:0"
    assert node_def["attr"]["T"] == tf.float32


def test_operation_properties():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    op = b.op
    assert op.type == "Identity"
    assert op.name == "b"
    assert op.graph is tf.get_default_graph()
    assert list(op.inputs) == [a]
    assert op.outputs == [b]
    assert op.values() == (b,)
    assert op.control_inputs == []
    assert op.device == ""
    assert a.op.get_attr("dtype") == tf.float32


def test_get_attr_of_a_missing_attribute_raises_value_error():
    a = tf.constant(1.0, name="a")
    with pytest.raises(ValueError, match="Operation 'a' has no attr named 'nope'"):
        a.op.get_attr("nope")


def test_colocation_groups_default_to_the_op_itself():
    a = tf.constant(1.0, name="a")
    assert a.op.colocation_groups() == [b"loc:@a"]
    with pytest.raises(ValueError):
        a.op.get_attr("_class")


def test_create_op_rejects_inputs_from_another_graph():
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    with pytest.raises(ValueError, match="must be from the same graph"):
        tf.get_default_graph().create_op("Identity", [other], [tf.float32])


def test_create_op_rejects_non_tensor_inputs():
    with pytest.raises(TypeError):
        tf.get_default_graph().create_op("Identity", [1.0], [tf.float32])


# -- convert_to_tensor ---------------------------------------------------------------------


def test_convert_to_tensor_infers_tf_dtypes():
    assert tf.convert_to_tensor(1.0).dtype == tf.float32
    assert tf.convert_to_tensor(1).dtype == tf.int32
    assert tf.convert_to_tensor([1.0, 2.0]).dtype == tf.float32
    assert tf.convert_to_tensor(np.zeros(2, np.float64)).dtype == tf.float64
    assert tf.convert_to_tensor(np.zeros(2, np.int64)).dtype == tf.int64
    assert tf.convert_to_tensor(True).dtype == tf.bool


def test_convert_to_tensor_returns_tensors_unchanged():
    a = tf.constant(1.0)
    assert tf.convert_to_tensor(a) is a
    assert tf.convert_to_tensor(a, dtype=tf.float32) is a


def test_convert_to_tensor_with_a_conflicting_dtype_raises_value_error():
    a = tf.constant(1.0)
    with pytest.raises(ValueError, match="requested dtype int32 for Tensor with dtype float32"):
        tf.convert_to_tensor(a, dtype=tf.int32)


def test_convert_to_tensor_names_the_constant_and_honours_dtype():
    t = tf.convert_to_tensor([1, 2], dtype=tf.float32, name="vals")
    assert t.op.name == "vals"
    assert t.dtype == tf.float32


def test_convert_to_tensor_preferred_dtype_is_only_a_hint():
    assert tf.convert_to_tensor(1, preferred_dtype=tf.int64).dtype == tf.int64
    assert tf.convert_to_tensor(1.5, preferred_dtype=tf.int32).dtype == tf.float32


def test_convert_to_tensor_of_a_variable_gives_its_value():
    v = tf.Variable([1.0, 2.0])
    t = tf.convert_to_tensor(v)
    assert isinstance(t, tf.Tensor)
    assert t.dtype == tf.float32


def test_convert_to_tensor_of_an_unsupported_object_raises_type_error():
    with pytest.raises(TypeError):
        tf.convert_to_tensor(object())


# -- devices (spec 2.1) ----------------------------------------------------------------------


def test_device_strings_are_canonicalised():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0)
    with tf.device("/job:ps/task:0/cpu:0"):
        b = tf.constant(1.0)
    with tf.device("/replica:1/task:0/gpu:1"):
        c = tf.constant(1.0)
    assert a.device == "/device:CPU:0"
    assert b.device == "/job:ps/task:0/device:CPU:0"
    assert c.device == "/replica:1/task:0/device:GPU:1"
    assert tf.constant(1.0).device == ""


def test_nested_device_scopes_merge_inner_fields_win():
    with tf.device("/device:GPU:0"):
        a = tf.constant(1.0)
        with tf.device("/job:worker"):
            b = tf.constant(1.0)
            with tf.device("/device:CPU:0"):
                c = tf.constant(1.0)
                with tf.device("/job:ps"):
                    d = tf.constant(1.0)
    assert a.device == "/device:GPU:0"
    assert b.device == "/job:worker/device:GPU:0"
    assert c.device == "/job:worker/device:CPU:0"
    assert d.device == "/job:ps/device:CPU:0"


def test_a_device_scope_merges_each_op_with_the_device_its_inner_scopes_set():
    # One outer entry sees, in turn, ops that inner scopes put on different tasks.
    devices = []
    with tf.device("/job:ps/device:CPU:0"):
        for task in (1, 2, 1, None):
            if task is None:
                devices.append(tf.constant(1.0).device)
                continue
            with tf.device(f"/task:{task}"):
                devices.append(tf.constant(1.0).device)
    assert devices == [
        "/job:ps/task:1/device:CPU:0",
        "/job:ps/task:2/device:CPU:0",
        "/job:ps/task:1/device:CPU:0",
        "/job:ps/device:CPU:0",
    ]


def test_star_device_index_counts_as_unset():
    with tf.device("/device:GPU:7"):
        with tf.device("/device:GPU:*"):
            a = tf.constant(1.0)
    assert a.device == "/device:GPU:7"


def test_outer_scope_fills_only_unset_fields():
    with tf.device("/job:a/task:1/cpu:0"):
        with tf.device("/task:3"):
            a = tf.constant(1.0)
    assert a.device == "/job:a/task:3/device:CPU:0"


def test_device_none_stops_the_walk():
    with tf.device("/job:a/cpu:0"):
        with tf.device(None):
            a = tf.constant(1.0)
            with tf.device("/task:2"):
                b = tf.constant(1.0)
        c = tf.constant(1.0)
    assert a.device == ""
    assert b.device == "/task:2"
    assert c.device == "/job:a/device:CPU:0"


def test_empty_device_string_is_a_no_op():
    with tf.device("/job:a"):
        with tf.device(""):
            a = tf.constant(1.0)
    assert a.device == "/job:a"


def test_device_function_replaces_and_is_merged_with_outer_strings():
    with tf.device("/job:a/task:1"):
        with tf.device(lambda op: "/job:z"):
            a = tf.constant(1.0)
    assert a.device == "/job:z/task:1"


def test_device_function_sees_the_device_set_by_inner_scopes():
    seen = []

    def record(op):
        seen.append((op.name, op.device))
        return op.device

    with tf.device(record):
        with tf.device("/cpu:0"):
            tf.constant(1.0, name="c")
    assert seen == [("c", "/device:CPU:0")]


def test_device_function_outside_string_scopes_overwrites_them():
    with tf.device(lambda op: "/job:f"):
        with tf.device("/job:a/cpu:0"):
            a = tf.constant(1.0)
    assert a.device == "/job:f"


def test_device_none_inside_a_function_disables_it():
    with tf.device(lambda op: "/job:f"):
        with tf.device(None):
            a = tf.constant(1.0)
    assert a.device == ""


def test_device_function_receives_the_op_and_may_return_none_or_a_spec():
    def by_type(op):
        if op.type == "Const":
            return tf.DeviceSpec(job="ps", task=0)
        return None

    with tf.device(by_type):
        a = tf.constant(1.0)
        b = tf.identity(a)
    assert a.device == "/job:ps/task:0"
    assert b.device == ""


def test_device_spec_objects_as_scopes():
    with tf.device(tf.DeviceSpec(job="ps", task=1)):
        a = tf.constant(1.0)
        with tf.device(tf.DeviceSpec(device_type="CPU", device_index=0)):
            b = tf.constant(1.0)
    assert a.device == "/job:ps/task:1"
    assert b.device == "/job:ps/task:1/device:CPU:0"


@pytest.mark.parametrize("bad", ["/job:foo/bad_attr:1", "/task:x", "/cpu:0/gpu:0", "nonsense"])
def test_invalid_device_string_raises_value_error(bad):
    with pytest.raises(ValueError):
        with tf.device(bad):
            tf.constant(1.0)


def test_device_function_returning_an_invalid_string_raises_at_op_creation():
    with tf.device(lambda op: "/job:a/bogus:thing"):
        with pytest.raises(ValueError):
            tf.constant(1.0)


def test_exiting_device_scopes_out_of_order_raises_runtime_error():
    outer = tf.device("/job:a")
    inner = tf.device("/job:b")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Exiting device scope without proper scope nesting"):
        outer.__exit__(None, None, None)


def test_graph_device_method_matches_tf_device():
    g = tf.Graph()
    with g.as_default(), g.device("/job:w"):
        a = tf.constant(1.0)
    assert a.device == "/job:w"


_THREAD_SHARED_STACKS = (
    "TF1 keeps the device, colocation and control-dependency stacks on the Graph "
    "(Graph._stack_state_is_thread_local is False unless switch_to_thread_local() is "
    "called); minitf keeps them per thread"
)


def test_device_scope_is_seen_by_another_thread_building_the_same_graph():
    g = tf.get_default_graph()

    def make():
        with g.as_default():
            return tf.constant(1.0).device

    with tf.device("/job:main"):
        device_in_thread = _run_in_thread(make)
    assert device_in_thread == "/job:main"


def test_name_scopes_are_per_thread():
    g = tf.get_default_graph()

    def make():
        with g.as_default():
            return tf.constant(1.0, name="c").op.name

    with tf.name_scope("main"):
        name_in_thread = _run_in_thread(make)
    assert name_in_thread == "c"


def test_variable_ops_share_the_variable_device():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    assert v.device == "/job:ps/task:0"
    assert v.op.device == "/job:ps/task:0"
    assert v.initializer.device == "/job:ps/task:0"
    assert v.value().device == "/job:ps/task:0"


# -- colocation (spec 2.2) -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["op", "tensor", "variable"])
def test_colocate_with_resolves_ops_tensors_and_variables(kind):
    if kind == "variable":
        target = tf.Variable(1.0, name="a")
    else:
        a = tf.constant(1.0, name="a")
        target = a.op if kind == "op" else a
    with tf.colocate_with(target):
        b = tf.constant(2.0)
    assert b.op.colocation_groups() == [b"loc:@a"]
    assert b.op.get_attr("_class") == [b"loc:@a"]


def test_colocate_with_none_requires_ignore_existing():
    with pytest.raises(ValueError, match="Trying to reset colocation"):
        with tf.colocate_with(None):
            pass


def test_colocate_with_none_and_ignore_existing_clears_colocation():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.colocate_with(None, ignore_existing=True):
            b = tf.constant(1.0, name="b")
        c = tf.constant(1.0, name="c")
    assert b.op.colocation_groups() == [b"loc:@b"]
    assert c.op.colocation_groups() == [b"loc:@a"]


def test_colocate_with_none_also_empties_the_device_stack():
    with tf.device("/job:w"):
        with tf.colocate_with(None, ignore_existing=True):
            a = tf.constant(1.0)
    assert a.device == ""


def test_colocation_takes_the_target_device_and_ignores_outer_scopes():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker"):
        with tf.colocate_with(a):
            b = tf.constant(1.0)
        c = tf.constant(1.0)
    assert b.device == "/job:ps/task:0"
    assert c.device == "/job:worker"


def test_colocation_empties_the_device_stack_when_the_target_has_no_device():
    a = tf.constant(1.0, name="a")
    with tf.device("/job:worker"):
        with tf.colocate_with(a):
            b = tf.constant(1.0)
    assert b.device == ""
    assert b.op.colocation_groups() == [b"loc:@a"]


def test_colocation_beats_an_inner_device_scope_when_the_target_has_a_device():
    with tf.device("/job:ps"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        with tf.device("/job:worker/cpu:0"):
            b = tf.constant(1.0)
    assert b.device == "/job:ps"


def test_inner_device_scope_decides_when_the_target_has_no_device():
    a = tf.constant(1.0, name="a")
    with tf.device("/job:outer"):
        with tf.colocate_with(a):
            with tf.device("/job:inner"):
                b = tf.constant(1.0)
    assert b.device == "/job:inner"


def test_colocation_class_attr_is_sorted_union_of_stacked_groups():
    b = tf.constant(1.0, name="b")
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(b):
        with tf.colocate_with(a):
            c = tf.constant(1.0, name="c")
    assert c.op.get_attr("_class") == [b"loc:@a", b"loc:@b"]
    assert c.op.colocation_groups() == [b"loc:@a", b"loc:@b"]


def test_nested_colocation_inherits_the_targets_group():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        b = tf.constant(1.0, name="b")
    with tf.colocate_with(b):
        c = tf.constant(1.0, name="c")
    assert c.op.colocation_groups() == [b"loc:@a"]


def test_ignore_existing_keeps_only_the_new_target():
    a = tf.constant(1.0, name="a")
    b = tf.constant(1.0, name="b")
    with tf.colocate_with(a):
        with tf.colocate_with(b, ignore_existing=True):
            c = tf.constant(1.0, name="c")
    assert c.op.colocation_groups() == [b"loc:@b"]


def test_innermost_colocation_target_with_a_device_wins():
    with tf.device("/job:one"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:two"):
        b = tf.constant(1.0, name="b")
    with tf.colocate_with(a):
        with tf.colocate_with(b):
            c = tf.constant(1.0)
    assert c.device == "/job:two"


def test_device_stack_is_restored_after_colocation():
    a = tf.constant(1.0, name="a")
    with tf.device("/job:w"):
        with tf.colocate_with(a):
            pass
        b = tf.constant(1.0)
    assert b.device == "/job:w"
    assert b.op.colocation_groups() == [f"loc:@{b.op.name}".encode()]


def test_variable_initializer_and_read_are_colocated_with_the_variable():
    v = tf.Variable([1.0, 2.0], name="v")
    assert v.initializer.colocation_groups() == [b"loc:@v"]
    assert v.value().op.colocation_groups() == [b"loc:@v"]


def test_variable_initializer_follows_the_variable_under_a_device_function():
    def setter(op):
        return "/job:ps/task:0" if op.type == "VariableV2" else "/job:worker"

    with tf.device(setter):
        v = tf.Variable([1.0, 2.0], name="v")
    assert v.device == "/job:ps/task:0"
    assert v.initializer.device == "/job:ps/task:0"
    assert v.value().device == "/job:ps/task:0"
    assert v.initial_value.device == "/job:worker"


def test_callable_initial_value_is_built_with_device_none_and_the_variable_group():
    with tf.device("/job:ps"):
        v = tf.Variable(lambda: tf.constant([1.0, 2.0]), name="v")
    assert v.device == "/job:ps"
    assert v.initial_value.device == ""
    assert v.initial_value.op.colocation_groups() == [b"loc:@v"]
    assert v.initializer.device == "/job:ps"


def test_get_variable_initializer_is_colocated_with_the_variable():
    def ones(shape, dtype=None, partition_info=None):
        return tf.constant(np.ones(shape, np.float32))

    with tf.device("/job:ps/task:1"):
        w = tf.get_variable("w", shape=[2, 3], initializer=ones)
    assert w.device == "/job:ps/task:1"
    assert w.initial_value.device == ""
    assert w.initial_value.op.colocation_groups() == [b"loc:@w"]
    assert w.initializer.colocation_groups() == [b"loc:@w"]
    assert w.initializer.device == "/job:ps/task:1"


# -- control dependencies (spec 2.3) -------------------------------------------------------


def test_control_dependencies_are_added_to_new_ops():
    a = tf.no_op(name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(1.0)
    assert b.op.control_inputs == [a]
    assert tf.constant(1.0).op.control_inputs == []


def test_nested_control_dependencies_accumulate():
    a = tf.no_op(name="a")
    b = tf.no_op(name="b")
    with tf.control_dependencies([a]):
        with tf.control_dependencies([b]):
            c = tf.constant(1.0)
    assert set(c.op.control_inputs) == {a, b}
    assert len(c.op.control_inputs) == 2


def test_control_dependencies_none_clears_outer_blocks():
    a = tf.no_op(name="a")
    b = tf.no_op(name="b")
    with tf.control_dependencies([a]):
        with tf.control_dependencies(None):
            c = tf.constant(1.0)
            with tf.control_dependencies([b]):
                d = tf.constant(1.0)
        e = tf.constant(1.0)
    assert c.op.control_inputs == []
    assert d.op.control_inputs == [b]
    assert e.op.control_inputs == [a]


def test_control_input_from_an_enclosing_block_is_not_added_twice():
    a = tf.no_op(name="a")
    b = tf.no_op(name="b")
    with tf.control_dependencies([a]):
        with tf.control_dependencies([a, b]):
            c = tf.constant(1.0)
    assert sorted(op.name for op in c.op.control_inputs) == ["a", "b"]


def test_data_inputs_are_not_added_as_control_inputs():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.control_dependencies([a.op, b.op]):
        c = tf.identity(a)
    assert c.op.control_inputs == [b.op]


def test_ops_whose_inputs_were_created_in_the_block_are_dominated():
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        inner = tf.constant(1.0)
        derived = tf.identity(inner)
    assert inner.op.control_inputs == [gate]
    assert derived.op.control_inputs == []


def test_domination_is_per_block():
    outer_gate = tf.no_op(name="outer_gate")
    inner_gate = tf.no_op(name="inner_gate")
    with tf.control_dependencies([outer_gate]):
        x = tf.constant(1.0, name="x")
        with tf.control_dependencies([inner_gate]):
            y = tf.identity(x, name="y")
    assert set(x.op.control_inputs) == {outer_gate}
    assert y.op.control_inputs == [inner_gate]


@pytest.mark.parametrize("bad", [1, 2.5, object()])
def test_control_dependencies_on_non_graph_elements_raise_type_error(bad):
    with pytest.raises(TypeError):
        with tf.control_dependencies([bad]):
            pass


def test_control_dependencies_accept_tensors_and_variables():
    t = tf.constant(1.0, name="t")
    v = tf.Variable(1.0, name="v")
    with tf.control_dependencies([t, v]):
        c = tf.no_op(name="c")
    assert set(c.control_inputs) == {t.op, v.op}


def test_control_dependency_on_a_resource_variable_is_its_handle_op():
    rv = tf.Variable(1.0, use_resource=True, name="rv")
    with tf.control_dependencies([rv]):
        c = tf.no_op(name="c")
    assert c.control_inputs == [rv.op]
    assert rv.op.type == "VarHandleOp"


def test_control_dependencies_are_seen_by_another_thread_building_the_same_graph():
    g = tf.get_default_graph()
    gate = tf.no_op(name="gate")

    def make():
        with g.as_default():
            return tf.constant(1.0).op.control_inputs

    with tf.control_dependencies([gate]):
        in_thread = _run_in_thread(make)
    assert in_thread == [gate]


def test_module_scopes_use_the_current_default_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:g"), tf.name_scope("s"):
            c = tf.constant(1.0)
    assert c.graph is g
    assert c.op.name == "s/Const"
    assert c.device == "/job:g"
    assert ops.get_default_graph() is not g
