"""tf.train.ClusterSpec (TF's ClusterSpecTest and ServerDefTest) and TF_CONFIG parsing."""

import json

import pytest

import minitf as tf
from minitf.runtime.distributed.cluster_spec import (
    ClusterDef,
    ClusterSpec,
    JobDef,
    cluster_from_tf_config,
)

pytestmark = pytest.mark.timeout(60)

_PS_WORKER = {
    "ps": ["ps0:2222", "ps1:2222"],
    "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
}

# What TF's ClusterDef proto holds for _PS_WORKER: jobs sorted by name.
_PS_WORKER_DEF = ClusterDef(
    job=[
        JobDef(name="ps", tasks={0: "ps0:2222", 1: "ps1:2222"}),
        JobDef(name="worker", tasks={0: "worker0:2222", 1: "worker1:2222", 2: "worker2:2222"}),
    ]
)


def test_is_tf_train_cluster_spec():
    assert tf.train.ClusterSpec is ClusterSpec


def test_str_and_repr_list_jobs_sorted():
    spec = ClusterSpec({"worker": ["worker0:3333", "worker1:4444"], "ps": ["ps0:1111"]})
    expected = "ClusterSpec({'ps': ['ps0:1111'], 'worker': ['worker0:3333', 'worker1:4444']})"
    assert str(spec) == expected
    assert repr(spec) == expected


def test_cluster_def_sorts_jobs_and_tasks():
    spec = ClusterSpec({"worker": {2: "worker2:2222", 0: "worker0:2222"}, "ps": ["ps0:2222"]})
    assert spec.as_cluster_def() == ClusterDef(
        job=[
            JobDef(name="ps", tasks={0: "ps0:2222"}),
            JobDef(name="worker", tasks={0: "worker0:2222", 2: "worker2:2222"}),
        ]
    )


def test_dict_spec_def_and_as_dict_round_trips_agree():
    spec = ClusterSpec(_PS_WORKER)
    assert spec.as_cluster_def() == _PS_WORKER_DEF
    assert ClusterSpec(spec).as_cluster_def() == _PS_WORKER_DEF
    assert ClusterSpec(spec.as_cluster_def()).as_cluster_def() == _PS_WORKER_DEF
    assert ClusterSpec(spec.as_dict()).as_cluster_def() == _PS_WORKER_DEF


def test_round_trips_keep_a_job_without_tasks():
    spec = ClusterSpec({"ps": ["ps0:2222", "ps1:2222"], "worker": []})
    expected = ClusterDef(
        job=[JobDef(name="ps", tasks={0: "ps0:2222", 1: "ps1:2222"}), JobDef(name="worker")]
    )
    assert spec.as_cluster_def() == expected
    assert ClusterSpec(spec).as_cluster_def() == expected
    assert ClusterSpec(spec.as_cluster_def()).as_cluster_def() == expected
    assert ClusterSpec(spec.as_dict()).as_cluster_def() == expected
    assert spec.as_dict() == {"ps": ["ps0:2222", "ps1:2222"], "worker": {}}
    assert spec.num_tasks("worker") == 0


def test_as_cluster_def_returns_an_independent_copy():
    spec = ClusterSpec(_PS_WORKER)
    spec.as_cluster_def().job[0].tasks[0] = "elsewhere:1"
    assert spec.task_address("ps", 0) == "ps0:2222"
    assert spec.as_cluster_def() == _PS_WORKER_DEF


def test_accessors_on_dense_and_sparse_jobs():
    original = {
        "ps": ["ps0:2222", "ps1:2222"],
        "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
        "sparse": {0: "sparse0:2222", 3: "sparse3:2222"},
    }
    spec = ClusterSpec(original)
    assert spec.as_dict() == original
    assert spec.jobs == ["ps", "worker", "sparse"]

    assert (spec.num_tasks("ps"), spec.num_tasks("worker"), spec.num_tasks("sparse")) == (2, 3, 2)
    assert spec.task_address("ps", 0) == "ps0:2222"
    assert spec.task_address("sparse", 0) == "sparse0:2222"
    assert spec.task_indices("ps") == [0, 1]
    assert spec.task_indices("worker") == [0, 1, 2]
    assert spec.task_indices("sparse") == [0, 3]
    assert spec.job_tasks("ps") == ["ps0:2222", "ps1:2222"]
    assert spec.job_tasks("worker") == ["worker0:2222", "worker1:2222", "worker2:2222"]
    assert spec.job_tasks("sparse") == ["sparse0:2222", None, None, "sparse3:2222"]


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.num_tasks("unknown"),
        lambda s: s.task_indices("unknown"),
        lambda s: s.task_address("unknown", 0),
        lambda s: s.job_tasks("unknown"),
    ],
)
def test_unknown_job_raises_value_error(call):
    with pytest.raises(ValueError, match="No such job in cluster: 'unknown'"):
        call(ClusterSpec({"sparse": {0: "sparse0:2222", 3: "sparse3:2222"}}))


