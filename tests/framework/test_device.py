"""Tests for minitf.framework.device: TF1 DeviceSpec parsing, printing and merging.

Expected values are the documented results of TF's `device_spec_test.py`,
`device_test.py` and the semantics spec (sections 1 and 2.1).
"""

import pickle
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitf.framework.device import (
    DeviceSpec,
    MergeDevice,
    canonical_name,
    check_valid,
    is_device_spec,
    merge_device,
)

pytestmark = pytest.mark.timeout(30)


def _device_under_scopes(*scopes_outer_to_inner: str, device: str = "") -> str:
    """Device of a new op created inside nested merge_device scopes.

    Mirrors how the graph applies its device stack: innermost scope first, each
    scope merging under the device produced so far.
    """
    op = SimpleNamespace(device=device)
    for scope in reversed(scopes_outer_to_inner):
        op.device = merge_device(scope)(op).to_string()
    return op.device


class TestConstructor:
    def test_empty_spec_prints_empty_string(self):
        assert DeviceSpec().to_string() == ""

    def test_all_fields(self):
        d = DeviceSpec(job="j", replica=0, task=1, device_type="CPU", device_index=2)
        assert (d.job, d.replica, d.task, d.device_type, d.device_index) == ("j", 0, 1, "CPU", 2)
        assert d.to_string() == "/job:j/replica:0/task:1/device:CPU:2"

    def test_type_and_index_only(self):
        assert DeviceSpec(device_type="GPU", device_index=0).to_string() == "/device:GPU:0"

    def test_coerces_job_to_str_and_indices_to_int(self):
        d = DeviceSpec(job=0, replica="1", task="2", device_index="3")
        assert (d.job, d.replica, d.task, d.device_index) == ("0", 1, 2, 3)

    @pytest.mark.parametrize(("given_type", "stored"), [("cpu", "CPU"), ("gpu", "GPU")])
    def test_lower_case_cpu_gpu_are_upper_cased(self, given_type, stored):
        assert DeviceSpec(device_type=given_type).device_type == stored

    @pytest.mark.parametrize("verbatim", ["MyFunnyDevice", "Gpu", "tpu", "CPU"])
    def test_other_type_spellings_are_kept(self, verbatim):
        assert DeviceSpec(device_type=verbatim).device_type == verbatim

    def test_non_integer_index_raises_value_error(self):
        with pytest.raises(ValueError, match="invalid literal for int"):
            DeviceSpec(task="x")


class TestToString:
    @pytest.mark.parametrize(
        ("kwargs", "expected"),
        [
            ({"job": "foo"}, "/job:foo"),
            ({"job": "foo", "task": 3}, "/job:foo/task:3"),
            (
                {"job": "foo", "task": 3, "device_type": "cpu", "device_index": 0},
                "/job:foo/task:3/device:CPU:0",
            ),
            (
                {"job": "foo", "replica": 12, "device_type": "cpu", "device_index": 0},
                "/job:foo/replica:12/device:CPU:0",
            ),
            (
                {"job": "foo", "replica": 12, "device_type": "gpu", "device_index": 2},
                "/job:foo/replica:12/device:GPU:2",
            ),
            ({"job": "foo", "replica": 12}, "/job:foo/replica:12"),
        ],
    )
    def test_fixed_field_order(self, kwargs, expected):
        assert DeviceSpec(**kwargs).to_string() == expected

    def test_type_without_index_prints_star(self):
        d = DeviceSpec(job="foo", replica=12, task=3, device_type="GPU")
        assert d.to_string() == "/job:foo/replica:12/task:3/device:GPU:*"

    def test_index_without_type_is_not_printed(self):
        assert DeviceSpec(job="foo", device_index=3).to_string() == "/job:foo"


