"""One script, every launcher: a task reads the same role from its own command line.

The script parses ``sys.argv`` one of the three ways TF1 scripts do —
``argparse`` (TF's distributed guide), ``tf.app.flags`` read directly, and
``tf.app.run`` with a ``main`` — and prints the role it found. Under
``minitf launch`` (a process per task), ``minitf launch --simulate`` and
``SimulatedCluster.run`` (a thread per task) every task must find its own
job and index, the same cluster and the script's own flag, and build that
cluster (a worker runs an op on the ps); what TF's launchers give a task is
its role on the command line.
"""

import io
import json
import subprocess
import sys
import textwrap

import pytest

from minitf.cluster import SimulatedCluster

pytestmark = pytest.mark.timeout(120)

PARSE = {
    "argparse": """
        import argparse
        parser = argparse.ArgumentParser()
        for name in ("job_name", "ps_hosts", "worker_hosts", "tag"):
            parser.add_argument("--" + name, default="")
        parser.add_argument("--task_index", type=int, default=-1)
        args = parser.parse_args()
        report(args.job_name, args.task_index, args.ps_hosts, args.worker_hosts, args.tag)
        """,
    "flags": """
        define()
        FLAGS = tf.app.flags.FLAGS
        report(FLAGS.job_name, FLAGS.task_index, FLAGS.ps_hosts, FLAGS.worker_hosts, FLAGS.tag)
        """,
    "app.run": """
        define()
        FLAGS = tf.app.flags.FLAGS

        def main(argv):
            report(FLAGS.job_name, FLAGS.task_index, FLAGS.ps_hosts, FLAGS.worker_hosts,
                   FLAGS.tag)

        tf.app.run()
        """,
}

COMMON = """
import json
import minitf as tf


def define():
    for name in ("job_name", "ps_hosts", "worker_hosts", "tag"):
        tf.app.flags.DEFINE_string(name, "", "")
    tf.app.flags.DEFINE_integer("task_index", -1, "")


def report(job, index, ps_hosts, worker_hosts, tag):
    hosts = {"ps": len(ps_hosts.split(",")) if ps_hosts else 0,
             "worker": len(worker_hosts.split(","))}
    print("ROLE " + json.dumps([job, index, hosts, tag]), flush=True)
    # Then the cluster those flags describe, as a TF1 script builds it: a worker
    # runs an op on the ps (so the ps has reported before any worker ends).
    cluster = tf.train.ClusterSpec({"ps": ps_hosts.split(","), "worker": worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
    with tf.device("/job:ps/task:0"):
        one = tf.constant(1.0)
    with tf.Session(server.target) as sess:
        assert sess.run(one) == 1.0
"""


def _roles(text: str) -> list:
    """The roles the tasks printed, whatever prefix a launcher puts before a line."""
    found = [json.loads(line.split("ROLE ", 1)[1]) for line in text.splitlines() if "ROLE " in line]
    return sorted(found, key=lambda role: (role[0], role[1]))


EXPECTED = [
    ["ps", 0, {"ps": 1, "worker": 2}, "mine"],
    ["worker", 0, {"ps": 1, "worker": 2}, "mine"],
    ["worker", 1, {"ps": 1, "worker": 2}, "mine"],
]


LAUNCHERS = ["minitf launch", "minitf launch --simulate", "SimulatedCluster.run"]


@pytest.mark.parametrize("parser", sorted(PARSE))
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_same_script_finds_the_same_role_under_every_launcher(tmp_path, parser, launcher):
    script = tmp_path / "role.py"
    script.write_text(COMMON + textwrap.dedent(PARSE[parser]))
    if launcher == "SimulatedCluster.run":
        output = io.StringIO()
        main, argv = sys.modules["__main__"], list(sys.argv)
        SimulatedCluster({"ps": 1, "worker": 2}).run(str(script), ["--tag=mine"], output=output)
        text = output.getvalue()
        # The tasks ran at once in threads; the process is still this one's
        # (a process it spawns runs this __main__, not the script).
        assert sys.modules["__main__"] is main and sys.argv == argv
    else:
        simulate = ["--simulate"] if "--simulate" in launcher else []
        done = subprocess.run(
            [sys.executable, "-m", "minitf.cli", "launch", *simulate, "--ps", "1", "--workers", "2",
             str(script), "--", "--tag=mine"],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        text = done.stdout
    assert _roles(text) == EXPECTED, text[-2000:]
