"""A bare task process: ``python -m minitf.runtime.distributed.task --job_name=ps ...``.

Starts the `Server` of one task of the cluster described by its TF1-style
arguments (``--<job>_hosts=host:port,...``) or by ``TF_CONFIG``, and serves
until it is stopped (SIGTERM or SIGINT). Like a script's server, it takes
a stepper's scheduler or straggler delays from the environment the launcher
gave it (`minitf.cluster.task_env`, installed by ``import minitf``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys

from minitf.platform.log_config import LOG_LEVEL_ENV, configure_logging
from minitf.runtime.distributed.server import Server


def parse_role(argv: list[str]) -> tuple[dict, str, int]:
    """``(cluster dict, job name, task index)`` from TF1 flags, else from ``TF_CONFIG``.

    Args:
        argv: The command line, without the program name.

    Raises:
        SystemExit: if neither describes a task.
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--job_name")
    parser.add_argument("--task_index", type=int)
    args, rest = parser.parse_known_args(argv)
    cluster = {}
    for arg in rest:
        name, _, value = arg.lstrip("-").partition("=")
        if name.endswith("_hosts") and value:
            cluster[name[: -len("_hosts")]] = value.split(",")
    if args.job_name and args.task_index is not None and cluster:
        return cluster, args.job_name, args.task_index
    config = os.environ.get("TF_CONFIG")
    if config:
        parsed = json.loads(config)
        return parsed["cluster"], parsed["task"]["type"], int(parsed["task"]["index"])
    parser.error("give --job_name, --task_index and --<job>_hosts, or set TF_CONFIG")
    raise AssertionError  # parser.error exits


def main(argv: list[str] | None = None) -> int:
    """Runs one task's server until SIGTERM/SIGINT.

    Args:
        argv: The command line, without the program name (default: ``sys.argv[1:]``).
    """
    configure_logging(os.environ.get(LOG_LEVEL_ENV) or "INFO")
    cluster, job, index = parse_role(sys.argv[1:] if argv is None else argv)
    # A stop signal is only noted (its number written to a pipe, on whichever
    # thread it comes); the main thread reads it and stops the server once. A
    # handler that stopped the server itself would run again inside that stop
    # at a second signal (a task whose launcher dies can be told twice) and
    # wait there for the lock the stop holds.
    noted, note = os.pipe()
    os.set_blocking(note, False)
    signal.set_wakeup_fd(note)
    stops = {signal.SIGTERM, signal.SIGINT}
    for number in stops:
        signal.signal(number, lambda signum, frame: None)
    server = Server(cluster, job_name=job, task_index=index)
    logging.getLogger("minitf").info("serving /job:%s/task:%d at %s", job, index, server.target)
    while os.read(noted, 1)[0] not in stops:
        pass  # another signal's note
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