class TestV1Setters:
    def test_setters_update_the_string(self):
        d = DeviceSpec()
        d.job = "foo"
        assert d.to_string() == "/job:foo"
        d.task = 3
        assert d.to_string() == "/job:foo/task:3"
        d.device_type = "CPU"
        d.device_index = 0
        assert d.to_string() == "/job:foo/task:3/device:CPU:0"
        d.task = None
        d.replica = 12
        assert d.to_string() == "/job:foo/replica:12/device:CPU:0"
        d.device_type = "GPU"
        d.device_index = 2
        assert d.to_string() == "/job:foo/replica:12/device:GPU:2"
        d.device_type = "CPU"
        d.device_index = 1
        assert d.to_string() == "/job:foo/replica:12/device:CPU:1"
        d.device_type = None
        d.device_index = None
        assert d.to_string() == "/job:foo/replica:12"

    def test_setters_coerce_like_the_constructor(self):
        d = DeviceSpec()
        d.device_type = "gpu"
        d.task = "4"
        assert (d.device_type, d.task) == ("GPU", 4)

    def test_setting_a_field_changes_hash_and_equality(self):
        d = DeviceSpec(job="a")
        d.job = "b"
        assert d == DeviceSpec(job="b")
        assert hash(d) == hash(DeviceSpec(job="b"))


class TestParsing:
    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("", ""),
            ("/cpu:0", "/device:CPU:0"),
            ("/job:ps/task:0/cpu:0", "/job:ps/task:0/device:CPU:0"),
            ("/job:foo/replica:0", "/job:foo/replica:0"),
            ("/replica:1/task:0/cpu:0", "/replica:1/task:0/device:CPU:0"),
            ("/replica:1/task:0/device:CPU:0", "/replica:1/task:0/device:CPU:0"),
            ("/job:muu/device:GPU:2", "/job:muu/device:GPU:2"),
            ("/job:muu/task:1/device:MyFunnyDevice:2", "/job:muu/task:1/device:MyFunnyDevice:2"),
        ],
    )
    def test_from_string_gives_canonical_string(self, spec, expected):
        assert DeviceSpec.from_string(spec).to_string() == expected

    def test_from_string_sets_fields(self):
        d = DeviceSpec.from_string("/replica:1/task:0/cpu:0")
        assert [d.job, d.replica, d.task, d.device_type, d.device_index] == [None, 1, 0, "CPU", 0]
        d = DeviceSpec.from_string("/job:muu/device:GPU:2")
        assert [d.job, d.device_type, d.device_index] == ["muu", "GPU", 2]

    @pytest.mark.parametrize(
        ("spec", "device_type", "device_index"),
        [
            ("/cpu:0", "CPU", 0),
            ("/GPU:1", "GPU", 1),
            ("/Gpu:1", "GPU", 1),
            ("/cpu", "CPU", None),
            ("/gpu:*", "GPU", None),
        ],
    )
    def test_short_form_upper_cases_known_types(self, spec, device_type, device_index):
        d = DeviceSpec.from_string(spec)
        assert (d.device_type, d.device_index) == (device_type, device_index)

    def test_long_form_keeps_type_spelling(self):
        assert DeviceSpec.from_string("/device:MyFunnyDevice:2").device_type == "MyFunnyDevice"
        assert DeviceSpec.from_string("/device:Gpu:0").device_type == "Gpu"

    def test_long_form_star_index_is_unset(self):
        d = DeviceSpec.from_string("/device:GPU:*")
        assert d.device_index is None
        assert d.to_string() == "/device:GPU:*"

    @pytest.mark.parametrize("spec", ["/", "//job:a//", "job:a/", "/job:a/"])
    def test_empty_pieces_are_ignored(self, spec):
        assert DeviceSpec.from_string(spec).to_string() == ("" if spec == "/" else "/job:a")

    def test_none_parses_to_empty_spec(self):
        assert DeviceSpec.from_string(None).to_string() == ""

    @pytest.mark.parametrize(
        "spec", ["/job:muu/device:GPU:2/cpu:0", "/cpu:0/device:GPU:2", "/cpu:0/gpu:1"]
    )
    def test_second_device_type_raises(self, spec):
        with pytest.raises(ValueError, match=f"^Cannot specify multiple device types: {spec}$"):
            DeviceSpec.from_string(spec)

    def test_unknown_attribute_raises(self):
        with pytest.raises(ValueError, match=r"^Unknown attribute: 'bar' in '/bar:muu/baz:2'$"):
            DeviceSpec.from_string("/bar:muu/baz:2")

    @pytest.mark.parametrize("spec", ["/job:a:b", "/device:GPU", "/tpu:0"])
    def test_malformed_or_tf2_only_pieces_are_unknown_attributes(self, spec):
        with pytest.raises(ValueError, match="Unknown attribute"):
            DeviceSpec.from_string(spec)

    @pytest.mark.parametrize("spec", ["/task:x", "/job:j/replica:foo", "/job:j/task:bar"])
    def test_non_integer_task_or_replica_raises_value_error(self, spec):
        with pytest.raises(ValueError, match="invalid literal for int"):
            DeviceSpec.from_string(spec)


