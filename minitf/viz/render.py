"""Writing pictures: DOT text always, SVG/PNG/PDF when Graphviz's ``dot`` is installed.

`write` saves ``<path>.dot`` and runs ``dot`` for each requested format; when
``dot`` is missing it says how to install it and keeps the DOT text, which
any Graphviz viewer opens. `GraphPicture` wraps DOT text so that Jupyter
shows it inline (``_repr_svg_``).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

logger = logging.getLogger("minitf")

INSTALL_HINT = (
    "Graphviz 'dot' not found: wrote DOT text only. Install it with 'apt-get install graphviz' "
    "(Debian/Ubuntu) or 'brew install graphviz' (macOS) to get SVG and PNG files."
)


def dot_available() -> bool:
    """Whether Graphviz's ``dot`` program is on the PATH.

    Returns:
        True if it is.
    """
    return shutil.which("dot") is not None


def to_format(dot_text: str, fmt: str, timeout: float = 60.0) -> bytes:
    """Renders DOT text with ``dot -T<fmt>``.

    Args:
        dot_text: The picture's DOT source.
        fmt: A Graphviz output format: ``"svg"``, ``"png"``, ``"pdf"``...
        timeout: Seconds to wait for ``dot``.

    Returns:
        The rendered bytes.

    Raises:
        FileNotFoundError: if ``dot`` is not installed.
        RuntimeError: if ``dot`` fails (its message included).
    """
    if not dot_available():
        raise FileNotFoundError(INSTALL_HINT)
    done = subprocess.run(
        ["dot", f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def drawing_scale(dot_text: str) -> float:
    """How much Graphviz scales a picture's text: SVG units per point of font size.

    In a picture that sets ``dpi`` (a slide, `minitf.viz.dot_text.SLIDE_DPI`)
    SVG units are the PNG's pixels: at ``dpi=100`` a picture drawn at full
    size gives 100/72 (a 14 pt label is 19 px high), and one that ``size=``
    shrinks to fit gives less.

    Args:
        dot_text: The picture's DOT source.

    Returns:
        The scale of the SVG's drawing.

    Raises:
        FileNotFoundError: if ``dot`` is not installed.
        RuntimeError: if ``dot`` fails.
    """
    svg = to_format(dot_text, "svg").decode()
    match = re.search(r'class="graph" transform="scale\(([\d.]+)', svg)
    return float(match.group(1)) if match else 1.0


def write(dot_text: str, path: str | Path, formats: Sequence[str] = ("svg", "png")) -> list[Path]:
    """Writes ``<path>.dot`` and, when ``dot`` is installed, ``<path>.<format>`` for each format.

    Args:
        dot_text: The picture's DOT source.
        path: The files' path without suffix (parent directories are created).
        formats: The formats besides DOT text.

    Returns:
        The files written.

    Raises:
        RuntimeError: if ``dot`` fails on a format.
    """
    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    written = [base.with_suffix(".dot")]
    written[0].write_text(dot_text)
    if not dot_available():
        logger.warning(INSTALL_HINT)
        return written
    for fmt in formats:
        target = base.with_suffix("." + fmt)
        target.write_bytes(to_format(dot_text, fmt))
        written.append(target)
    return written


def fit_to_page(svg: str) -> str:
    """Lets an SVG drawing shrink to the width of the page that shows it.

    Graphviz gives the ``<svg>`` element its natural size in points and a
    ``viewBox``; a style of ``max-width: 100%; height: auto`` keeps that size
    where it fits and scales the whole drawing down, text included, where it
    does not, instead of spilling past the page's edge.

    Args:
        svg: SVG text from Graphviz.

    Returns:
        The same SVG with the style on its root element.
    """
    return re.sub(r"<svg\b", '<svg style="max-width: 100%; height: auto"', svg, count=1)


class GraphPicture:
    """DOT text that Jupyter displays as a picture (SVG when ``dot`` is installed).

    Args:
        dot_text: The picture's DOT source.
    """

    def __init__(self, dot_text: str):
        self.source = dot_text

    def _repr_svg_(self) -> str | None:
        """The picture as SVG that shrinks to the width of a notebook's page (never grows).

        Returns:
            SVG text, or None when ``dot`` is not installed (Jupyter then shows the DOT text).
        """
        if not dot_available():
            return None
        return fit_to_page(to_format(self.source, "svg").decode())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = {"text/plain": self.source}
        svg = self._repr_svg_()
        if svg is not None:
            bundle["image/svg+xml"] = svg
        return bundle

    def save(self, path: str | Path, formats: Sequence[str] = ("svg", "png")) -> list[Path]:
        """Writes this picture to files (see `write`).

        Args:
            path: The files' path without suffix (parent directories are created).
            formats: The formats besides DOT text.

        Returns:
            The files written.
        """
        return write(self.source, path, formats)

    def __str__(self) -> str:
        return self.source
