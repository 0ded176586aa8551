"""LocalCluster: task processes, their roles, failures across processes, and no orphans.

These tests start real processes on loopback. They wait for processes with
``os.pidfd_open`` + ``select`` (an event, not a sleep) and kill only the
processes they started, by PID.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import minitf as tf
from minitf.cluster import LocalCluster
from minitf.runtime.distributed.launcher import free_ports
from tests.processes import process_gone as wait_for_exit

pytestmark = pytest.mark.timeout(90)


def test_tasks_get_their_role_in_flags_and_tf_config(tmp_path):
    script = tmp_path / "role.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, os, sys
            role = {"argv": sys.argv[1:], "tf_config": json.loads(os.environ["TF_CONFIG"])}
            role["secret"] = bool(os.environ.get("MINITF_CLUSTER_SECRET"))
            print(json.dumps(role))
            """
        )
    )
    lines = []

    class Sink:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    cluster = LocalCluster({"worker": 2}, script=str(script), args=["--extra"], output=Sink())
    cluster.start()
    assert cluster.wait(60) == 0
    outputs = {}
    for line in lines:
        prefix, _, payload = line.partition(" ")
        outputs[prefix] = json.loads(payload)
    assert sorted(outputs) == ["[worker/0]", "[worker/1]"]
    one = outputs["[worker/1]"]
    hosts = ",".join(cluster.cluster_spec.as_dict()["worker"])
    assert one["argv"] == [
        "--job_name=worker",
        "--task_index=1",
        f"--worker_hosts={hosts}",
        "--extra",
    ]
    assert one["tf_config"]["task"] == {"type": "worker", "index": 1}
    assert one["tf_config"]["cluster"] == cluster.cluster_spec.as_dict()
    assert one["secret"]


def test_a_failing_worker_stops_the_cluster_and_reports_its_code(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        "import sys, time\nif '--job_name=worker' in sys.argv: sys.exit(3)\ntime.sleep(600)\n"
    )
    cluster = LocalCluster({"ps": 1, "worker": 1}, script=str(script), output=None)
    cluster.start()
    ps_pid = cluster.pid("ps", 0)
    assert cluster.wait(60) == 3
    assert wait_for_exit(ps_pid, 10)


def test_a_task_that_dies_mid_step_fails_the_step_with_unavailable():
    with LocalCluster({"ps": 1, "worker": 1}, output=None) as cluster:
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(10, tf.float32)
        with tf.Session(cluster.target("worker", 0)) as sess:
            outcome = []

            def blocked():
                try:
                    sess.run(q.dequeue())
                except tf.errors.OpError as exc:
                    outcome.append(exc)

            waiter = threading.Thread(target=blocked)
            waiter.start()
            # Make sure the dequeue reached the ps before killing it: a size
            # query on the ps answers only after the ps served earlier requests.
            sess.run(q.size())
            os.kill(cluster.pid("ps", 0), signal.SIGKILL)
            waiter.join(30)
            assert not waiter.is_alive()
            assert isinstance(outcome[0], (tf.errors.UnavailableError, tf.errors.AbortedError))


def test_killing_the_launcher_leaves_no_task_behind(tmp_path):
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from minitf.cluster import LocalCluster\n"
            "c = LocalCluster({'ps': 1, 'worker': 1}, output=None).start()\n"
            "print(c.pid('ps', 0), c.pid('worker', 0), flush=True)\n"
            "import time; time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = [int(p) for p in launcher.stdout.readline().split()]
        assert len(pids) == 2
        launcher.kill()
        launcher.wait(10)
        for pid in pids:
            assert wait_for_exit(pid, 15), f"task {pid} outlived its launcher"
    finally:
        if launcher.poll() is None:
            launcher.kill()


TOLD_TWICE = """
import os, signal, sys
from minitf.runtime.distributed import server, task

forget = server.stop_serving_in_process


def told_again(*args):  # inside Server.stop, which holds the server's lock here
    os.kill(os.getpid(), signal.SIGTERM)
    return forget(*args)


server.stop_serving_in_process = told_again
sys.exit(task.main(sys.argv[1:]))
"""


def test_a_task_told_to_stop_again_while_it_stops_exits(tmp_path):
    # A task whose launcher dies can get SIGTERM twice. The second one used to
    # run the stop again inside the first, which waited for the lock that the
    # first held: the task never exited.
    script = tmp_path / "told_twice.py"
    script.write_text(TOLD_TWICE)
    (port,) = free_ports(1)
    task = subprocess.Popen(
        [sys.executable, str(script), "--job_name=ps", "--task_index=0"]
        + [f"--ps_hosts=127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MINITF_LOG_LEVEL": "INFO"},
    )
    try:
        for line in task.stderr:
            if "serving /job:ps/task:0" in line:
                break
        task.send_signal(signal.SIGTERM)
        try:
            assert task.wait(15) == 0
        except subprocess.TimeoutExpired:
            pytest.fail("the task, told to stop twice, never exited")
    finally:
        if task.poll() is None:
            task.kill()
            task.wait(10)


