"""docs/reading-order.md: the files that follow one SyncReplicas global step, kept true.

The page lists, in order, the files a student reads to follow one global
step of ``examples/sync_mlp.py`` from ``sess.run`` on a worker to the
accumulator kernel on the ps and back. This test holds the page to the
code: every file it lists exists, none is a speed-up, the path passes
through each stage of the step, and the total the page states is the
files' real line count, at most 5,000.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reading-order.md"
LIMIT = 5000

# Each file of the path is a numbered item that starts with its path in backticks.
ITEM = re.compile(r"^\d+\.\s+\*\*`(minitf/[\w/]+\.py)`\*\*", re.M)
TOTAL = re.compile(r"\*\*([\d,]+) lines\*\* in all")


def _listed() -> list[str]:
    return ITEM.findall(PAGE.read_text())


def _lines(path: str) -> int:
    return len((ROOT / path).read_text().splitlines())


def test_every_listed_file_exists_once():
    files = _listed()
    assert len(files) >= 8, files
    assert len(set(files)) == len(files), "a file is listed twice"
    for path in files:
        assert (ROOT / path).is_file(), f"{path} is listed in reading-order.md but does not exist"


def test_the_path_includes_no_speed_up():
    for path in _listed():
        assert "/speedups/" not in path, f"{path} is a speed-up: the reading path leaves them out"


def test_the_path_goes_from_the_session_through_the_transport_to_the_accumulator_kernel():
    files = _listed()
    stages = [
        "minitf/runtime/core/session.py",
        "minitf/runtime/distributed/master.py",
        "minitf/runtime/distributed/partition.py",
        "minitf/runtime/distributed/worker.py",
        "minitf/runtime/core/executor.py",
        "minitf/runtime/core/execution.py",
        "minitf/ops/data_flow/conditional_accumulator_kernels.py",
    ]
    for stage in stages:
        assert stage in files, f"the reading path skips {stage}"
    positions = [files.index(stage) for stage in stages]
    assert positions == sorted(positions), "the path must follow the step in order"


def test_the_stated_total_is_the_real_line_count_and_within_the_limit():
    stated = TOTAL.search(PAGE.read_text())
    assert stated, "reading-order.md must state the total: **N lines** in all"
    total = sum(_lines(path) for path in _listed())
    assert int(stated.group(1).replace(",", "")) == total, (
        f"reading-order.md says {stated.group(1)} lines; the files have {total}"
    )
    assert total <= LIMIT, f"the reading path is {total} lines, more than {LIMIT}"
