"""Helpers for a tutorial that is both a script and a notebook.

The tutorials in ``tutorials/`` are jupytext ``py:percent`` files: ``python
tutorials/05_a_parameter_server_by_hand.py`` runs one, and Jupyter (or the
docs site) opens the same file as a notebook. Three things differ between the
two and are handled here:

- `quick`: the test suite and the docs build set ``MINITF_QUICK=1`` so that
  every tutorial runs at a small size; a reader gets the full one;
- `out_dir`: where a tutorial writes its pictures (``MINITF_OUT``, else
  ``minitf_out/<tutorial>`` under the working directory);
- `show`: a picture, a plot or a file is displayed inline in a notebook and
  named by its path in a terminal.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

QUICK_VARIABLE = "MINITF_QUICK"
OUT_VARIABLE = "MINITF_OUT"


def quick() -> bool:
    """Whether to run at the small size used in CI (``MINITF_QUICK`` set and not ``0``).

    Returns:
        True when the environment variable ``MINITF_QUICK`` is set to anything but
        ``""`` or ``"0"``.
    """
    return os.environ.get(QUICK_VARIABLE, "") not in ("", "0")


def sized(full, small):
    """``small`` when `quick`, else ``full``: ``steps = sized(200, 20)``.

    Args:
        full: The value a reader's run uses.
        small: The value for CI and the docs build.

    Returns:
        One of the two.
    """
    return small if quick() else full


def out_dir(name: str) -> Path:
    """The directory a tutorial writes its pictures to, created if missing.

    Args:
        name: The tutorial's short name, e.g. ``"05_parameter_server"``.

    Returns:
        The absolute path of ``$MINITF_OUT/<name>`` when ``MINITF_OUT`` is set,
        else of ``minitf_out/<name>`` under the working directory.
    """
    root = Path(os.environ.get(OUT_VARIABLE) or "minitf_out")
    path = (root / name).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (rather than as a script).

    Returns:
        True inside IPython's kernel, False in a plain interpreter or IPython's terminal.
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"


def show(thing, caption: str | None = None) -> None:
    """Shows a picture inline in a notebook; in a terminal, prints where it is.

    Args:
        thing: A `minitf.viz.render.GraphPicture`, a matplotlib figure, or the path
            of an ``.svg`` or ``.png`` file.
        caption: A line printed above it (optional).

    Raises:
        TypeError: if ``thing`` is none of the kinds above.
        FileNotFoundError: if ``thing`` is a path that does not exist.
    """
    if caption:
        print(caption)
    if isinstance(thing, (str, Path)):
        path = Path(thing)
        if not path.exists():
            raise FileNotFoundError(f"show(): no file {path}")
        if path.suffix not in (".svg", ".png"):
            raise TypeError(f"show(): {path} is not an .svg or .png file")
        if in_notebook():
            from IPython.display import SVG, Image, display

            display(SVG(filename=str(path)) if path.suffix == ".svg" else Image(filename=str(path)))
        else:
            print(f"  picture: {path}")
        return
    is_figure = hasattr(thing, "savefig")
    if not is_figure and not hasattr(thing, "_repr_mimebundle_"):
        raise TypeError(
            "show() takes a picture, a matplotlib figure or a file path, "
            f"not {type(thing).__name__}"
        )
    if in_notebook():
        from IPython.display import Image, display

        if not is_figure:
            display(thing)
            return
        # As PNG bytes: a figure made without pyplot (`plot_timeline`'s) has no
        # inline formatter, and IPython would show only its repr.
        png = io.BytesIO()
        thing.savefig(png, format="png", bbox_inches="tight")
        display(Image(data=png.getvalue()))
        if "matplotlib.pyplot" in sys.modules:  # the inline backend would draw it again
            sys.modules["matplotlib.pyplot"].close(thing)
    elif is_figure:
        print("  (a plot: run this tutorial as a notebook to see it, or save it with .savefig)")
    else:
        print("  (a picture: run this tutorial as a notebook to see it, or save it with .save)")