def test_missing_task_index_raises_value_error():
    spec = ClusterSpec({"sparse": {0: "sparse0:2222", 3: "sparse3:2222"}})
    with pytest.raises(ValueError, match="No task with index 2 in job 'sparse'"):
        spec.task_address("sparse", 2)


def test_sparse_job_as_dict_stays_a_dict_dense_dict_becomes_a_list():
    spec = ClusterSpec({"worker": {1: "worker1:2222"}, "ps": {1: "b:1", 0: "a:1"}})
    assert spec.as_dict() == {"worker": {1: "worker1:2222"}, "ps": ["a:1", "b:1"]}


def test_sparse_task_indices_given_as_strings_are_converted():
    assert ClusterSpec({"worker": {"1": "w1:2222"}}).task_address("worker", 1) == "w1:2222"


def test_tuple_of_addresses_is_accepted():
    assert ClusterSpec({"ps": ("a:1", "b:2")}).as_dict() == {"ps": ["a:1", "b:2"]}


def test_empty_spec_is_false_nonempty_is_true():
    assert not ClusterSpec({})
    assert ClusterSpec({"job": ["host:2222"]})


def test_equality_by_content():
    assert ClusterSpec({}) == ClusterSpec({})
    assert ClusterSpec({"job": ["host:2222"]}) == ClusterSpec({"job": ["host:2222"]})
    assert ClusterSpec({"job": {0: "host:2222"}}) == ClusterSpec({"job": ["host:2222"]})
    assert ClusterSpec(_PS_WORKER_DEF) == ClusterSpec(_PS_WORKER)
    assert not ClusterSpec({"job": ["host:2222"]}) != ClusterSpec({"job": ["host:2222"]})


@pytest.mark.parametrize(
    "a, b",
    [
        ({}, {"job": ["host:2223"]}),
        ({"job1": ["host:2222"]}, {"job2": ["host:2222"]}),
        ({"job": ["host:2222"]}, {"job": ["host:2223"]}),
        ({"job": ["host:2222", "host:2223"]}, {"job": ["host:2223", "host:2222"]}),
    ],
)
def test_inequality(a, b):
    assert ClusterSpec(a) != ClusterSpec(b)
    assert not ClusterSpec(a) == ClusterSpec(b)


def test_spec_copied_from_another_lists_jobs_in_cluster_def_order():
    spec = ClusterSpec({"worker": ["w:1"], "ps": ["p:1"]})
    assert spec.jobs == ["worker", "ps"]
    assert ClusterSpec(spec).jobs == ["ps", "worker"]


def test_accepts_any_object_shaped_like_a_cluster_def():
    class ProtoLikeJob:
        def __init__(self, name, tasks):
            self.name, self.tasks = name, tasks

    class ProtoLikeCluster:
        job = [ProtoLikeJob("ps", {0: "ps0:2222"})]

    assert ClusterSpec(ProtoLikeCluster()).as_dict() == {"ps": ["ps0:2222"]}


@pytest.mark.parametrize("bad", [None, ["ps0:2222"], "ps0:2222", 3])
def test_non_cluster_argument_raises_type_error(bad):
    with pytest.raises(TypeError, match="`cluster` must be a dictionary mapping one or more job"):
        ClusterSpec(bad)


def test_tasks_neither_list_nor_dict_raise_type_error():
    with pytest.raises(
        TypeError,
        match="The tasks for job 'ps' must be a list or a dictionary from integers to strings",
    ):
        ClusterSpec({"ps": "ps0:2222"})


def test_non_string_address_raises_type_error():
    with pytest.raises(TypeError, match="Task address 2222 must be bytes or unicode"):
        ClusterSpec({"ps": [2222]})


def test_non_string_job_name_raises_type_error():
    with pytest.raises(TypeError, match="Job name 7 must be bytes or unicode"):
        ClusterSpec({7: ["ps0:2222"]})


def test_non_integer_sparse_index_raises_value_error():
    with pytest.raises(ValueError):
        ClusterSpec({"ps": {"first": "ps0:2222"}})


def test_bytes_names_and_addresses_become_text_in_the_cluster_def():
    spec = ClusterSpec({b"ps": [b"ps0:2222"]})
    assert spec.as_cluster_def() == ClusterDef(job=[JobDef(name="ps", tasks={0: "ps0:2222"})])


# -- TF_CONFIG ---------------------------------------------------------------------------