class TestParseFromString:
    def test_mutates_and_returns_self(self):
        d = DeviceSpec()
        assert d.parse_from_string("/job:foo/replica:0") is d
        assert d.to_string() == "/job:foo/replica:0"

    def test_replaces_every_field(self):
        d = DeviceSpec.from_string("/job:foo/replica:0")
        d.parse_from_string("/replica:1/task:0/cpu:0")
        assert d.to_string() == "/replica:1/task:0/device:CPU:0"
        d.parse_from_string("/job:muu/device:GPU:2")
        assert d.to_string() == "/job:muu/device:GPU:2"

    def test_empty_string_clears(self):
        d = DeviceSpec(job="x")
        d.parse_from_string("")
        assert d.to_string() == ""

    def test_multiple_device_types_raise(self):
        with pytest.raises(ValueError, match="Cannot specify multiple"):
            DeviceSpec().parse_from_string("/job:muu/device:GPU:2/cpu:0")


class TestMerging:
    def test_make_merged_spec_argument_wins_field_by_field(self):
        d = DeviceSpec.from_string("/job:foo/replica:0")
        d = d.make_merged_spec(DeviceSpec.from_string("/task:1/device:GPU:2"))
        assert d.to_string() == "/job:foo/replica:0/task:1/device:GPU:2"
        d = DeviceSpec().make_merged_spec(DeviceSpec.from_string("/task:1/cpu:0"))
        assert d.to_string() == "/task:1/device:CPU:0"
        d = d.make_merged_spec(DeviceSpec.from_string("/job:boo/device:GPU:0"))
        assert d.to_string() == "/job:boo/task:1/device:GPU:0"
        d = d.make_merged_spec(DeviceSpec.from_string("/job:muu/cpu:2"))
        assert d.to_string() == "/job:muu/task:1/device:CPU:2"
        d = d.make_merged_spec(DeviceSpec.from_string("/job:muu/device:MyFunnyDevice:2"))
        assert d.to_string() == "/job:muu/task:1/device:MyFunnyDevice:2"

    def test_make_merged_spec_leaves_inputs_unchanged(self):
        a = DeviceSpec.from_string("/job:muu/cpu:2")
        b = DeviceSpec.from_string("/device:GPU:0")
        assert a.make_merged_spec(b).to_string() == "/job:muu/device:GPU:0"
        assert (a.to_string(), b.to_string()) == ("/job:muu/device:CPU:2", "/device:GPU:0")

    def test_merge_from_is_in_place(self):
        d = DeviceSpec.from_string("/job:foo/replica:0")
        d.merge_from(DeviceSpec.from_string("/task:1/device:GPU:2"))
        assert d.to_string() == "/job:foo/replica:0/task:1/device:GPU:2"
        d = DeviceSpec()
        d.merge_from(DeviceSpec.from_string("/task:1/cpu:0"))
        assert d.to_string() == "/task:1/device:CPU:0"
        d.merge_from(DeviceSpec.from_string("/job:boo/device:GPU:0"))
        assert d.to_string() == "/job:boo/task:1/device:GPU:0"
        d.merge_from(DeviceSpec.from_string("/job:muu/cpu:2"))
        assert d.to_string() == "/job:muu/task:1/device:CPU:2"
        d.merge_from(DeviceSpec.from_string("/job:muu/device:MyFunnyDevice:2"))
        assert d.to_string() == "/job:muu/task:1/device:MyFunnyDevice:2"