def test_minitf_launch_runs_a_script_until_the_workers_finish(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text(
        "import sys, time\n"
        "if '--job_name=ps' in sys.argv:\n    time.sleep(600)\n"
        "print('hello from', [a for a in sys.argv if a.startswith('--task_index')][0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "launch", "--ps", "1", "--workers", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "[worker/0] hello from --task_index=0" in done.stdout
    assert "[worker/1] hello from --task_index=1" in done.stdout


def test_minitf_launch_interrupted_twice_stops_its_tasks_once_and_exits(tmp_path):
    script = tmp_path / "forever.py"
    script.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(600)\n")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "minitf.cli", "launch", "--ps", "1", "--workers", "1", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = []
        for line in launcher.stdout:
            if " pid " in line:
                pids.append(int(line.split()[-1]))
            if len(pids) == 2:
                break
        launcher.send_signal(signal.SIGINT)  # Ctrl-C, and again at once
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(30) == 128 + signal.SIGINT
        for pid in pids:
            assert wait_for_exit(pid, 15), f"task {pid} outlived an interrupted launch"
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(10)


_SHARED_SCRIPT = textwrap.dedent(
    """
    import json, os
    import minitf as tf
    config = json.loads(os.environ["TF_CONFIG"])
    job, index = config["task"]["type"], config["task"]["index"]
    server = tf.train.Server(config["cluster"], job_name=job, task_index=index)
    if job == "ps":
        server.join()
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.int32, shapes=[[]], shared_name="shared_q")
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="shared_acc")
    with tf.Session(server.target) as sess:
        sess.run(q.enqueue_many([[10 * index + 1, 10 * index + 2]]))
        sess.run(acc.apply_grad([float(index), 2.0 * index]))
    server.stop()
    """
)


def test_two_worker_processes_reach_one_shared_queue_and_accumulator(tmp_path):
    script = tmp_path / "shared.py"
    script.write_text(_SHARED_SCRIPT)
    cluster = LocalCluster({"ps": 1, "worker": 2}, script=str(script), output=None)
    with cluster:
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(10, tf.int32, shapes=[[]], shared_name="shared_q")
            acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="shared_acc")
        with tf.Session(cluster.target("ps", 0)) as sess:
            got = sess.run(q.dequeue_many(4), options=tf.RunOptions(timeout_in_ms=60000))
            mean = sess.run(acc.take_grad(2), options=tf.RunOptions(timeout_in_ms=60000))
        assert cluster.wait(60) == 0
    assert sorted(got.tolist()) == [1, 2, 11, 12]
    assert mean.tolist() == [0.5, 1.0]  # the mean of [0, 0] and [1, 2]


_TASK_HEADER = textwrap.dedent(
    """
    import json, os
    import minitf as tf
    config = json.loads(os.environ["TF_CONFIG"])
    job, index = config["task"]["type"], config["task"]["index"]
    server = tf.train.Server(config["cluster"], job_name=job, task_index=index)
    if job == "ps":
        server.join()
    """
)
"""A task script's start: its server from ``TF_CONFIG``; a ps serves until killed."""

_COUNTER_SCRIPT = _TASK_HEADER + textwrap.dedent(
    """
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 1)
    with tf.Session(server.target) as sess:
        if index == 0:
            sess.run(counter.initializer)
        while not sess.run(tf.is_variable_initialized(counter)):
            pass
        print("running", flush=True)
        while sess.run(bump) < 3000:
            pass
    print("finished", flush=True)
    """
)


def test_killing_one_async_worker_lets_the_other_finish(tmp_path):
    script = tmp_path / "counter.py"
    script.write_text(_COUNTER_SCRIPT)
    both_running, finished = threading.Event(), threading.Event()
    seen = []

    class Sink:
        def write(self, text):
            seen.extend(text.splitlines())
            if sum("running" in line for line in seen) == 2:
                both_running.set()
            if "[worker/0] finished" in seen:
                finished.set()

        def flush(self):
            pass

    with LocalCluster({"ps": 1, "worker": 2}, script=str(script), output=Sink()) as cluster:
        assert both_running.wait(60)
        os.kill(cluster.pid("worker", 1), signal.SIGKILL)
        assert wait_for_exit(cluster.pid("worker", 0), 60)
        codes = cluster.poll()
        assert codes[("worker", 0)] == 0 and codes[("worker", 1)] == -signal.SIGKILL
        assert finished.wait(10)


def test_free_ports_are_distinct_bindable_and_outside_the_ephemeral_range():
    import random
    import socket

    from minitf.runtime.distributed.launcher import free_ports

    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = (int(field) for field in f.read().split())
    ports = free_ports(50, rng=random.Random(0))
    assert len(set(ports)) == 50
    for port in ports:
        assert not low <= port <= high and not 49152 <= port <= 65535
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free


def test_minitf_ports_limits_the_ports_chosen_and_a_bad_range_says_how_to_write_it(monkeypatch):
    from minitf.runtime.distributed.launcher import PORTS_ENV, free_ports

    monkeypatch.setenv(PORTS_ENV, "20000-20009")
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(20000 <= port <= 20009 for port in ports)
    with pytest.raises(
        OSError, match=r"found only \d+ of 11 free ports .* MINITF_PORTS=20000-20009"
    ):
        free_ports(11)
    for value in ("20000", "b-a", "30000-20000", "0-10", "1-70000"):
        monkeypatch.setenv(PORTS_ENV, value)
        with pytest.raises(ValueError, match="is not a range of ports: write LOW-HIGH"):
            free_ports(1)


def test_jobs_start_one_at_a_time_and_not_twice():
    cluster = LocalCluster({"ps": 1, "worker": 1}, output=None)
    with pytest.raises(ValueError, match="nope"):
        cluster.start(jobs=["nope"])
    try:
        cluster.start(jobs=["ps"])
        assert set(cluster.poll()) == {("ps", 0)}  # no worker yet
        with pytest.raises(ValueError, match="already started"):
            cluster.start(jobs=["ps"])
        cluster.start(jobs=["worker"])
        assert set(cluster.poll()) == {("ps", 0), ("worker", 0)}
    finally:
        cluster.stop()


_TRACED_SCRIPT = _TASK_HEADER + textwrap.dedent(
    """
    with tf.device("/job:ps/task:0"):
        go = tf.Variable(0, name="go")
        counter = tf.Variable(3.0, name="counter")
    with tf.device("/job:worker/task:0"):
        doubled = counter.value() * 2.0
    ready = tf.is_variable_initialized(go)
    with tf.Session(server.target) as sess:
        while not sess.run(ready) or not sess.run(go):  # the test says when
            pass
        for _ in range(5):
            sess.run(doubled)
    print("finished", flush=True)
    server.stop()  # as a worker script does when training ends
    """
)


class _Lines:
    """An output stream for LocalCluster that sets ``finished`` when a task prints it."""

    def __init__(self):
        self.finished = threading.Event()

    def write(self, text: str) -> None:
        if "finished" in text:
            self.finished.set()

    def flush(self) -> None:
        pass


def test_a_task_that_ends_while_traced_waits_for_the_tracer_to_collect(tmp_path):
    from minitf.viz import Tracer

    script = tmp_path / "traced.py"
    script.write_text(_TRACED_SCRIPT)
    lines = _Lines()
    cluster = LocalCluster({"ps": 1, "worker": 1}, script=str(script), output=lines)
    with tf.device("/job:ps/task:0"):
        go = tf.Variable(0, name="go")
        counter = tf.Variable(3.0, name="counter")
    try:
        cluster.start()
        with tf.Session(cluster.target("ps", 0)) as sess:
            sess.run([go.initializer, counter.initializer])
            tracer = Tracer(sess).start()
            sess.run(tf.assign(go, 1))
            assert lines.finished.wait(60)  # its script is over: the process is exiting
            stats = tracer.stop()
        assert cluster.wait(60) == 0
    finally:
        cluster.stop()
    worker = [d for d in stats["dev_stats"] if "/job:worker/" in d["device"]]
    assert worker and any(n["op"] == "Mul" for n in worker[0]["node_stats"])


def test_tasks_started_from_a_thread_that_ends_live_on():
    # Linux ends a task when the *thread* that started it exits (the task asks
    # to die with its parent): a stepper page's request thread going back
    # started tasks that died with it. They are started by one thread that
    # lives as long as the process.
    cluster = LocalCluster({"ps": 1, "worker": 1}, output=None)
    starter = threading.Thread(target=cluster.start)
    starter.start()
    starter.join(60)
    try:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(3.0)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            assert sess.run(v) == 3.0
        for job in ("ps", "worker"):
            with pytest.raises(subprocess.TimeoutExpired):  # alive a second later still
                cluster._procs[(job, 0)].wait(timeout=1.0)
    finally:
        cluster.stop()


def test_a_task_that_waits_says_where_each_of_its_threads_is(tmp_path):
    # What a run that does not end shows: every thread's stack, in the task's output.
    lines, started = [], threading.Event()

    class Sink:
        def write(self, text):
            lines.append(text)
            if "waiting" in text:
                started.set()

        def flush(self):
            pass

    script = tmp_path / "hung.py"
    script.write_text(
        "import threading\nimport minitf\nprint('waiting', flush=True)\n"
        "threading.Event().wait(60)  # a hung task\n"
    )
    with LocalCluster({"worker": 1}, script=str(script), output=Sink()) as cluster:
        assert started.wait(30)
        cluster.dump_stacks()
    text = "".join(lines)
    assert "[worker/0] Thread" in text or "[worker/0] Current thread" in text, text[-2000:]
    assert "File " in text and "<module>" in text  # the main thread, in the script's wait
