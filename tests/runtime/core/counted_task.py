"""A task of `examples/sync_mlp.py` whose server counts every op its executor moves.

Run by `tests/runtime/core/test_one_core.py` through `LocalCluster` (one process
per task). Each task's server gets a `CountingScheduler`, which writes what
it has counted to ``$MINITF_TEST_COUNTS/<job>-<index>.json`` after each step
(a ps task never exits on its own: the launcher ends it).
"""

import json
import os
import sys
import threading

from minitf.examples import sync_mlp
from minitf.runtime.core.scheduler import RUN, FifoScheduler
from minitf.runtime.distributed import server as server_lib


class CountingScheduler(FifoScheduler):
    """The free-running order, counting the ops each move runs and the ops each step planned.

    For every step that ends with all its ops done: ``planned`` adds the
    number of ops in its plan, ``moved`` the ops its RUN moves ran (one for
    a move of one op, all of a straight walk's for a walk).
    """

    def __init__(self):
        # A task finishes steps on several threads at once (its loop, a
        # connection's reader, a runner): the counts and their file are shared.
        self._lock = threading.Lock()
        self.path = None
        self.moved = 0
        self.planned = 0
        self.steps = 0
        self.units = 0
        self._moved_by_step: dict[int, int] = {}

    def next_move(self, execution):
        move = super().next_move(execution)
        if move is not None and move[0] == RUN:
            key, ops = id(execution), len(execution.units[move[1]].ops)
            with self._lock:
                self._moved_by_step[key] = self._moved_by_step.get(key, 0) + ops
        return move

    def finished(self, execution):
        with self._lock:
            self._tally(execution)

    def _tally(self, execution):
        moved = self._moved_by_step.pop(id(execution), 0)
        if execution.finished and execution.done_ops == len(execution.steps):
            self.steps += 1
            self.planned += len(execution.steps)
            self.moved += moved
            self.units += len(execution.units)
            self._write()

    def _write(self) -> None:
        counts = {"moved": self.moved, "planned": self.planned, "steps": self.steps,
                  "units": self.units}  # fmt: skip
        with open(self.path + ".new", "w") as f:
            json.dump(counts, f)
        os.replace(self.path + ".new", self.path)


def main() -> int:
    counter = CountingScheduler()
    made = server_lib.Server.__init__

    def counted(self, *args, **kwargs):
        kwargs["scheduler"] = counter
        made(self, *args, **kwargs)
        name = self.task_name.split("/")
        job, index = name[1].split(":")[1], name[3].split(":")[1]
        counter.path = os.path.join(os.environ["MINITF_TEST_COUNTS"], f"{job}-{index}.json")

    server_lib.Server.__init__ = counted
    return sync_mlp.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