class TestReplace:
    def test_replace_sequence(self):
        d = DeviceSpec().replace(job="foo")
        assert d.to_string() == "/job:foo"
        d = d.replace(task=3)
        assert d.to_string() == "/job:foo/task:3"
        d = d.replace(device_type="CPU", device_index=0)
        assert d.to_string() == "/job:foo/task:3/device:CPU:0"
        d = d.replace(task=None, replica=12)
        assert d.to_string() == "/job:foo/replica:12/device:CPU:0"
        d = d.replace(device_type="GPU", device_index=2)
        assert d.to_string() == "/job:foo/replica:12/device:GPU:2"
        d = d.replace(device_type=None, device_index=None)
        assert d.to_string() == "/job:foo/replica:12"

    def test_replace_returns_a_new_spec(self):
        d = DeviceSpec(job="foo")
        assert d.replace(job="bar") is not d
        assert d.job == "foo"

    def test_unknown_keyword_raises_type_error(self):
        with pytest.raises(TypeError):
            DeviceSpec().replace(device="GPU")


class TestEqualityHashPickle:
    def test_equal_by_canonical_string(self):
        a = DeviceSpec.from_string("/cpu:0/job:ps")
        b = DeviceSpec(job="ps", device_type="CPU", device_index=0)
        assert a == b
        assert hash(a) == hash(b)
        assert len({a, b}) == 1

    def test_not_equal_to_other_spec_or_string(self):
        assert DeviceSpec(job="ps") != DeviceSpec(job="worker")
        assert DeviceSpec(job="ps") != "/job:ps"

    @pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
    def test_pickle_round_trip(self, protocol):
        d = DeviceSpec(job="ps", replica=1, task=2, device_type="GPU")
        restored = pickle.loads(pickle.dumps(d, protocol=protocol))
        assert restored == d
        assert restored.to_string() == "/job:ps/replica:1/task:2/device:GPU:*"
        restored.task = 5
        assert restored.to_string() == "/job:ps/replica:1/task:5/device:GPU:*"

    def test_repr_names_the_set_fields(self):
        r = repr(DeviceSpec(job="ps", device_index=0))
        assert r == "DeviceSpec(job='ps', device_index=0)"


class TestModuleFunctions:
    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("/job:foo/replica:0", "/job:foo/replica:0"),
            ("/replica:0/job:foo", "/job:foo/replica:0"),
            ("/job:foo/replica:0/task:0", "/job:foo/replica:0/task:0"),
            ("/job:foo/task:0/replica:0", "/job:foo/replica:0/task:0"),
            ("/device:CPU:0", "/device:CPU:0"),
            ("/device:GPU:2", "/device:GPU:2"),
            ("/job:foo/replica:0/task:0/device:GPU:0", "/job:foo/replica:0/task:0/device:GPU:0"),
            ("/device:GPU:0/task:0/replica:0/job:foo", "/job:foo/replica:0/task:0/device:GPU:0"),
            ("/cpu:0", "/device:CPU:0"),
            ("", ""),
        ],
    )
    def test_canonical_name_of_string(self, name, expected):
        assert canonical_name(name) == expected

    def test_canonical_name_of_none_is_empty(self):
        assert canonical_name(None) == ""

    def test_canonical_name_of_spec(self):
        assert canonical_name(DeviceSpec(job="ps", device_type="gpu")) == "/job:ps/device:GPU:*"

    def test_check_valid(self):
        check_valid("/job:foo/replica:0")
        with pytest.raises(ValueError, match="invalid literal for int"):
            check_valid("/job:j/replica:foo")
        with pytest.raises(ValueError, match="invalid literal for int"):
            check_valid("/job:j/task:bar")
        with pytest.raises(ValueError, match="Unknown attribute: 'bar'"):
            check_valid("/bar:muu/baz:2")
        with pytest.raises(ValueError, match="Cannot specify multiple device"):
            check_valid("/cpu:0/device:GPU:2")

    def test_is_device_spec(self):
        assert is_device_spec(DeviceSpec())
        assert not is_device_spec("/cpu:0")
        assert not is_device_spec(None)


