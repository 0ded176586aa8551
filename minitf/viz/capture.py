"""Capturing the graph a TF1 script builds: run it until it opens its first session.

TF1 scripts build their graph, then open a ``tf.Session`` and train. To draw
what a script would run without running it, `graph_of_script` executes the
script and stops it at its first session, keeping that session's graph.
"""

from __future__ import annotations

import runpy
import sys

from minitf.framework import ops
from minitf.runtime.core import session as session_lib


class _GraphCaptured(Exception):
    def __init__(self, graph: ops.Graph):
        super().__init__("graph captured")
        self.graph = graph


def graph_of_script(path: str, args=()) -> ops.Graph:
    """Runs the script at ``path`` with ``args`` until it creates a session; returns its graph.

    Args:
        path: The Python script.
        args: Its command-line arguments.

    Returns:
        The graph of its first session, or, for a script that never opens a
        session, the default graph it left behind.
    """
    original = session_lib.BaseSession.__init__

    def stop_at_first_session(self, target="", graph=None, config=None):
        raise _GraphCaptured(graph if graph is not None else ops.get_default_graph())

    saved_argv = sys.argv
    sys.argv = [path, *args]
    session_lib.BaseSession.__init__ = stop_at_first_session
    try:
        runpy.run_path(path, run_name="__main__")
    except _GraphCaptured as captured:
        return captured.graph
    finally:
        session_lib.BaseSession.__init__ = original
        sys.argv = saved_argv
    return ops.get_default_graph()
