"""Loading a script of ``benchmarks/`` as a module, for its tests."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str):
    """Imports ``benchmarks/<name>.py`` as the module ``name``; yields it, then forgets it.

    Args:
        name: The script's name without ``.py``.
    """
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    sys.path.insert(0, str(BENCHMARKS))  # as when it runs: its siblings import by name
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    yield module
    del sys.modules[name]
