import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _secret_file_of_the_test_run(tmp_path_factory):
    """The tests' processes share a cluster secret file of their own, not the user's."""
    os.environ.setdefault(
        "MINITF_SECRET_FILE", str(tmp_path_factory.mktemp("secret") / "cluster-secret")
    )


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    """Starts every test from an empty default graph, once minitf has one."""
    try:
        import minitf
    except ImportError:
        return
    reset = getattr(minitf, "reset_default_graph", None)
    if reset is not None:
        reset()


@pytest.fixture
def graphviz():
    """Graphviz's ``dot``: ``./run test`` installs it, so a test that needs it fails without it."""
    from minitf.viz import render

    if not render.dot_available():
        pytest.fail(
            "Graphviz's dot is not installed: ./run test installs it "
            "(apt-get install graphviz); these checks must not be skipped"
        )