class TestMergeDevice:
    def test_nested_scopes_innermost_field_wins(self):
        assert _device_under_scopes("/device:GPU:0") == "/device:GPU:0"
        assert _device_under_scopes("/device:GPU:0", "/job:worker") == "/job:worker/device:GPU:0"
        assert (
            _device_under_scopes("/device:GPU:0", "/job:worker", "/device:CPU:0")
            == "/job:worker/device:CPU:0"
        )
        assert (
            _device_under_scopes("/device:GPU:0", "/job:worker", "/device:CPU:0", "/job:ps")
            == "/job:ps/device:CPU:0"
        )

    def test_inner_concrete_index_beats_outer_star(self):
        assert _device_under_scopes("/device:GPU:*", "/device:GPU:7") == "/device:GPU:7"

    def test_star_index_on_op_counts_as_unset(self):
        merged = merge_device("/device:GPU:7")(SimpleNamespace(device="/device:GPU:*"))
        assert merged.to_string() == "/device:GPU:7"

    def test_op_device_wins_field_by_field(self):
        op = SimpleNamespace(device="/job:muu/task:1")
        merged = merge_device("/job:ps/task:0/cpu:0")(op)
        assert merged.to_string() == "/job:muu/task:1/device:CPU:0"

    @pytest.mark.parametrize("unset", ["", None])
    def test_unconstrained_op_takes_the_spec(self, unset):
        merged = merge_device("/job:ps/cpu:0")(SimpleNamespace(device=unset))
        assert merged == DeviceSpec.from_string("/job:ps/device:CPU:0")

    def test_returns_a_device_spec(self):
        assert is_device_spec(merge_device("/cpu:0")(SimpleNamespace(device="")))

    def test_accepts_a_device_spec_and_snapshots_it(self):
        spec = DeviceSpec(job="ps")
        merger = merge_device(spec)
        spec.job = "worker"
        assert merger(SimpleNamespace(device="")).to_string() == "/job:ps"

    def test_merge_device_of_merge_device_is_identity(self):
        merger = merge_device("/job:ps")
        assert isinstance(merger, MergeDevice)
        assert merge_device(merger) is merger

    def test_shortcut_string_merge_returns_canonical_string(self):
        op = SimpleNamespace(device="/gpu:1")
        assert (
            merge_device("/job:w/task:2").shortcut_string_merge(op) == "/job:w/task:2/device:GPU:1"
        )

    def test_is_null_merge_only_for_empty_spec(self):
        assert merge_device("").is_null_merge
        assert not merge_device("/job:ps").is_null_merge

    def test_invalid_string_raises(self):
        with pytest.raises(ValueError, match="Unknown attribute"):
            merge_device("/bogus:1")


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1)
_indices = st.none() | st.integers(min_value=0, max_value=10_000)


@given(
    job=st.none() | _names,
    replica=_indices,
    task=_indices,
    device_type=st.none() | _names,
    device_index=_indices,
)
def test_from_string_inverts_to_string(job, replica, task, device_type, device_index):
    d = DeviceSpec(job, replica, task, device_type, device_index)
    parsed = DeviceSpec.from_string(d.to_string())
    assert parsed == d
    assert canonical_name(d.to_string()) == d.to_string()


@pytest.mark.parametrize(
    "spec, words",
    [
        ("/job:ps/task:x", "in device string '/job:ps/task:x': the task must be an integer"),
        ("/job:ps/replica:r", "the replica must be an integer index"),
        ("/device:CPU:z", "the device index must be an integer or '*'"),
    ],
)
def test_a_bad_index_names_the_field_and_the_device_string(spec, words):
    with pytest.raises(ValueError) as raised:
        DeviceSpec.from_string(spec)
    assert words in str(raised.value)