_TF_CONFIG = {
    "cluster": {
        "chief": ["host0:2222"],
        "worker": ["host1:2222", "host2:2222"],
        "ps": ["host3:2222"],
    },
    "task": {"type": "worker", "index": 1},
}


def test_tf_config_json_string():
    cluster, job, index = cluster_from_tf_config(json.dumps(_TF_CONFIG))
    assert cluster == ClusterSpec(_TF_CONFIG["cluster"])
    assert (job, index) == ("worker", 1)


def test_tf_config_dict_and_chief_task():
    config = {**_TF_CONFIG, "task": {"type": "chief", "index": 0}}
    cluster, job, index = cluster_from_tf_config(config)
    assert cluster.task_address("chief", 0) == "host0:2222"
    assert (job, index) == ("chief", 0)


def test_tf_config_evaluator_may_be_outside_the_cluster():
    config = {**_TF_CONFIG, "task": {"type": "evaluator", "index": 0}}
    cluster, job, index = cluster_from_tf_config(config)
    assert "evaluator" not in cluster.jobs
    assert (job, index) == ("evaluator", 0)


def test_tf_config_sparse_job_with_string_keys():
    config = {"cluster": {"worker": {"1": "host1:2222"}}, "task": {"type": "worker", "index": 1}}
    cluster, job, index = cluster_from_tf_config(json.dumps(config))
    assert cluster.as_dict() == {"worker": {1: "host1:2222"}}
    assert (job, index) == ("worker", 1)


def test_tf_config_index_as_string_is_accepted():
    config = {**_TF_CONFIG, "task": {"type": "worker", "index": "1"}}
    assert cluster_from_tf_config(config)[2] == 1


def test_tf_config_without_task_or_cluster():
    cluster, job, index = cluster_from_tf_config({"cluster": _TF_CONFIG["cluster"]})
    assert cluster.num_tasks("worker") == 2
    assert (job, index) == (None, None)
    cluster, job, index = cluster_from_tf_config("")
    assert not cluster
    assert (job, index) == (None, None)


def test_tf_config_task_without_index_gives_none():
    config = {**_TF_CONFIG, "task": {"type": "ps"}}
    assert cluster_from_tf_config(config)[1:] == ("ps", None)


def test_tf_config_extra_keys_are_ignored():
    config = {**_TF_CONFIG, "environment": "cloud", "rpc_layer": "grpc"}
    assert cluster_from_tf_config(config)[1:] == ("worker", 1)


@pytest.mark.parametrize(
    "config, message",
    [
        ("{not json", "TF_CONFIG is not valid JSON"),
        ("[1, 2]", "TF_CONFIG must be a JSON object"),
        ({"cluster": ["host:1"]}, "TF_CONFIG 'cluster' must be an object"),
        ({"cluster": {"ps": "host:1"}}, "TF_CONFIG 'cluster' is malformed: The tasks for job"),
        ({"cluster": {"ps": {"x": "host:1"}}}, "TF_CONFIG 'cluster' is malformed"),
        ({"cluster": {"ps": [1]}}, "TF_CONFIG 'cluster' is malformed: Task address 1"),
        ({**_TF_CONFIG, "task": "worker"}, "TF_CONFIG 'task' must be an object"),
        ({**_TF_CONFIG, "task": {"type": 1, "index": 0}}, "'type' must be a string"),
        ({**_TF_CONFIG, "task": {"type": "worker", "index": "one"}}, "must be an integer"),
        ({**_TF_CONFIG, "task": {"type": "worker", "index": True}}, "must be an integer"),
        ({**_TF_CONFIG, "task": {"type": "worker", "index": 1.5}}, "must be an integer"),
        ({**_TF_CONFIG, "task": {"type": "worker", "index": -1}}, "must be >= 0"),
        ({**_TF_CONFIG, "task": {"type": "wroker", "index": 0}}, "'wroker' is not a job"),
        ({**_TF_CONFIG, "task": {"type": "worker", "index": 2}}, "index 2 is not a task"),
    ],
)
def test_tf_config_malformed_raises_value_error(config, message):
    with pytest.raises(ValueError, match=message):
        cluster_from_tf_config(config)


@pytest.mark.parametrize(
    "address, words",
    [
        ("localhost", "'localhost' for /job:ps/task:0 in the cluster spec: it is not 'host:port'"),
        ("localhost:99999", "port 99999 is not from 0 to 65535"),
        (":2222", "it is not 'host:port'"),
        ("localhost:http", "it is not 'host:port'"),
    ],
)
def test_an_address_that_cannot_be_served_is_refused_when_the_spec_is_built(address, words):
    with pytest.raises(ValueError) as raised:
        ClusterSpec({"ps": [address]})
    assert words in str(raised.value)
