"""The asynchronous example's worker gives up waiting for a chief that never comes."""

import pytest

import minitf as tf
from minitf.examples import async_mlp
from minitf.runtime.distributed.launcher import LocalCluster

pytestmark = pytest.mark.timeout(60)


def test_a_worker_whose_chief_never_initializes_says_so_within_its_bound():
    with LocalCluster({"ps": 1, "worker": 2}) as cluster:
        with tf.device("/job:ps/task:0"):
            tf.Variable(1.0, name="weights")
        with tf.Session(cluster.target("worker", 1)) as sess:
            with pytest.raises(RuntimeError, match=r"after 0.3 s .*\['weights'\]"):
                async_mlp.wait_for_initialization(sess, timeout=0.3)
