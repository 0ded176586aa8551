"""Every tutorial is a script that must run to completion."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

TUTORIALS = sorted((Path(__file__).parent.parent / "tutorials").glob("[0-9][0-9]_*.py"))


def test_there_are_tutorials():
    assert TUTORIALS


@pytest.mark.parametrize("script", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(script, tmp_path):
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=100, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
