"""Every tutorial runs as a script at its small size, opens as a notebook, and is on the site."""

import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext  # installed by the docs extra, as ./run does
import pytest

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
IDS = [p.stem for p in TUTORIALS]


def test_there_are_twelve_tutorials_numbered_in_order():
    numbers = [int(p.name[:2]) for p in TUTORIALS]
    assert numbers == list(range(1, 13))


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_tutorial_runs_as_a_script(script, tmp_path):
    env = dict(os.environ, MINITF_QUICK="1", MINITF_OUT=str(tmp_path / "out"))
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=220,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_tutorial_is_a_notebook_with_a_title_that_ends_by_showing_something(script):
    nb = jupytext.read(script)
    cells = nb.cells
    assert len(cells) >= 4, "a tutorial is cut into cells with '# %%'"
    assert cells[0].cell_type == "markdown"
    number = int(script.name[:2])
    assert re.match(rf"# {number}\. \S", cells[0].source), "it opens with '# N. Title'"
    code = [c.source for c in cells if c.cell_type == "code"]
    # The concept is shown at the end: a picture, a plot or a stepped sequence.
    assert re.search(r"notebook\.show\(|stepper\.|\.next\(\)", code[-1] + code[-2]), code[-1]


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_tutorial_is_on_the_site_and_in_the_index(script):
    assert f"tutorials/{script.name}" in (ROOT / "mkdocs.yml").read_text()
    assert script.name in (ROOT / "tutorials" / "README.md").read_text()
