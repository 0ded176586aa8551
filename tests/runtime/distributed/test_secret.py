"""A cluster secret that works out of the box: one file per user, owner-only.

Two processes of one user started by hand, as every TF1 tutorial starts a
cluster, find each other with no environment variable; a process with
another user's secret is refused.
"""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(60)

SERVER = """
import sys
import minitf as tf
spec = tf.train.ClusterSpec({"ps": [sys.argv[1]]})
server = tf.train.Server(spec, job_name="ps", task_index=0)
print("serving", flush=True)
server.join()
"""

CLIENT = """
import sys
import minitf as tf
with tf.device("/job:ps/task:0"):
    v = tf.constant(20.0) * 2.0 + 2.0
try:
    with tf.Session("grpc://" + sys.argv[1]) as sess:
        print("value", sess.run(v))
except tf.errors.UnavailableError as exc:
    print("refused", exc.message)
"""


def _env(secret_file) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MINITF_CLUSTER_SECRET"}
    env["MINITF_SECRET_FILE"] = str(secret_file)
    env["MINITF_CONNECT_TIMEOUT"] = "3"
    return env


def _script(tmp_path, name, text) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_two_processes_of_one_user_share_the_secret_file_and_others_are_refused(tmp_path):
    (port,) = free_ports(1)
    address = f"127.0.0.1:{port}"
    mine = tmp_path / "home" / ".minitf" / "cluster-secret"
    server = subprocess.Popen(
        [sys.executable, _script(tmp_path, "server.py", SERVER), address],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(mine),
    )  # fmt: skip
    try:
        assert server.stdout.readline().strip() == "serving"
        # Made on first use, readable by its owner only.
        assert stat.S_IMODE(mine.stat().st_mode) == 0o600
        client = _script(tmp_path, "client.py", CLIENT)
        same_user = subprocess.run(
            [sys.executable, client, address], capture_output=True, text=True, env=_env(mine),
            timeout=30,
        )  # fmt: skip
        assert same_user.stdout.strip() == "value 42.0", same_user.stderr
        other_user = subprocess.run(
            [sys.executable, client, address], capture_output=True, text=True,
            env=_env(tmp_path / "other" / "cluster-secret"), timeout=30,
        )  # fmt: skip
        assert other_user.stdout.startswith("refused"), other_user.stderr
        assert "refused this process" in other_user.stdout
    finally:
        server.kill()
        server.wait(10)


def test_a_secret_file_others_can_read_is_refused_with_how_to_fix_it(tmp_path):
    loose = tmp_path / "cluster-secret"
    loose.write_text("0123456789abcdef\n")
    loose.chmod(0o644)
    done = subprocess.run(
        [sys.executable, "-c",
         "from minitf.runtime.distributed import connect; connect.cluster_secret()"],
        capture_output=True, text=True, env=_env(loose), timeout=30,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"chmod 600 {loose}" in done.stderr


def _racer(path: str, start, out) -> None:
    """One of several processes that start at once on a fresh secret file."""
    from minitf.runtime.distributed import connect

    os.environ["MINITF_SECRET_FILE"] = path
    start.wait(10)
    out.put(connect._user_secret())


def test_processes_racing_on_a_fresh_secret_file_all_read_the_one_secret(tmp_path):
    # Each round, three processes released by one barrier read a secret file that
    # does not exist yet: exactly one secret is made, and all three read it.
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for round_ in range(60):
        path = str(tmp_path / f"round{round_}" / "cluster-secret")
        start, out = context.Barrier(3), context.Queue()
        racers = [context.Process(target=_racer, args=(path, start, out)) for _ in range(3)]
        for racer in racers:
            racer.start()
        try:
            found = {out.get(timeout=20) for _ in racers}
        finally:
            for racer in racers:
                racer.join(20)
                if racer.is_alive():
                    racer.kill()
        assert len(found) == 1, (round_, found)
        assert open(path, "rb").read().strip() == found.pop()
        assert os.listdir(os.path.dirname(path)) == ["cluster-secret"]  # no file left over


def test_a_reader_waits_for_a_secret_file_being_written_and_never_makes_its_own(tmp_path):
    import threading

    from minitf.runtime.distributed import connect

    path = tmp_path / "cluster-secret"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # made, still empty
    read = {}
    reader = threading.Thread(target=lambda: read.update(secret=connect._read_secret_file(path)))
    reader.start()
    with os.fdopen(fd, "w") as f:
        f.write("0123456789abcdef")
        f.flush()
        assert reader.is_alive() or read == {}  # half a secret is not read as one
        f.write("0123456789abcdef\n")
    reader.join(10)
    assert read["secret"] == b"0123456789abcdef0123456789abcdef"
